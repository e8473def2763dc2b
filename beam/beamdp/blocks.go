package beamdp

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// The parallel mechanisms move users and weights between stages in blocks:
// one element holds many users' deduplicated lists (or many items' partial
// weights), each distinct item spelled once per block and referred to by a
// small index. A runner's cost is per element and per byte it moves, so a
// few large dictionary-encoded elements cost it far less than one element per
// user or per (item, weight) pair: prism spent about 70 % of a run on its
// per-element work with the per-user elements.
//
// The path: rows → userBlocksFn (in-bundle, per user shard) → GroupByKey on
// the user shard → mergeUsersFn (one block per user shard: every user of the
// shard with its distinct items, sorted) → for each round, roundFn (bounds
// users, sums their weights per item within the block) → GroupByKey on the
// item shard → sumReleaseFn (sums an item's partial weights over user shards
// and makes its release decision). A dp_sips round reads the user blocks
// again, joined by user shard with the items released so far (sips.go).
//
// A user is in exactly one user shard (a fixed hash of the privacy unit), so
// grouping by shard and then by user inside the shard groups each user's rows
// exactly as a GroupByKey on users would; an item's weight is the sum over
// user shards of its partial sums, the same sum in another order. The
// release is therefore the per-user pipeline's, element for element: the
// same sampled subsets and draws under a seed, since a user's items are
// sorted and every random choice is keyed by the user or the item as before.

func init() {
	register.DoFn4x0[string, []string, func(int, []byte), func(string, int64)](&userBlocksFn{})
	register.DoFn4x0[int, func(*[]byte) bool, func(int, []byte), func(string, int64)](&mergeUsersFn{})
	register.DoFn4x1[context.Context, int, []byte, func(int, []byte), error](&roundFn{})
	register.DoFn4x1[int, func(*[]byte) bool, func(string), func(string, int64), error](&sumReleaseFn{})
	register.Emitter2[int, []byte]()
	register.Iter1[[]byte]()
}

// DefaultBlocks is the number of user shards (and item shards) of the
// parallel mechanisms' blocks when Config.Blocks is 0: enough for the
// workers of a small cluster to share the grouping and the rounds, few
// enough that prism moves a handful of elements per stage.
const DefaultBlocks = 8

// blockShard returns the shard of a privacy unit or an item among n: a fixed
// (unkeyed) hash, so that every worker of every process agrees. Which shard
// a user lands in changes nothing in the release of a parallel mechanism.
func blockShard(s string, n int) int {
	hi, _ := bits.Mul64(setunion.UserHash([2]uint64{}, []byte(s)), uint64(n))
	return int(hi)
}

// userBlock is the decoded form of a block of users: users[k]'s items are
// dict[ids[off[k]]], …, dict[ids[off[k+1]−1]].
type userBlock struct {
	dict  []string
	users []string
	off   []int
	ids   []uint32
}

// encodeUsers appends the block of users list(0..n−1) to dst: the item
// dictionary (uvarint count, then uvarint length and bytes of each item),
// then each user (uvarint length and bytes, uvarint count of items, the
// items' dictionary indexes as uvarints).
func encodeUsers(dst []byte, dict []string, users []string, lists [][]uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(dict)))
	for _, s := range dict {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(users)))
	for k, u := range users {
		dst = binary.AppendUvarint(dst, uint64(len(u)))
		dst = append(dst, u...)
		dst = binary.AppendUvarint(dst, uint64(len(lists[k])))
		for _, i := range lists[k] {
			dst = binary.AppendUvarint(dst, uint64(i))
		}
	}
	return dst
}

// blockReader decodes the uvarints and strings of a block.
type blockReader struct {
	b   []byte
	err error
}

func (r *blockReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("beamdp: corrupt block")
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *blockReader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("beamdp: corrupt block")
		r.b = nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// decodeUsers decodes a block that encodeUsers wrote.
func decodeUsers(b []byte) (userBlock, error) {
	r := blockReader{b: b}
	var ub userBlock
	nd := r.uvarint()
	if nd > uint64(len(b)) {
		return ub, fmt.Errorf("beamdp: corrupt block")
	}
	ub.dict = make([]string, 0, nd)
	for range nd {
		ub.dict = append(ub.dict, r.string())
	}
	nu := r.uvarint()
	if nu > uint64(len(b)) {
		return ub, fmt.Errorf("beamdp: corrupt block")
	}
	ub.users = make([]string, 0, nu)
	ub.off = make([]int, 1, nu+1)
	for range nu {
		ub.users = append(ub.users, r.string())
		n := r.uvarint()
		for range n {
			i := r.uvarint()
			if i >= nd {
				return ub, fmt.Errorf("beamdp: corrupt block")
			}
			ub.ids = append(ub.ids, uint32(i))
		}
		ub.off = append(ub.off, len(ub.ids))
	}
	return ub, r.err
}

// userBlocksFn drops rows without a privacy unit, counts the (user, item)
// occurrences and collects the bundle's rows per user (each user's items
// deduplicated), emitting them at the end of the bundle, or once it holds
// maxBuffered occurrences, as one block per user shard.
type userBlocksFn struct {
	Blocks int `json:"blocks"`

	occurrences int64
	n           int
	items       map[string]uint32
	dict        []string
	users       map[string][]uint32
}

func (fn *userBlocksFn) ProcessElement(user string, items []string, emit func(int, []byte), stat func(string, int64)) {
	if user == "" || len(items) == 0 {
		return
	}
	if fn.users == nil {
		fn.users = make(map[string][]uint32)
		fn.items = make(map[string]uint32)
	}
	fn.occurrences += int64(len(items))
	l := fn.users[user]
	for _, it := range items {
		i, ok := fn.items[it]
		if !ok {
			i = uint32(len(fn.dict))
			fn.items[it] = i
			fn.dict = append(fn.dict, it)
		}
		l = append(l, i)
	}
	fn.users[user] = l
	if fn.n += len(items); fn.n >= maxBuffered {
		fn.FinishBundle(emit, stat)
	}
}

func (fn *userBlocksFn) FinishBundle(emit func(int, []byte), stat func(string, int64)) {
	if len(fn.users) > 0 {
		flushUsers(fn.Blocks, fn.dict, fn.users, emit)
	}
	clear(fn.users)
	clear(fn.items)
	fn.dict = fn.dict[:0]
	fn.n = 0
	emitStat(stat, statOccurrences, &fn.occurrences)
}

// flushUsers deduplicates each user's item indexes and emits one block per
// user shard that has users, with a dictionary of that shard's items only.
func flushUsers(shards int, dict []string, users map[string][]uint32, emit func(int, []byte)) {
	type part struct {
		users []string
		lists [][]uint32
	}
	parts := make([]part, shards)
	for u, l := range users {
		slices.Sort(l)
		l = slices.Compact(l)
		p := &parts[blockShard(u, shards)]
		p.users = append(p.users, u)
		p.lists = append(p.lists, l)
	}
	local := make([]uint32, len(dict)) // 1 + index in the shard's dictionary; 0: absent
	var sdict []string
	var buf []byte
	for s := range parts {
		p := &parts[s]
		if len(p.users) == 0 {
			continue
		}
		clear(local)
		sdict = sdict[:0]
		for _, l := range p.lists {
			for k, i := range l {
				if local[i] == 0 {
					sdict = append(sdict, dict[i])
					local[i] = uint32(len(sdict))
				}
				l[k] = local[i] - 1
			}
		}
		buf = encodeUsers(buf[:0], sdict, p.users, p.lists)
		emit(s, slices.Clone(buf))
	}
}

// mergeUsersFn merges the blocks of one user shard into one block holding
// each user of the shard once, with the user's distinct items sorted (a
// data-independent order, so that seeded runs repeat), and counts the users
// and distinct (user, item) pairs.
type mergeUsersFn struct{}

func (fn *mergeUsersFn) ProcessElement(shard int, blocks func(*[]byte) bool, emit func(int, []byte), stat func(string, int64)) {
	items := make(map[string]uint32)
	var dict []string
	users := make(map[string][]uint32)
	var b []byte
	for blocks(&b) {
		ub, err := decodeUsers(b)
		if err != nil {
			panic(err) // blocks are written by userBlocksFn: a bug, not bad input
		}
		ids := make([]uint32, len(ub.dict))
		for k, s := range ub.dict {
			i, ok := items[s]
			if !ok {
				i = uint32(len(dict))
				items[s] = i
				dict = append(dict, s)
			}
			ids[k] = i
		}
		for k, u := range ub.users {
			l := users[u]
			for _, i := range ub.ids[ub.off[k]:ub.off[k+1]] {
				l = append(l, ids[i])
			}
			users[u] = l
		}
	}
	// Renumber the dictionary in sorted order, so that sorting a user's
	// indexes sorts their items.
	order := make([]uint32, len(dict))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, c uint32) int { return strings.Compare(dict[a], dict[c]) })
	rank := make([]uint32, len(dict))
	sorted := make([]string, len(dict))
	for r, i := range order {
		rank[i] = uint32(r)
		sorted[r] = dict[i]
	}
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	slices.Sort(names)
	lists := make([][]uint32, len(names))
	var pairs int64
	for k, u := range names {
		l := users[u]
		for j, i := range l {
			l[j] = rank[i]
		}
		slices.Sort(l)
		l = slices.Compact(l)
		lists[k] = l
		pairs += int64(len(l))
	}
	live.users.Add(int64(len(names)))
	stat(statUsers, int64(len(names)))
	stat(statPairs, pairs)
	emit(shard, encodeUsers(nil, sorted, names, lists))
}

// roundFn bounds every user of a block to Δ0 items sampled uniformly without
// replacement (for dp_sips, of the round's bound) and adds the update rule's
// weights of the kept items per item; it emits the block's partial histogram
// as one weights block per item shard. With Dropped every item of the block
// is emitted, with weight 0 if bounding dropped it everywhere, so that the
// release stage can count distinct items.
type roundFn struct {
	Opts    setunion.Options `json:"opts"`
	Round   int              `json:"round"` // dp_sips round, −1 otherwise
	Rand    randConfig       `json:"rand"`
	Dropped bool             `json:"dropped,omitempty"`
	Blocks  int              `json:"blocks"`

	bound int
	rng   *rand.Rand
	h     *setunion.Histogram
}

func (fn *roundFn) Setup() error {
	cal, err := calibrate(fn.Opts)
	if err != nil {
		return err
	}
	fn.bound = cal.MaxItems // every dp_sips round bounds to Δ0 (calibrate)
	fn.rng = securerand.New()
	fn.h = setunion.NewHistogram(fn.Opts.Mechanism, 0, 0)
	return nil
}

func (fn *roundFn) ProcessElement(ctx context.Context, shard int, block []byte, emit func(int, []byte)) error {
	return fn.run(block, nil, emit)
}

// run computes the block's partial histogram, without the items in done.
func (fn *roundFn) run(block []byte, done map[string]bool, emit func(int, []byte)) error {
	ub, err := decodeUsers(block)
	if err != nil {
		return err
	}
	excluded := make([]bool, len(ub.dict))
	if done != nil {
		for i, s := range ub.dict {
			excluded[i] = done[s]
		}
	}
	sums := make([]float64, len(ub.dict))
	seen := make([]bool, len(ub.dict))
	var all, ids []uint32
	for k, u := range ub.users {
		all = all[:0]
		for _, i := range ub.ids[ub.off[k]:ub.off[k+1]] {
			if !excluded[i] {
				all = append(all, i)
			}
		}
		if len(all) == 0 {
			continue
		}
		for _, i := range all {
			seen[i] = true
		}
		kept := all
		if len(all) > fn.bound {
			rng := fn.Rand.forElement(fn.rng, tagBound, fn.Round, u)
			kept = securerand.SampleInPlace(rng, all, fn.bound)
		}
		// The rule's weight for each kept item: ids 0..k−1 of a scratch
		// histogram.
		n := len(kept)
		clear(fn.h.W)
		fn.h.Grow(n)
		ids = ids[:0]
		for i := range n {
			ids = append(ids, uint32(i))
		}
		fn.h.Update(ids, nil)
		for j, i := range kept {
			sums[i] += fn.h.W[j]
		}
	}
	type part struct {
		items   []string
		weights []float64
	}
	parts := make([]part, fn.Blocks)
	for i, s := range ub.dict {
		if !seen[i] || (sums[i] == 0 && !fn.Dropped) {
			continue
		}
		p := &parts[blockShard(s, fn.Blocks)]
		p.items = append(p.items, s)
		p.weights = append(p.weights, sums[i])
	}
	for s, p := range parts {
		if len(p.items) > 0 {
			emit(s, encodeWeights(p.items, p.weights))
		}
	}
	return nil
}

// encodeWeights encodes items with their partial weights: uvarint count,
// then each item's uvarint length and bytes and its weight's 8 bytes.
func encodeWeights(items []string, weights []float64) []byte {
	n := binary.MaxVarintLen64
	for _, s := range items {
		n += binary.MaxVarintLen64 + len(s) + 8
	}
	dst := make([]byte, 0, n)
	dst = binary.AppendUvarint(dst, uint64(len(items)))
	for k, s := range items {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(weights[k]))
	}
	return dst
}

// sumReleaseFn sums the partial weights of the items of one item shard over
// the user shards and makes each item's release decision as releaseFn does:
// an item of weight w > 0 is released with probability P(w + Z > ρ) (for
// dp_sips, the round's ρ_r and σ_r), by one exact Bernoulli draw. It counts
// the released items and, with CountItems, the items it decides on.
type sumReleaseFn struct {
	releaseFn
}

func (fn *sumReleaseFn) ProcessElement(shard int, blocks func(*[]byte) bool, emit func(string), stat func(string, int64)) error {
	sums := make(map[string]float64)
	var b []byte
	for blocks(&b) {
		r := blockReader{b: b}
		n := r.uvarint()
		for range n {
			s := r.string()
			if len(r.b) < 8 {
				return fmt.Errorf("beamdp: corrupt weights block")
			}
			sums[s] += math.Float64frombits(binary.LittleEndian.Uint64(r.b))
			r.b = r.b[8:]
		}
		if r.err != nil {
			return r.err
		}
	}
	for s, w := range sums {
		if err := fn.releaseFn.ProcessElement(s, w, emit, stat); err != nil {
			return err
		}
	}
	return nil // releaseFn.FinishBundle emits the counts
}
