package setunion

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

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
// distinct users and items: each user's list is compacted (sorted and
// deduplicated) whenever it has doubled since the last compaction.
//
// A Builder is not safe for concurrent use. Release may be called once.
type Builder struct {
	opts Options
	cal  Calibration

	userIdx   map[string]uint32
	userNames []string
	itemIdx   map[string]uint32
	itemNames []string
	// lists[u] holds user u's entries item<<32 | count; clean[u] is the length
	// of its sorted, deduplicated prefix.
	lists [][]uint64
	clean []int32
	// last[i] remembers where item i was last appended: user last[i].u at
	// index last[i].pos of its list. A repeat of the pair while that entry
	// is still in place (the common case: a user's rows or a row's tokens
	// arrive together) only bumps its count, so duplicates rarely reach the
	// lists and compaction.
	last        []lastSeen
	occurrences int64
}

// NewBuilder validates o and returns an empty builder.
func NewBuilder(o Options) (*Builder, error) {
	cal, err := Calibrate(o)
	if err != nil {
		return nil, err
	}
	return &Builder{
		opts:    o,
		cal:     cal,
		userIdx: make(map[string]uint32),
		itemIdx: make(map[string]uint32),
	}, nil
}

// NewCalibratedBuilder returns a builder that releases with a calibration
// the caller computed instead of one derived from options: the n-gram
// extractor's levels k ≥ 2 use a share σ_k of one Gaussian budget and a
// threshold ρ_k from η (ALGORITHMS.md §5). The caller owns the privacy
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
	return &Builder{
		opts:    Options{Mechanism: cal.Mechanism, MaxItems: cal.MaxItems},
		cal:     cal,
		userIdx: make(map[string]uint32),
		itemIdx: make(map[string]uint32),
	}, nil
}

// Calibration returns the calibration the release will use.
func (b *Builder) Calibration() Calibration { return b.cal }

// Add records that user holds item. An empty user is ignored.
func (b *Builder) Add(user, item string) {
	if user == "" {
		return
	}
	b.add(b.user(user), b.item(item))
}

// AddBytes is Add for byte slices; it copies what it keeps, so the caller may
// reuse the slices.
func (b *Builder) AddBytes(user, item []byte) {
	if len(user) == 0 {
		return
	}
	u, ok := b.userIdx[string(user)] // no allocation for the lookup
	if !ok {
		u = b.user(string(user))
	}
	i, ok := b.itemIdx[string(item)]
	if !ok {
		i = b.item(string(item))
	}
	b.add(u, i)
}

// UserID interns a privacy unit and returns its dense id, for callers that
// add many items of one user (AddID). The empty user is not interned;
// ok is false for it.
func (b *Builder) UserID(user []byte) (id uint32, ok bool) {
	if len(user) == 0 {
		return 0, false
	}
	u, found := b.userIdx[string(user)]
	if !found {
		u = b.user(string(user))
	}
	return u, true
}

// AddID records that the user with id u (from UserID) holds item.
func (b *Builder) AddID(u uint32, item []byte) {
	i, ok := b.itemIdx[string(item)]
	if !ok {
		i = b.item(string(item))
	}
	b.add(u, i)
}

func (b *Builder) user(name string) uint32 {
	b.ensureIndex()
	if u, ok := b.userIdx[name]; ok {
		return u
	}
	u := uint32(len(b.userNames))
	b.userIdx[name] = u
	b.userNames = append(b.userNames, name)
	b.lists = append(b.lists, nil)
	b.clean = append(b.clean, 0)
	return u
}

func (b *Builder) item(name string) uint32 {
	b.ensureIndex()
	if i, ok := b.itemIdx[name]; ok {
		return i
	}
	i := uint32(len(b.itemNames))
	b.itemIdx[name] = i
	b.itemNames = append(b.itemNames, name)
	b.last = append(b.last, lastSeen{u: noUser})
	return i
}

type lastSeen struct {
	u   uint32
	pos int32
}

const noUser = ^uint32(0)

func (b *Builder) add(u, i uint32) {
	b.occurrences++
	l := b.lists[u]
	if ls := b.last[i]; ls.u == u && int(ls.pos) < len(l) && uint32(l[ls.pos]>>32) == i {
		if l[ls.pos]&0xffffffff < 0xffffffff {
			l[ls.pos]++
		}
		return
	}
	l = append(l, uint64(i)<<32|1)
	b.last[i] = lastSeen{u: u, pos: int32(len(l) - 1)}
	if len(l) >= 2*int(b.clean[u])+32 {
		l = compact(l)
		b.clean[u] = int32(len(l))
	}
	b.lists[u] = l
}

// compact sorts a user's entries by item and merges duplicates, summing their
// counts (saturating at 2³²−1).
func compact(l []uint64) []uint64 {
	slices.Sort(l)
	out := l[:0]
	for _, e := range l {
		if n := len(out); n > 0 && out[n-1]>>32 == e>>32 {
			c := out[n-1]&0xffffffff + e&0xffffffff
			out[n-1] = out[n-1]&^0xffffffff | min(c, 0xffffffff)
			continue
		}
		out = append(out, e)
	}
	return slices.Clip(out)
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
// separates the cost of grouping from the cost of the mechanism.
func (b *Builder) Group() Stats {
	var pairs int64
	for u, l := range b.lists {
		if int(b.clean[u]) != len(l) {
			l = compact(l)
			b.lists[u] = l
			b.clean[u] = int32(len(l))
		}
		pairs += int64(len(l))
	}
	return Stats{Occurrences: b.occurrences, Users: len(b.userNames), Pairs: pairs, DistinctItems: len(b.itemNames)}
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

	itemIdx   map[string]uint32
	itemNames []string // to build itemIdx when the builder had none
	weights   []float64
}

// InSupport reports whether item had positive weight in the final histogram
// (for dp_sips, in any round). The n-gram extractor needs supp(H_k) to draw
// spurious k-grams from V_k \ supp(H_k).
func (r *Result) InSupport(item string) bool {
	if r.itemIdx == nil && len(r.itemNames) > 0 {
		r.itemIdx = make(map[string]uint32, len(r.itemNames))
		for i, name := range r.itemNames {
			r.itemIdx[name] = uint32(i)
		}
	}
	i, ok := r.itemIdx[item]
	return ok && r.weights[i] > 0
}

// Release runs the mechanism with randomness from rng (securerand.New() in
// production) and returns the released items. It groups pairs by user, orders
// users by SipHash-2-4 of their id under a fresh 128-bit key drawn from rng
// (ties by id bytes), bounds each user to Δ0 items uniformly without
// replacement, builds the histogram user by user, and releases each item u of
// supp(H) with probability P(H[u] + Z > ρ) by an exact Bernoulli draw.
func (b *Builder) Release(rng *rand.Rand) Result {
	stats := b.Group()
	if b.cal.Auto != nil {
		b.chooseMaxItems(rng)
	}
	key := securerand.Key(rng)
	order := b.userOrder(key)
	n := len(b.itemNames)
	var released []uint32
	var weights []float64
	switch b.cal.Mechanism {
	case DPSIPS:
		released, weights = b.runSIPS(rng, key, order)
	default:
		h := b.histogram(rng, key, order, b.cal.Mechanism, b.cal.Gamma, b.cal.MaxItems, nil)
		weights = h.W
		for i := 0; i < n; i++ {
			if w := h.W[i]; w > 0 && securerand.Bernoulli(rng, b.cal.ReleaseProbability(w)) {
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
		items[k] = b.itemNames[i]
	}
	slices.Sort(items)
	return Result{Items: items, Stats: stats, Support: support, Missing: b.missing(released),
		itemIdx: b.itemIdx, itemNames: b.itemNames, weights: weights}
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
func (b *Builder) missing(released []uint32) Missing {
	in := make([]bool, len(b.itemNames))
	for _, i := range released {
		in[i] = true
	}
	var pairs, lostPairs, occ, lostOcc int64
	for _, l := range b.lists {
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
	return m
}

// userOrder returns user ids in the order the sequential policies process
// them: by keyed hash of the id bytes, ties by the bytes. Parallel mechanisms
// do not depend on the order and get the insertion order.
func (b *Builder) userOrder(key [2]uint64) []uint32 {
	if !b.cal.Mechanism.Sequential() {
		order := make([]uint32, len(b.userNames))
		for i := range order {
			order[i] = uint32(i)
		}
		return order
	}
	return OrderUsers(key, b.userNames)
}

// OrderUsers returns the indexes of names sorted by UserHash under key, ties
// by the names' bytes: the order in which a sequential mechanism processes
// users (ALGORITHMS.md §1, step 2). The n-gram extractor shares it.
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
	stats = b.Group()
	h := b.histogram(rng, key, b.userOrder(key), b.cal.Mechanism, b.cal.Gamma, b.cal.MaxItems, nil)
	return b.itemNames, h.W, stats, nil
}

// histogram builds H with rule m over users in order, skipping items marked in
// exclude (dp_sips removes released items between rounds).
func (b *Builder) histogram(rng *rand.Rand, key [2]uint64, order []uint32, m Mechanism, gamma float64, bound int, exclude []bool) *Histogram {
	h := NewHistogram(m, gamma, len(b.itemNames))
	greedy := m.greedy()
	if greedy {
		h.Tie = make([]uint64, len(b.itemNames))
		for i, name := range b.itemNames {
			h.Tie[i] = UserHash(key, []byte(name))
		}
	}
	var items []uint32
	var prio []float64
	for _, u := range order {
		items = items[:0]
		prio = prio[:0]
		for _, e := range b.lists[u] {
			i := uint32(e >> 32)
			if exclude != nil && exclude[i] {
				continue
			}
			items = append(items, i)
			if greedy {
				if m.publicPriority() {
					f, ok := b.opts.Public[b.itemNames[i]]
					if !ok {
						f = 1
					}
					prio = append(prio, f)
				} else {
					prio = append(prio, float64(e&0xffffffff))
				}
			}
		}
		if m.Bounded() && len(items) > bound {
			if greedy {
				items, prio = topByPriority(items, prio, h.Tie, bound)
			} else {
				items = securerand.SampleInPlace(rng, items, bound)
			}
		}
		h.Update(items, prio)
	}
	return h
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

// runSIPS runs the rounds of dp_sips (DP-SIPS, ALGORITHMS.md §4): round r
// bounds every user's not-yet-released items to Δ0_r, builds a histogram
// with the round's rule (weighted Gaussian; ℓ2-descent over users in keyed
// order for a policy round) and releases with (σ_r, ρ_r); released items are
// removed from every user before the next round. It returns the released ids
// and, per item, the largest weight it had in any round (for Support).
func (b *Builder) runSIPS(rng *rand.Rand, key [2]uint64, order []uint32) ([]uint32, []float64) {
	n := len(b.itemNames)
	done := make([]bool, n)
	seen := make([]float64, n)
	var released []uint32
	for r, rd := range b.cal.Rounds {
		rule, ord := DPSIPS, order
		if rd.Rule == PolicyGaussianL2 {
			rule, ord = PolicyGaussianL2, OrderUsers(key, b.userNames)
		}
		h := b.histogram(rng, key, ord, rule, rd.Gamma, rd.MaxItems, done)
		for i, w := range h.W {
			if w <= 0 {
				continue
			}
			seen[i] = max(seen[i], w)
			if securerand.Bernoulli(rng, b.cal.RoundProbability(r, w)) {
				done[i] = true
				released = append(released, uint32(i))
			}
		}
	}
	return released, seen
}
