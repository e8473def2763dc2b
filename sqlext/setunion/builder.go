package setunion

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dchest/siphash"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Builder collects (privacy unit, item) pairs for one release. Pairs may
// arrive in any order, a user's rows scattered across the input; duplicates of
// a (user, item) pair count once (their multiplicity is kept only as the
// user's own item count for greedy_frequency). Pairs with an empty privacy
// unit are dropped silently: a count of dropped rows would itself leak.
//
// Memory is proportional to the number of distinct (user, item) pairs plus the
// distinct users and items: each user's list is compacted (its new entries
// sorted once and merged into the sorted, deduplicated rest) whenever it has
// doubled since the last compaction.
//
// Users and items get dense ids in the order of their first occurrence
// (Interner); the release consumes randomness in that order, so a seeded
// release is a function of the sequence of pairs added, whether they arrive
// one by one or in batches (AddBatch).
//
// A Builder is not safe for concurrent use. Release (or ReleaseContext) may
// be called once.
type Builder struct {
	opts Options
	cal  Calibration

	users Interner
	items Interner
	// lists[u] holds user u's entries item<<32 | count; clean[u] is the length
	// of its sorted, deduplicated prefix.
	lists   [][]uint64
	clean   []int32
	scratch []uint64 // compaction's buffer
	// ubuf and ibuf hold Add's strings as bytes.
	ubuf, ibuf []byte
	// batchUsers and batchItems map a batch's ids to the builder's
	// (AddBatch).
	batchUsers, batchItems []uint32
	// last[i] remembers where item i was last appended: user last[i].u at
	// index last[i].pos of its list (add; growLast). A repeat of the pair
	// while that entry is still in place (the common case: a user's rows
	// or a row's tokens arrive together) only bumps its count, so
	// duplicates rarely reach the lists and compaction.
	last        []lastSeen
	occurrences int64
	// view, once NewBatch was called, is the latest View of items, which
	// the goroutines that fill batches read (AddBatch publishes a new one).
	view *atomic.Pointer[View]
	// pend holds the batches added since the last Group, not yet in
	// lists (pending.go).
	pend pending
	// prep, when not nil, is the builder's input (NewPreparedBuilder),
	// shared read-only with other builders: lists is prep's, and users and
	// items stay empty until the builder is changed (own).
	prep *Prepared
	// spare, when not nil, is the weights of a histogram the release no
	// longer reads (an earlier round of dp_sips): the next histogram of
	// the same release clears and reuses it instead of allocating.
	spare []float64
}

// NewBuilder validates o and returns an empty builder.
func NewBuilder(o Options) (*Builder, error) {
	cal, err := Calibrate(o)
	if err != nil {
		return nil, err
	}
	return &Builder{opts: o, cal: cal}, nil
}

// NewCalibratedBuilder returns a builder that releases with a calibration
// the caller computed instead of one derived from options: the n-gram
// extractor's levels k ≥ 2 use a share σ_k of one Gaussian budget and a
// threshold ρ_k from η (docs/privacy.md §8). The caller owns the privacy
// argument for cal; only its shape is checked here.
func NewCalibratedBuilder(cal Calibration) (*Builder, error) {
	if _, err := ParseMechanism(string(cal.Mechanism)); err != nil {
		return nil, err
	}
	if err := cal.Mechanism.Unproven(); err != nil {
		return nil, err
	}
	switch {
	case cal.Noise != cal.Mechanism.Noise():
		return nil, fmt.Errorf("calibration noise %q does not match mechanism %s", cal.Noise, cal.Mechanism)
	case cal.Mechanism == SingleItem || cal.Mechanism.publicPriority() || cal.Auto != nil:
		return nil, fmt.Errorf("mechanism %s cannot be given a custom calibration", cal.Mechanism)
	case cal.Mechanism == DPSIPS && len(cal.Rounds) == 0:
		return nil, fmt.Errorf("a dp_sips calibration needs its rounds (SIPSRounds)")
	case !(cal.Scale > 0) || math.IsInf(cal.Scale, 0) || math.IsNaN(cal.Rho) || math.IsInf(cal.Rho, 0):
		return nil, fmt.Errorf("calibration needs a finite scale > 0 and a finite rho, got scale %v rho %v", cal.Scale, cal.Rho)
	case cal.Mechanism.Bounded() && cal.MaxItems < 1:
		return nil, fmt.Errorf("calibration needs max_items ≥ 1, got %d", cal.MaxItems)
	case cal.Mechanism.HasCutoff() && !(cal.Gamma >= cal.Rho):
		return nil, fmt.Errorf("calibration needs a cutoff gamma ≥ rho, got gamma %v rho %v", cal.Gamma, cal.Rho)
	}
	return &Builder{opts: Options{Mechanism: cal.Mechanism, MaxItems: cal.MaxItems}, cal: cal}, nil
}

// Calibration returns the calibration the release will use.
func (b *Builder) Calibration() Calibration { return b.cal }

// Add records that user holds item. An empty user is ignored.
func (b *Builder) Add(user, item string) {
	// Copy into reused buffers: a []byte conversion would allocate for
	// strings longer than 32 bytes.
	b.ubuf = append(b.ubuf[:0], user...)
	b.ibuf = append(b.ibuf[:0], item...)
	b.AddBytes(b.ubuf, b.ibuf)
}

// AddBytes is Add for byte slices; it copies what it keeps, so the caller may
// reuse the slices.
func (b *Builder) AddBytes(user, item []byte) {
	if len(user) == 0 {
		return
	}
	b.add(b.user(user), b.item(item), 1)
}

// UserID interns a privacy unit and returns its dense id, for callers that
// add many items of one user (AddID). The empty user is not interned;
// ok is false for it.
func (b *Builder) UserID(user []byte) (id uint32, ok bool) {
	if len(user) == 0 {
		return 0, false
	}
	return b.user(user), true
}

// AddID records that the user with id u (from UserID) holds item.
func (b *Builder) AddID(u uint32, item []byte) {
	b.add(u, b.item(item), 1)
}

func (b *Builder) user(name []byte) uint32 {
	b.own()
	u, added := b.users.ID(name)
	if added {
		b.lists = append(b.lists, nil)
		b.clean = append(b.clean, 0)
	}
	return u
}

func (b *Builder) item(name []byte) uint32 {
	b.own()
	i, _ := b.items.ID(name)
	return i
}

// itemTag is item for a name whose hash under b.items' seed has the upper
// 32 bits tag (a batch from NewBatch computed it).
func (b *Builder) itemTag(name []byte, tag uint32) uint32 {
	i, _ := b.items.idHash(name, uint64(tag)<<32)
	return i
}

type lastSeen struct {
	u   uint32
	pos int32
}

const noUser = ^uint32(0)

// growLast gives every item a hint, noUser for those that had none: only
// add reads the hints, so items that only batches added (AddBatch) get
// theirs when add first sees an item beyond them. The capacity at least
// doubles, as for items added one by one.
func (b *Builder) growLast() {
	n := b.items.Len()
	if n > cap(b.last) {
		b.last = append(make([]lastSeen, 0, max(n, 2*cap(b.last))), b.last...)
	}
	for len(b.last) < n {
		b.last = append(b.last, lastSeen{u: noUser})
	}
}

// add records c ≥ 1 occurrences of the pair (u, i).
func (b *Builder) add(u, i, c uint32) {
	b.occurrences += int64(c)
	if int(i) >= len(b.last) {
		b.growLast()
	}
	l := b.lists[u]
	if ls := b.last[i]; ls.u == u && int(ls.pos) < len(l) && uint32(l[ls.pos]>>32) == i {
		l[ls.pos] = addCount(l[ls.pos], uint64(c))
		return
	}
	l = append(l, uint64(i)<<32|uint64(c))
	b.last[i] = lastSeen{u: u, pos: int32(len(l) - 1)}
	b.lists[u] = l
	b.maybeCompact(u)
}

// maybeCompact compacts user u's list when it has doubled since the last
// compaction, which bounds memory by about twice the distinct pairs and
// sorts every entry once.
func (b *Builder) maybeCompact(u uint32) {
	if l := b.lists[u]; len(l) >= 2*int(b.clean[u])+32 {
		l, b.scratch = compact(l, int(b.clean[u]), b.scratch)
		b.lists[u], b.clean[u] = l, int32(len(l))
	}
}

// addCount adds c to the count of entry e, saturating at 2³²−1. Saturating
// sums of non-negative counts do not depend on the order of the terms.
func addCount(e, c uint64) uint64 {
	return e&^0xffffffff | min(e&0xffffffff+c, 0xffffffff)
}

// compact sorts the unsorted tail l[clean:] of a user's entries by item,
// merges it into the sorted, deduplicated prefix l[:clean] and merges
// duplicates, summing their counts (saturating at 2³²−1). Every entry is
// sorted once, in the tail it arrived in; the merge with the prefix is
// linear. scratch is a reusable buffer (returned, perhaps grown).
func compact(l []uint64, clean int, scratch []uint64) ([]uint64, []uint64) {
	tail := l[clean:]
	scratch = sortByItem(tail, scratch)
	tail = dedupSorted(tail)
	if clean == 0 {
		return l[:len(tail)], scratch
	}
	// Merge l[:clean] and the tail backward into l[:clean+len(tail)] from a
	// copy of the tail: the write position never falls below the prefix's
	// next unread entry, since no more entries are written than read.
	scratch = append(scratch[:0], tail...)
	i, j, w := clean-1, len(scratch)-1, clean+len(scratch)
	for j >= 0 {
		w--
		switch {
		case i >= 0 && l[i]>>32 > scratch[j]>>32:
			l[w] = l[i]
			i--
		case i >= 0 && l[i]>>32 == scratch[j]>>32:
			l[w] = addCount(l[i], scratch[j]&0xffffffff)
			i--
			j--
		default:
			l[w] = scratch[j]
			j--
		}
	}
	// The untouched prefix l[:i+1] is in place; close the gap left by merged
	// duplicates.
	n := copy(l[i+1:], l[w:clean+len(scratch)])
	return l[:i+1+n], scratch
}

// dedupSorted merges equal items of sorted entries in place.
func dedupSorted(l []uint64) []uint64 {
	out := l[:0]
	for _, e := range l {
		if n := len(out); n > 0 && out[n-1]>>32 == e>>32 {
			out[n-1] = addCount(out[n-1], e&0xffffffff)
			continue
		}
		out = append(out, e)
	}
	return out
}

// Stats describes the input of a release. None of it is private-safe output:
// it is for the operator who ran a batch job on data they hold, never for an
// analyst of a protected table.
type Stats struct {
	// Occurrences is the number of pairs added with a non-empty privacy
	// unit, duplicates included.
	Occurrences int64 `json:"occurrences"`
	// Users is the number of distinct privacy units.
	Users int `json:"users"`
	// Pairs is the number of distinct (user, item) pairs.
	Pairs int64 `json:"pairs"`
	// DistinctItems is the number of distinct items.
	DistinctItems int `json:"distinct_items"`
}

// Group compacts every user's list so that each holds its distinct items
// once, and returns the input statistics. Release calls it; calling it first
// separates the cost of grouping from the cost of the mechanism. Users'
// lists are independent, so a large input is compacted on up to GOMAXPROCS
// goroutines; the result does not depend on how many.
func (b *Builder) Group() Stats {
	st, _ := b.group(context.Background()) // fails only when ctx is done
	return st
}

// group is Group that stops with ctx's error, checked every checkUsers users
// of each goroutine. Users are compacted one at a time, so a stopped group
// leaves every list either compacted or as it was.
func (b *Builder) group(ctx context.Context) (Stats, error) {
	if b.prep != nil {
		return b.prep.stats, ctx.Err()
	}
	b.flush()
	// The flushes' compaction buffers and counting sort are not needed
	// again (Group's goroutines have their own): let the release not
	// carry them.
	b.pend.scratch = nil
	b.pend.first, b.pend.next, b.pend.order = nil, nil, nil
	var dirty int
	for u, l := range b.lists {
		dirty += len(l) - int(b.clean[u])
	}
	workers := 1
	if dirty >= parallelGroupMin {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers <= 1 {
		for u := range b.lists {
			if u%checkUsers == 0 && ctx.Err() != nil {
				return Stats{}, ctx.Err()
			}
			if int(b.clean[u]) != len(b.lists[u]) {
				b.compactUser(uint32(u), &b.scratch)
			}
		}
	} else {
		// Contiguous ranges of users with about dirty/workers entries to
		// sort each.
		var wg sync.WaitGroup
		start, acc := 0, 0
		for u := range b.lists {
			acc += len(b.lists[u]) - int(b.clean[u])
			if acc >= dirty/workers || u == len(b.lists)-1 {
				wg.Add(1)
				go func(lo, hi int) {
					defer wg.Done()
					var scratch []uint64
					for v := lo; v < hi; v++ {
						if (v-lo)%checkUsers == 0 && ctx.Err() != nil {
							return
						}
						if int(b.clean[v]) != len(b.lists[v]) {
							b.compactUser(uint32(v), &scratch)
						}
					}
				}(start, u+1)
				start, acc = u+1, 0
			}
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return Stats{}, err
		}
	}
	var pairs int64
	for _, l := range b.lists {
		pairs += int64(len(l))
	}
	return Stats{Occurrences: b.occurrences, Users: b.users.Len(), Pairs: pairs, DistinctItems: b.items.Len()}, nil
}

// checkUsers and checkItems are how many users (items) a release processes
// between two looks at its context: enough that the look costs nothing
// measurable, few enough that a cancelled release stops within milliseconds.
const (
	checkUsers = 1024
	checkItems = 1 << 14
)

// parallelGroupMin is the number of entries left to sort from which Group
// uses several goroutines.
const parallelGroupMin = 1 << 16

// compactUser sorts and merges the rest of user u's list.
func (b *Builder) compactUser(u uint32, scratch *[]uint64) {
	var l []uint64
	l, *scratch = compact(b.lists[u], int(b.clean[u]), *scratch)
	b.lists[u], b.clean[u] = l, int32(len(l))
}

// Result is the outcome of a release.
type Result struct {
	// Items are the released items, sorted.
	Items []string
	// Stats describe the input (operator-only; see Stats).
	Stats Stats
	// Support is |supp(H)|, the number of items with positive weight after
	// bounding (operator-only).
	Support int
	// Missing is the missing mass of the release (operator-only; see
	// Missing).
	Missing Missing

	lookup  func(item string) (uint32, bool)
	weights []float64
}

// InSupport reports whether item had positive weight in the final histogram
// (for dp_sips, in any round). The n-gram extractor needs supp(H_k) to draw
// spurious k-grams from V_k \ supp(H_k).
func (r *Result) InSupport(item string) bool {
	if r.lookup == nil {
		return false
	}
	i, ok := r.lookup(item)
	return ok && r.weights[i] > 0
}

// Release runs the mechanism with randomness from rng (securerand.New() in
// production) and returns the released items. It groups pairs by user, orders
// users by SipHash-2-4 of their id under a fresh 128-bit key drawn from rng
// (ties by id bytes), bounds each user to Δ0 items uniformly without
// replacement, builds the histogram user by user, and releases each item u of
// supp(H) with probability P(H[u] + Z > ρ) by an exact Bernoulli draw.
func (b *Builder) Release(rng *rand.Rand) Result {
	res, _ := b.ReleaseContext(context.Background(), rng) // fails only when ctx is done
	return res
}

// ReleaseContext is Release that stops, with ctx's error and no items, once
// ctx is done: it looks at ctx every few thousand users or items of each
// step (grouping, the private choice of Δ0, ordering, every histogram and
// every round of dp_sips, the release draws, the missing mass). Looking at
// ctx consumes no randomness, so when ctx is not done the result is the one
// Release gives with the same rng, seeded or not.
//
// A stopped release has released nothing, but it may have drawn the private
// Δ0 and part of the noise; the builder must not be released again (as
// after Release).
func (b *Builder) ReleaseContext(ctx context.Context, rng *rand.Rand) (Result, error) {
	stats, err := b.group(ctx)
	if err != nil {
		return Result{}, err
	}
	if b.cal.Auto != nil {
		b.chooseMaxItems(rng)
	}
	key := securerand.Key(rng)
	order := b.userOrder(key)
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	n := b.numItems()
	var released []uint32
	var weights []float64
	switch b.cal.Mechanism {
	case DPSIPS:
		if released, weights, err = b.runSIPS(ctx, rng, key, order); err != nil {
			return Result{}, err
		}
	default:
		h, err := b.histogram(ctx, rng, key, order, b.cal.Mechanism, b.cal.Gamma, b.cal.MaxItems, nil)
		if err != nil {
			return Result{}, err
		}
		weights = h.W
		d := b.cal.drawer(0)
		for i := 0; i < n; i++ {
			if i%checkItems == 0 && ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			if w := h.W[i]; w > 0 && d.draw(rng, w) {
				released = append(released, uint32(i))
			}
		}
	}
	support := 0
	for _, w := range weights {
		if w > 0 {
			support++
		}
	}
	items := make([]string, len(released))
	for k, i := range released {
		items[k] = b.itemString(i)
	}
	slices.Sort(items)
	missing, err := b.missing(ctx, released)
	if err != nil {
		return Result{}, err
	}
	var lookup func(string) (uint32, bool)
	if b.prep != nil {
		lookup = b.prep.lookup
	} else {
		lookup = func(item string) (uint32, bool) { return b.items.Lookup([]byte(item)) }
	}
	return Result{Items: items, Stats: stats, Support: support, Missing: missing,
		lookup: lookup, weights: weights}, nil
}

// Missing is the second utility measure of a release, next to the number of
// released items: the share of the input that the release does not cover
// (Dick, Joseph & Raman, ICLR 2026, call it the missing mass). A release that
// wins on count by releasing rare items while losing frequent ones shows a
// larger missing mass. Like Stats it is computed from the raw input and is for
// the operator who holds the data, never for an analyst.
type Missing struct {
	// Pairs is the share of distinct (user, item) pairs whose item was not
	// released: Σ_{u ∉ S} n_u / Σ_u n_u, with n_u the number of users
	// holding item u. This is the user-level measure (each user's item counts
	// once, as in the mechanisms).
	Pairs float64 `json:"missing_mass"`
	// Occurrences is the same share over all occurrences, duplicates
	// included (Stats.Occurrences): token mass for tokenised text.
	Occurrences float64 `json:"missing_occurrences"`
}

// missing computes the missing mass of a release of the item ids released
// from every user's full (unbounded) list.
func (b *Builder) missing(ctx context.Context, released []uint32) (Missing, error) {
	if b.prep != nil {
		return b.prep.missing(released), ctx.Err()
	}
	in := make([]bool, b.items.Len())
	for _, i := range released {
		in[i] = true
	}
	var pairs, lostPairs, occ, lostOcc int64
	for u, l := range b.lists {
		if u%checkUsers == 0 && ctx.Err() != nil {
			return Missing{}, ctx.Err()
		}
		for _, e := range l {
			c := int64(e & 0xffffffff)
			pairs++
			occ += c
			if !in[e>>32] {
				lostPairs++
				lostOcc += c
			}
		}
	}
	var m Missing
	if pairs > 0 {
		m.Pairs = float64(lostPairs) / float64(pairs)
		m.Occurrences = float64(lostOcc) / float64(occ)
	}
	return m, nil
}

// userOrder returns user ids in the order the sequential policies process
// them: by keyed hash of the id bytes, ties by the bytes. Parallel mechanisms
// do not depend on the order and get the insertion order.
func (b *Builder) userOrder(key [2]uint64) []uint32 {
	if !b.cal.Mechanism.Sequential() {
		order := make([]uint32, b.numUsers())
		for i := range order {
			order[i] = uint32(i)
		}
		return order
	}
	return b.orderAll(key)
}

// OrderUsers returns the indexes of names sorted by UserHash under key, ties
// by the names' bytes: the order in which a sequential mechanism processes
// users (docs/privacy.md §1, step 2). The n-gram extractor shares it.
func OrderUsers(key [2]uint64, names []string) []uint32 {
	order := make([]uint32, len(names))
	hs := make([]uint64, len(names))
	for i, name := range names {
		order[i] = uint32(i)
		hs[i] = UserHash(key, []byte(name))
	}
	slices.SortFunc(order, func(a, c uint32) int {
		if x := cmp.Compare(hs[a], hs[c]); x != 0 {
			return x
		}
		return cmp.Compare(names[a], names[c])
	})
	return order
}

// orderUsers is OrderUsers over the n names name(0), …, name(n−1).
func orderUsers(key [2]uint64, n int, name func(uint32) []byte) []uint32 {
	order := make([]uint32, n)
	hs := make([]uint64, n)
	for i := range order {
		order[i] = uint32(i)
		hs[i] = UserHash(key, name(uint32(i)))
	}
	slices.SortFunc(order, func(a, c uint32) int {
		if x := cmp.Compare(hs[a], hs[c]); x != 0 {
			return x
		}
		return bytes.Compare(name(a), name(c))
	})
	return order
}

// UserHash is the keyed hash that orders users for the sequential mechanisms:
// SipHash-2-4 of the privacy unit's bytes under a 128-bit key drawn fresh for
// every release (securerand.Key). It depends on nothing but the user's own id,
// so the position of one user never depends on another user's data. The Beam
// pipeline (package beamdp) also splits users into shards by it.
func UserHash(key [2]uint64, user []byte) uint64 {
	return siphash.Hash(key[0], key[1], user)
}

// Weights builds the histogram H exactly as Release does (users ordered by
// UserHash under key, ties by id; each bounded to Δ0 uniformly with rng; the
// mechanism's update rule) and returns every distinct item of the input with
// its weight, 0 for items that bounding dropped, without releasing anything.
//
// It is for distributed runs that split users into disjoint shards, build one
// histogram per shard and release once from their sum (package beamdp). The
// weights are as sensitive as the data: pass them only to a release decision,
// never to an analyst. dp_sips is refused, since its rounds release between
// histograms. The returned slices are the builder's own; call Weights once,
// instead of Release.
func (b *Builder) Weights(rng *rand.Rand, key [2]uint64) (items []string, weights []float64, stats Stats, err error) {
	if b.cal.Mechanism == DPSIPS {
		return nil, nil, Stats{}, fmt.Errorf("mechanism %s releases between rounds and has no single histogram", DPSIPS)
	}
	if b.cal.Auto != nil {
		return nil, nil, Stats{}, fmt.Errorf("max_items = 0 (chosen privately) needs all users at once; give a fixed max_items for a sharded release")
	}
	b.own()
	stats = b.Group()
	h, _ := b.histogram(context.Background(), rng, key, b.userOrder(key), b.cal.Mechanism, b.cal.Gamma, b.cal.MaxItems, nil)
	return b.items.Strings(), h.W, stats, nil
}

// histogram builds H with rule m over users in order, skipping items marked in
// the bitset exclude (dp_sips removes released items between rounds; nil:
// none). It stops with ctx's error, looked at every checkUsers users.
//
// A user's items are read from the flat item ids of prepared input when
// there are (consecutive in memory, half the bytes of the lists), and
// handed to the update rule without a copy when nothing is excluded or
// sampled; the items, their order and the random draws are those of the
// lists either way.
func (b *Builder) histogram(ctx context.Context, rng *rand.Rand, key [2]uint64, order []uint32, m Mechanism, gamma float64, bound int, exclude []uint64) (*Histogram, error) {
	h := NewHistogram(m, gamma, 0)
	if n := b.numItems(); cap(b.spare) >= n {
		h.W = b.spare[:n]
		clear(h.W)
	} else {
		h.W = make([]float64, n)
	}
	b.spare = nil
	greedy := m.greedy()
	if greedy {
		h.Tie = make([]uint64, b.numItems())
		for i := range h.Tie {
			h.Tie[i] = b.itemHash(key, uint32(i))
		}
	}
	var fl *flatLists
	if b.prep != nil && !greedy {
		fl = b.prep.flat()
	}
	bounded, additive := m.Bounded(), m.additive()
	wt := weightTable(m, bound)
	var items []uint32
	var prio []float64
	for k, u := range order {
		if k%checkUsers == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		items = items[:0]
		prio = prio[:0]
		if fl != nil {
			src := fl.ids[fl.off[u]:fl.off[u+1]]
			switch {
			case exclude == nil && !(bounded && len(src) > bound):
				if additive && len(src) > 0 {
					h.addAll(src, weightFrom(wt, m, len(src))) // Update's additive case
				} else {
					h.Update(src, nil) // the rules without priorities only read items
				}
				continue
			case exclude == nil:
				items = append(items, src...)
			default:
				// Without a branch: about half the pairs belong to the
				// frequent items released in earlier rounds.
				items = slices.Grow(items, len(src))[:len(src)]
				n := 0
				for _, i := range src {
					items[n] = i
					n += int(^exclude[i>>6]>>(i&63)) & 1
				}
				items = items[:n]
			}
			if bounded && len(items) > bound {
				items = securerand.SampleIDs(rng, items, bound)
			}
			if additive && len(items) > 0 {
				h.addAll(items, weightFrom(wt, m, len(items))) // Update's additive case
				continue
			}
			h.Update(items, nil)
			continue
		}
		for _, e := range b.lists[u] {
			i := uint32(e >> 32)
			if exclude != nil && exclude[i>>6]&(1<<(i&63)) != 0 {
				continue
			}
			items = append(items, i)
			if greedy {
				if m.publicPriority() {
					prio = append(prio, b.publicFrequency(i))
				} else {
					prio = append(prio, float64(e&0xffffffff))
				}
			}
		}
		if m.Bounded() && len(items) > bound {
			if greedy {
				items, prio = topByPriority(items, prio, h.Tie, bound)
			} else {
				items = securerand.SampleIDs(rng, items, bound)
			}
		}
		h.Update(items, prio)
	}
	return h, nil
}

// topByPriority keeps the k items of highest priority (ties by the keyed
// hash tie), the bound of the proven greedy rules: it depends on the user's
// own data and the release key only, and keeps exactly the items the greedy
// step would fill first.
func topByPriority(items []uint32, prio []float64, tie []uint64, k int) ([]uint32, []float64) {
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(prio[b], prio[a]); c != 0 {
			return c
		}
		return cmp.Compare(tie[items[a]], tie[items[b]])
	})
	outI := make([]uint32, k)
	outP := make([]float64, k)
	for j, i := range idx[:k] {
		outI[j], outP[j] = items[i], prio[i]
	}
	copy(items, outI)
	copy(prio, outP)
	return items[:k], prio[:k]
}

// runSIPS runs the rounds of dp_sips (DP-SIPS, docs/privacy.md §5): round r
// bounds every user's not-yet-released items to Δ0_r, builds a histogram
// with the round's rule (weighted Gaussian; ℓ2-descent over users in keyed
// order for a policy round) and releases with (σ_r, ρ_r); released items are
// removed from every user before the next round. It returns the released ids
// and, per item, the largest weight it had in any round (for Support).
func (b *Builder) runSIPS(ctx context.Context, rng *rand.Rand, key [2]uint64, order []uint32) ([]uint32, []float64, error) {
	n := b.numItems()
	done := make([]uint64, (n+63)/64) // bitset of released items
	seen := make([]float64, n)
	var released []uint32
	for r, rd := range b.cal.Rounds {
		rule, ord := DPSIPS, order
		if rd.Rule == PolicyGaussianL2 {
			rule, ord = PolicyGaussianL2, b.orderAll(key)
		}
		exclude := done
		if len(released) == 0 {
			exclude = nil
		}
		h, err := b.histogram(ctx, rng, key, ord, rule, rd.Gamma, rd.MaxItems, exclude)
		if err != nil {
			return nil, nil, err
		}
		d := b.cal.drawer(r)
		for i, w := range h.W {
			if i%checkItems == 0 && ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			if w <= 0 {
				continue
			}
			if w > seen[i] { // max(seen[i], w) for w > 0 and seen[i] ≥ 0
				seen[i] = w
			}
			if d.inTail(w) {
				// d.draw written out: the first word decides alone in all
				// but 2^−tailBits of the tail's draws, without a call.
				x := rng.Uint64()
				if x>>(64-tailBits) != 0 {
					continue
				}
				if securerand.BernoulliBelowWord(rng, tailBits, x, d.p(w)) {
					done[i>>6] |= 1 << (i & 63)
					released = append(released, uint32(i))
				}
				continue
			}
			if securerand.Bernoulli(rng, d.p(w)) {
				done[i>>6] |= 1 << (i & 63)
				released = append(released, uint32(i))
			}
		}
		b.spare = h.W // read no more: the next round's histogram
	}
	b.spare = nil
	return released, seen, nil
}
