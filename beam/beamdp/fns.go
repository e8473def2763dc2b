package beamdp

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dchest/siphash"

	"github.com/dpsql/dpsql/beam/internal/shard"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

func init() {
	register.Function2x2(pairToRow)
	register.DoFn4x1[string, float64, func(string), func(string, int64), error](&releaseFn{})
	register.DoFn4x0[string, []string, func(int, userItems), func(string, int64)](&shardKeyFn{})
	register.DoFn4x1[int, func(*userItems) bool, func(string, float64), func(string, int64), error](&shardFn{})
	register.Emitter1[string]()
	register.Emitter2[string, []string]()
	register.Emitter2[string, float64]()
	register.Emitter2[string, int64]()
	register.Emitter2[int, userItems]()
	register.Iter1[string]()
	register.Iter1[userItems]()
}

// randConfig selects the randomness of a DoFn: crypto/rand per DoFn instance,
// or (Seeded, tests only) a generator derived from the seed and the element.
type randConfig struct {
	Seeded bool   `json:"seeded,omitempty"`
	Seed   uint64 `json:"seed,omitempty"`
}

// Tags that separate the seeded streams of the stages.
const (
	tagBound = iota + 1
	tagRelease
	tagShard
)

// forElement returns the generator for one element: instance in production,
// or in seeded mode a fresh one keyed by (seed, stage tag, round, element).
func (rc randConfig) forElement(instance *rand.Rand, tag, round int, element string) *rand.Rand {
	if !rc.Seeded {
		return instance
	}
	h := siphash.Hash(rc.Seed, uint64(tag)<<32|uint64(uint32(round)), []byte(element))
	return securerand.NewSeeded(h)
}

// pairToRow wraps a (privacy unit, item) pair into a one-item row.
func pairToRow(user, item string) (string, []string) { return user, []string{item} }

// distinctSorted returns the distinct strings of items, sorted, in a new
// slice (items itself belongs to the runner and must not be modified).
func distinctSorted(items []string) []string {
	out := slices.Clone(items)
	slices.Sort(out)
	return slices.Compact(out)
}

// maxBuffered bounds what a DoFn holds for in-bundle combining (strings or
// map entries) before it emits early.
const maxBuffered = 1 << 20

// rowBuffer combines rows of the same user within a bundle before the
// shuffle ("in-mapper combining"): Beam's lifted combiners keep only 2,000
// keys per bundle, far fewer than the users or items of one input file, and
// every element that crosses a shuffle costs the runner more than the work
// of merging it here.
type rowBuffer struct {
	rows map[string][]string
	n    int
}

// add appends items to user's buffer and reports whether the buffer is full.
func (b *rowBuffer) add(user string, items []string) bool {
	if b.rows == nil {
		b.rows = make(map[string][]string)
	}
	b.rows[user] = append(b.rows[user], items...)
	b.n += len(items)
	return b.n >= maxBuffered
}

// flush calls emit for every buffered user and empties the buffer.
func (b *rowBuffer) flush(emit func(user string, items []string)) {
	for u, items := range b.rows {
		emit(u, items)
	}
	clear(b.rows)
	b.n = 0
}

// releaseFn makes the release decision of one item of the summed histogram:
// an item of weight w > 0 is released with probability P(w + Z > ρ) (for
// dp_sips, of the round's ρ_r and σ_r), by one exact Bernoulli draw. It
// counts the released items and, with CountItems, the items it decides on.
type releaseFn struct {
	Opts       setunion.Options `json:"opts"`
	Round      int              `json:"round"`
	Rand       randConfig       `json:"rand"`
	CountItems bool             `json:"count_items,omitempty"`

	cal             setunion.Calibration
	rng             *rand.Rand
	items, released int64
}

func (fn *releaseFn) Setup() error {
	cal, err := calibrate(fn.Opts)
	if err != nil {
		return err
	}
	fn.cal = cal
	fn.rng = securerand.New()
	return nil
}

func (fn *releaseFn) ProcessElement(item string, w float64, emit func(string), stat func(string, int64)) error {
	live.items.Add(1)
	if fn.CountItems {
		fn.items++
	}
	if !(w > 0) {
		return nil // only supp(H) is eligible
	}
	var p float64
	if fn.Round >= 0 {
		p = fn.cal.RoundProbability(fn.Round, w)
	} else {
		p = fn.cal.ReleaseProbability(w)
	}
	if securerand.Bernoulli(fn.Rand.forElement(fn.rng, tagRelease, fn.Round, item), p) {
		fn.released++
		emit(item)
	}
	return nil
}

func (fn *releaseFn) FinishBundle(emit func(string), stat func(string, int64)) {
	emitStat(stat, statDistinctItems, &fn.items)
	emitStat(stat, statReleased, &fn.released)
}

// userItems is one input row routed to a shard (shard.Row: the shard of a
// user and a shard's policy live in beam/internal/shard, where their tests
// run without Beam).
type userItems = shard.Row

// shardKeyFn drops rows without a privacy unit, counts the (user, item)
// occurrences, merges the rows of each user within the bundle and routes them
// to the user's shard.
type shardKeyFn struct {
	Key    [2]uint64 `json:"key"`
	Shards int       `json:"shards"`
	// KeepDuplicates keeps repeated items (greedy_frequency orders a user's
	// items by how often the user holds them).
	KeepDuplicates bool `json:"keep_duplicates,omitempty"`

	occurrences int64
	buf         rowBuffer
}

func (fn *shardKeyFn) ProcessElement(user string, items []string, emit func(int, userItems), stat func(string, int64)) {
	if user == "" || len(items) == 0 {
		return
	}
	fn.occurrences += int64(len(items))
	if fn.buf.add(user, items) {
		fn.FinishBundle(emit, stat)
	}
}

func (fn *shardKeyFn) FinishBundle(emit func(int, userItems), stat func(string, int64)) {
	fn.buf.flush(func(u string, items []string) {
		if !fn.KeepDuplicates {
			items = distinctSorted(items)
		}
		emit(shard.Of(fn.Key, fn.Shards, []byte(u)), userItems{User: u, Items: items})
	})
	emitStat(stat, statOccurrences, &fn.occurrences)
}

// shardFn runs a sequential policy over the users of one shard: a
// setunion.Builder orders them by UserHash under the run's key, bounds them
// and applies the update rule (Builder.Weights); every distinct item of the
// shard is emitted with its weight (0 if bounding dropped it everywhere),
// and the shard's users and distinct (user, item) pairs are counted.
type shardFn struct {
	Opts setunion.Options `json:"opts"`
	Key  [2]uint64        `json:"key"`
	Rand randConfig       `json:"rand"`

	rng *rand.Rand
}

func (fn *shardFn) Setup() error {
	if _, err := calibrate(fn.Opts); err != nil {
		return err
	}
	fn.rng = securerand.New()
	return nil
}

func (fn *shardFn) ProcessElement(shard int, rows func(*userItems) bool, emit func(string, float64), stat func(string, int64)) error {
	return fn.run(shard, rows, fn.Opts, emit, stat)
}

func (fn *shardFn) run(id int, rows func(*userItems) bool, opts setunion.Options, emit func(string, float64), stat func(string, int64)) error {
	rng := fn.Rand.forElement(fn.rng, tagShard, 0, fmt.Sprint(id))
	items, weights, st, err := shard.Weights(opts, fn.Key, rng, rows, fn.Rand.Seeded)
	if err != nil {
		return err
	}
	live.users.Add(int64(st.Users))
	stat(statUsers, int64(st.Users))
	stat(statPairs, st.Pairs)
	for i, it := range items {
		emit(it, weights[i])
	}
	return nil
}
