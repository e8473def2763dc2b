package dpagg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Value is one row's value for one aggregate; Valid false is SQL NULL.
type Value struct {
	Float float64
	Valid bool
}

// Float returns a non-NULL Value.
func Float(x float64) Value { return Value{Float: x, Valid: true} }

// Null is the SQL NULL.
var Null = Value{}

// Pipeline computes one release in one pass over (privacy unit, key, values)
// rows. Rows may arrive in any order, a user's rows scattered across the
// input; rows with an empty privacy unit are dropped silently (a count of
// dropped rows would itself leak).
//
// Memory is proportional to the distinct (user, key) pairs plus the distinct
// users and keys: per pair one word of key and row count plus one word per
// COUNT(col) and two per SUM or AVG. Each user's pairs are merged whenever
// its list has doubled, as in setunion.Builder.
//
// A Pipeline is not safe for concurrent use. Release may be called once.
type Pipeline struct {
	plan   *Plan
	cols   []column // one per aggregate
	stride int      // words per (user, key) entry

	userIdx   map[string]uint32
	userNames []string
	keyIdx    map[string]uint32
	keyNames  []string
	keyBytes  [][]byte // keyNames[k] as bytes, for setunion.Builder.AddID
	// lists[u] holds user u's entries, stride words each: word 0 is
	// key<<32 | rows (saturating), then the aggregates' words (see column).
	lists [][]uint64
	clean []int32 // entries in the sorted, merged prefix of lists[u]
	last  []lastSeen
	rows  int64
	pairs int64 // distinct (user, key) pairs, set by group
	done  bool
	tot   totals // the release's pre-noise totals, kept for tests

	order, scratch []uint64 // compaction buffers

	// The private choice of bounds (bounds.go): the options as given, the
	// first pass's per-user extremes of the auto-bounded values, the tests
	// and what they chose.
	opts       Options
	valueStats [][]userValues
	valueUsers map[string]int
	tests      *tester
	chosen     *Chosen
	// cands are the candidate clamping ranges of the error-minimising
	// choice, per aggregate (errchoice.go), set by ChooseValueBounds.
	cands [][]candidate

	// The public key set of a release over public keys (publickeys.go):
	// sorted, and as a set.
	publicKeys []string
	publicSet  map[string]struct{}

	quant   []*quantileCol // per aggregate: a quantile's values (quantile.go), else nil
	qbufs   *samplerBufs   // the quantile sampler's scratch, one per release (quantilesampler.go)
	tieSeed uint64         // orders tied keys in aggregateKeys, drawn per release
	keyTie  []uint64       // tieHash of every key, computed once
	// topScratch is aggregateKeys' records for the top-d sort, reused
	// from user to user within the release (topsort.go).
	topScratch []topEntry
}

// column says where an aggregate keeps its per-pair words: for COUNT(col)
// one word, the non-NULL rows; for SUM and AVG two, the non-NULL rows and
// the exact sum of the clamped values in units of the row grid h.
type column struct {
	kind         Kind
	off          int // first word, 0 if none
	lower, upper float64
	mid          float64 // subtracted from every value: 0 for SUM, the midpoint for AVG and the spreads
	h            float64 // row grid
	h2           float64 // row grid of the squares (spread.go)
	// cands are the clamping bounds whose sums every pair keeps while the
	// error-minimising choice is pending (errchoice.go): word off+1+j·w
	// (and off+2+j·w for a spread) holds candidate j's sum, w = 1 or 2;
	// sel is the candidate the bounds above are. nil: one candidate.
	cands []candidate
	sel   int
}

// candidate is one clamping range of a column with its row grids.
type candidate struct {
	lower, upper, mid, h, h2 float64
}

// words is the number of words per candidate of a SUM, AVG (1) or spread (2).
func (c *column) words() int {
	if c.kind.spread() {
		return 2
	}
	return 1
}

// sumAt and sqAt return the selected candidate's exact sums.
func (c *column) sumAt(e []uint64) int64 { return int64(e[c.off+1+c.sel*c.words()]) }
func (c *column) sqAt(e []uint64) int64  { return int64(e[c.off+2+c.sel*c.words()]) }

// addValue adds mult rows of value v (not NULL, not NaN) to the sums of
// every candidate of e (the non-NULL count is the caller's).
func (c *column) addValue(e []uint64, v float64, mult uint64) {
	if len(c.cands) == 0 {
		c.addCandidate(e[c.off+1:], candidate{c.lower, c.upper, c.mid, c.h, c.h2}, v, mult)
		return
	}
	w := c.words()
	for j, cd := range c.cands {
		c.addCandidate(e[c.off+1+j*w:], cd, v, mult)
	}
}

// addCandidate clamps, centres (AVG) and rounds to the row grid (|x/h| ≤
// 2^30) and adds mult times the result (and its square for a spread).
func (c *column) addCandidate(w []uint64, cd candidate, v float64, mult uint64) {
	x := min(max(v, cd.lower), cd.upper) - cd.mid
	w[0] += mult * uint64(int64(math.RoundToEven(x/cd.h))) // two's complement: adds as int64
	if c.kind.spread() {
		w[1] += mult * uint64(int64(math.RoundToEven(x*x/cd.h2))) // x² ≤ b², so ≤ 2^30 units
	}
}

type lastSeen struct {
	u   uint32
	pos int32
}

const noUser = ^uint32(0)

// New validates o, computes its plan and returns an empty pipeline.
func New(o Options) (*Pipeline, error) {
	plan, err := Calibrate(o)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{plan: plan, opts: o, userIdx: map[string]uint32{}, keyIdx: map[string]uint32{}}
	p.cols, p.stride, err = columnsOf(o.withPlaceholders(), plan, nil)
	if err != nil {
		return nil, err
	}
	if b := plan.Bounds; b != nil && len(b.Values) > 0 {
		p.valueStats = make([][]userValues, len(b.Values))
		p.valueUsers = map[string]int{}
	}
	return p, nil
}

// columnsOf lays out the per-pair words of the aggregates of o (with every
// bound fixed) and plan.
// cands[i], when not empty, are aggregate i's candidate clamping ranges
// (errchoice.go): its pairs keep one sum per candidate, and the plan's
// bounds must be one of them.
func columnsOf(o Options, plan *Plan, cands [][]candidate) ([]column, int, error) {
	var cols []column
	stride := 1
	for i, a := range o.Aggregates {
		c := column{kind: a.Kind, lower: a.Lower, upper: a.Upper}
		if i < len(cands) && len(cands[i]) > 0 {
			c.cands = cands[i]
		}
		n := max(len(c.cands), 1)
		switch a.Kind {
		case CountValues:
			c.off = stride
			stride++
		case Sum, Avg:
			c.off = stride
			stride += 1 + n
			st := plan.Aggregates[i].Stats
			c.h = st[len(st)-1].rowGrid
			if a.Kind == Avg {
				c.mid = a.Lower + (a.Upper-a.Lower)/2
			}
		case VarPop, VarSamp, StdDevPop, StdDevSamp:
			c.off = stride
			stride += 1 + 2*n
			st := plan.Aggregates[i].Stats
			c.h, c.h2 = st[1].rowGrid, st[2].rowGrid
			c.mid = a.Lower + (a.Upper-a.Lower)/2
		}
		if c.cands != nil {
			c.sel = slices.IndexFunc(c.cands, func(cd candidate) bool { return cd.lower == c.lower && cd.upper == c.upper })
			if c.sel < 0 || c.cands[c.sel].h != c.h || c.cands[c.sel].h2 != c.h2 || c.cands[c.sel].mid != c.mid {
				return nil, 0, fmt.Errorf("internal error: aggregate %d's bounds [%g, %g] are not one of its candidates", i+1, c.lower, c.upper)
			}
		}
		cols = append(cols, c)
	}
	return cols, stride, nil
}

// Plan returns the plan the release will use.
func (p *Pipeline) Plan() *Plan { return p.plan }

// Add records one row: its privacy unit, its group key (the SQL side encodes
// multi-column keys, NULL included, into bytes) and one value per aggregate,
// in Options.Aggregates order (the values of COUNT(*) and COUNT(DISTINCT
// unit) are ignored). NULL values are skipped by COUNT(col), SUM and AVG, as
// in SQL; so are NaNs; ±Inf are clamped. Add copies what it keeps.
func (p *Pipeline) Add(unit, key []byte, values []Value) error {
	if p.plan.Global && len(key) != 0 {
		return errors.New("dpagg: a global release takes rows with the empty key only")
	}
	if p.plan.PublicKeys && p.publicSet == nil {
		return errors.New("dpagg: a release over public keys needs SetPublicKeys before Add")
	}
	if len(values) != len(p.cols) {
		return fmt.Errorf("dpagg: row has %d values for %d aggregates", len(values), len(p.cols))
	}
	if p.done {
		return errors.New("dpagg: Add after Release")
	}
	if p.valueStats != nil {
		return errors.New("dpagg: this release chooses clamping bounds: feed the rows to AddValues and call ChooseValueBounds before Add")
	}
	if len(unit) == 0 || !p.publicKey(key) {
		return nil // publickeys.go: a key outside the public set is dropped
	}
	u, ok := p.userIdx[string(unit)]
	if !ok {
		u = uint32(len(p.userNames))
		name := string(unit)
		p.userIdx[name] = u
		p.userNames = append(p.userNames, name)
		p.lists = append(p.lists, nil)
		p.clean = append(p.clean, 0)
	}
	k, ok := p.keyIdx[string(key)]
	if !ok {
		k = uint32(len(p.keyNames))
		name := string(key)
		p.keyIdx[name] = k
		p.keyNames = append(p.keyNames, name)
		p.keyBytes = append(p.keyBytes, []byte(name))
		p.last = append(p.last, lastSeen{u: noUser})
	}
	p.rows++
	e := p.entry(u, k)
	if e[0]&0xffffffff < 0xffffffff {
		e[0]++
	}
	for i, c := range p.cols {
		if c.kind == Quantile {
			p.addQuantile(i, u, k, values[i])
			continue
		}
		if c.off == 0 {
			continue
		}
		v := values[i]
		if !v.Valid || math.IsNaN(v.Float) {
			continue
		}
		e[c.off]++
		if c.kind == CountValues {
			continue
		}
		c.addValue(e, v.Float, 1)
	}
	return nil
}

// entry returns the words of user u's entry for key k, appending a zero
// entry when the last one seen for k is not u's (duplicates are merged by
// compaction).
func (p *Pipeline) entry(u, k uint32) []uint64 {
	l := p.lists[u]
	s := p.stride
	if ls := p.last[k]; ls.u == u && int(ls.pos)*s < len(l) && uint32(l[int(ls.pos)*s]>>32) == k {
		return l[int(ls.pos)*s : int(ls.pos+1)*s]
	}
	pos := len(l) / s
	l = append(l, uint64(k)<<32)
	for range s - 1 {
		l = append(l, 0)
	}
	if n := pos + 1; n >= 2*int(p.clean[u])+32 {
		l = p.compact(l)
		p.clean[u] = int32(len(l) / s)
		p.lists[u] = l
		// The entry moved; find it again (it is unique after compaction).
		i := sort.Search(len(l)/s, func(i int) bool { return uint32(l[i*s]>>32) >= k })
		p.last[k] = lastSeen{u: u, pos: int32(i)}
		return l[i*s : (i+1)*s]
	}
	p.lists[u] = l
	p.last[k] = lastSeen{u: u, pos: int32(pos)}
	return l[pos*s : (pos+1)*s]
}

// compact sorts a user's entries by key and merges duplicates: row counts
// add (saturating at 2^32−1), non-NULL counts and exact sums add. It sorts
// (key, position) words, then gathers the entries through p.scratch.
func (p *Pipeline) compact(l []uint64) []uint64 {
	s := p.stride
	n := len(l) / s
	order := p.order[:0]
	for i := range n {
		order = append(order, l[i*s]>>32<<32|uint64(i))
	}
	slices.Sort(order)
	p.order = order
	out := p.scratch[:0]
	for _, o := range order {
		e := l[int(uint32(o))*s:][:s]
		if m := len(out); m > 0 && out[m-s]>>32 == e[0]>>32 {
			prev := out[m-s : m]
			r := prev[0]&0xffffffff + e[0]&0xffffffff
			prev[0] = prev[0]&^0xffffffff | min(r, 0xffffffff)
			for t := 1; t < s; t++ {
				prev[t] += e[t]
			}
			continue
		}
		out = append(out, e...)
	}
	p.scratch = out
	l = l[:copy(l, out)]
	return l
}

// group compacts every user's list and counts the pairs.
func (p *Pipeline) group() {
	var pairs int64
	for u, l := range p.lists {
		if int(p.clean[u])*p.stride != len(l) {
			l = p.compact(l)
			p.lists[u] = l
			p.clean[u] = int32(len(l) / p.stride)
		}
		pairs += int64(len(l) / p.stride)
	}
	p.pairs = pairs
}

// totals holds, per statistic (in plan order), the exact per-key totals in
// units of the statistic's granularity.
type totals [][]int64

// bound groups the input, keeps for each user the entries that choose
// returns (its argument is the user's entry indexes; it may reorder and must
// return at most Δ0 of them), hands every kept (user, key) pair to emit and
// returns the per-key totals of every statistic over the same pairs, or,
// when the plan has its own AggregateGroups, over the user's keys with the
// most rows (aggregateKeys, ties by p.tieSeed). Each user's contribution to
// each key is a function of that user's own rows only.
func (p *Pipeline) bound(choose func(u uint32, idx []int32) []int32, emit func(u, k uint32)) totals {
	p.group()
	nStats := 0
	for _, a := range p.plan.Aggregates {
		nStats += len(a.Stats)
	}
	tot := make(totals, nStats)
	for i := range tot {
		tot[i] = make([]int64, len(p.keyNames))
	}
	if p.plan.AggregateGroups > 0 {
		p.tieKeys() // from the plan, not on the first user that needs it
	}
	m := uint64(p.plan.MaxRowsPerGroup)
	budget := p.plan.rowBudget()
	var idx []int32
	for u, l := range p.lists {
		s := p.stride
		idx = idx[:0]
		for i := range int32(len(l) / s) {
			idx = append(idx, i)
		}
		kept := choose(uint32(u), idx)
		for _, i := range kept {
			emit(uint32(u), uint32(l[int(i)*s]>>32))
		}
		left := uint64(p.plan.AggregateGroups) * m // the row budget (rowbudget.go)
		switch {
		case budget:
			kept = p.budgetKeys(l, idx, m)
		case p.plan.AggregateGroups > 0:
			kept = p.aggregateKeys(l, idx)
		}
		for _, i := range kept {
			e := l[int(i)*s : int(i+1)*s]
			k := uint32(e[0] >> 32)
			mk := m // the rows the pair may count
			if budget {
				if left == 0 {
					break
				}
				mk = min(e[0]&0xffffffff, m, left)
				left -= mk
			}
			si := 0
			for ai, c := range p.cols {
				stats := p.plan.Aggregates[ai].Stats
				switch c.kind {
				case CountRows:
					tot[si][k] += int64(min(e[0]&0xffffffff, mk))
				case CountUnits:
					tot[si][k]++
				case CountValues:
					tot[si][k] += int64(min(e[c.off], mk))
				case Sum:
					tot[si][k] += sumContribution(e[c.off], c.sumAt(e), m, c.h, &stats[0])
				case Avg:
					nn := e[c.off]
					tot[si][k] += int64(min(nn, m))
					tot[si+1][k] += sumContribution(nn, c.sumAt(e), m, c.h, &stats[1])
				case VarPop, VarSamp, StdDevPop, StdDevSamp:
					nn := e[c.off]
					tot[si][k] += int64(min(nn, m))
					tot[si+1][k] += sumContribution(nn, c.sumAt(e), m, c.h, &stats[1])
					tot[si+2][k] += sumContribution(nn, c.sqAt(e), m, c.h2, &stats[2])
				case Quantile:
					p.keepQuantile(ai, uint32(u), k, uint64(p.plan.Aggregates[ai].MaxRows))
				}
				si += len(stats)
			}
		}
	}
	return tot
}

// sumContribution is one user's contribution to one key's sum, in units of
// the statistic's granularity g: the user's nn non-NULL clamped (and, for
// AVG, centred) values, each rounded to the row grid h, sum to sum·h
// exactly; the contribution is that sum if nn ≤ m, otherwise m times the
// mean — the expected value of the sum over m rows drawn uniformly without
// replacement, with none of its randomness. It is rounded to the nearest unit and clamped to ±Units, so
// the per-key sensitivity is Units whatever floating point does; and it
// depends only on (nn, sum), exact integers of the user's own rows, so not on
// the order in which rows arrive.
func sumContribution(nn uint64, sum int64, m uint64, h float64, s *StatPlan) int64 {
	if nn == 0 {
		return 0
	}
	total := float64(sum) * h
	if nn > m {
		total *= float64(m) / float64(nn)
	}
	x := math.RoundToEven(total / s.Granularity)
	u := float64(s.Units)
	return int64(min(max(x, -u), u))
}

// Row is one released key with its noisy aggregates.
type Row struct {
	Key string
	// Values holds one value per aggregate, in Options.Aggregates order:
	// counts are integers (as float64) clamped at 0; sums are multiples of
	// their granularity, clamped at 0 when lower ≥ 0 (or upper ≤ 0); averages
	// are in [lower, upper]. Clamping is post-processing.
	Values []float64
	// Low and High are each value's 95 % interval (interval.go; NaN when
	// the aggregate has none), post-processing of the same noisy totals.
	Low, High []float64
}

// Result is the outcome of a release.
type Result struct {
	// Rows are the released keys, sorted by key bytes.
	Rows []Row
	// Stats describe the input; they are operator-only (see setunion.Stats),
	// never for an analyst.
	Stats setunion.Stats
	// Chosen holds the privately chosen bounds (nil if none were chosen):
	// a DP output, which may be shown.
	Chosen *Chosen
}

// Release runs the mechanism with randomness from rng (securerand.New() in
// production): it groups rows by user, samples each user's keys down to Δ0
// uniformly without replacement (securerand.SampleInPlace, as
// setunion.Builder does), computes the bounded per-key statistics, selects
// keys with setunion on the same sampled (user, key) pairs, and adds
// independent integer noise to the statistics of the selected keys only.
func (p *Pipeline) Release(rng *rand.Rand) (*Result, error) {
	return p.ReleaseContext(context.Background(), rng)
}

// ReleaseContext is Release, stopped with ctx's error (and nothing
// released) when ctx is done before the release ends; see
// setunion.Builder.ReleaseContext.
func (p *Pipeline) ReleaseContext(ctx context.Context, rng *rand.Rand) (*Result, error) {
	if p.done {
		return nil, errors.New("dpagg: Release called twice")
	}
	p.done = true
	if p.valueStats != nil {
		return nil, errors.New("dpagg: ChooseValueBounds was not called")
	}
	p.group()
	if err := p.chooseCounts(rng); err != nil {
		return nil, err
	}
	if err := p.chooseForError(rng); err != nil { // errchoice.go
		return nil, err
	}
	if err := p.finishChoice(); err != nil { // noisechoice.go
		return nil, err
	}
	if p.plan.Global {
		return p.releaseGlobal(ctx, rng)
	}
	if p.plan.PublicKeys {
		return p.releasePublic(ctx, rng) // publickeys.go
	}
	d0 := p.plan.MaxGroupsContributed
	if p.plan.AggregateGroups > 0 {
		p.tieSeed = rng.Uint64()
	}
	// The kept pairs go to the selection's builder already grouped
	// (keptPairs, grouped.go): the state AddID would build, without
	// interning every pair's key again.
	kept := newKeptPairs(p)
	tot := p.bound(
		func(_ uint32, idx []int32) []int32 { return securerand.SampleInPlace(rng, idx, d0) },
		kept.emit,
	)
	b, err := setunion.NewGroupedBuilder(p.plan.setunionOpts, kept.grouped())
	if err != nil {
		return nil, err
	}
	p.tot = tot
	sel, err := b.ReleaseContext(ctx, rng)
	if err != nil {
		return nil, err
	}
	res := &Result{Stats: sel.Stats, Chosen: p.chosen}
	res.Stats.Occurrences = p.rows
	res.Stats.Users = len(p.userNames)
	res.Stats.DistinctItems = len(p.keyNames)
	res.Stats.Pairs = p.pairs
	res.Rows = make([]Row, 0, len(sel.Items))
	for n, key := range sel.Items {
		if n%64 == 63 { // a quantile's sampler takes about a millisecond per key
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		row, err := p.noisyRow(rng, tot, p.keyIdx[key], true)
		if err != nil {
			return nil, err
		}
		row.Key = key
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// addNoise returns total + Z for one draw Z of the statistic's noise.
func (s *StatPlan) addNoise(rng *rand.Rand, total int64) (int64, error) {
	var z int64
	var err error
	if s.lap != nil {
		z, err = s.lap.Sample(rng)
	} else {
		z, err = s.gau.Sample(rng)
	}
	if err != nil {
		return 0, err
	}
	v := total + z
	if (z > 0 && v < total) || (z < 0 && v > total) {
		return 0, errors.New("dpagg: noisy total overflows int64")
	}
	return v, nil
}

// value turns the aggregate's noisy integer statistics into its released
// value (post-processing only).
func (a *AggregatePlan) value(noisy []int64) float64 {
	switch a.Kind {
	case Sum:
		v := float64(noisy[0]) * a.Stats[0].Granularity
		if a.Lower >= 0 {
			v = max(v, 0)
		} else if a.Upper <= 0 {
			v = min(v, 0)
		}
		return v
	case VarPop, VarSamp, StdDevPop, StdDevSamp:
		return a.spreadValue(noisy) // spread.go
	case Avg:
		// Normalised mean (as Google's dpagg.BoundedMean): midpoint plus the
		// noisy sum of (x − mid) over the noisy count (at least 1), clamped.
		mid := a.Lower + (a.Upper-a.Lower)/2
		count := max(float64(noisy[0]), 1)
		v := mid + float64(noisy[1])*a.Stats[1].Granularity/count
		return min(max(v, a.Lower), a.Upper)
	default:
		return float64(max(noisy[0], 0))
	}
}
