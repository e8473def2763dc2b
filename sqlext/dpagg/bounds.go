package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Contribution bounds chosen privately.
//
// When the analyst and the configuration leave max_groups_contributed
// (Options.MaxGroupsContributed = 0), max_rows_per_group
// (Options.MaxRowsPerGroup = 0) or the clamping bounds of a SUM or AVG
// (Aggregate.AutoBounds) unset, the release chooses them from the data with
// a share BoundsShare of the aggregates' zCDP budget ρ, in the spirit of
// Google's ApproxBounds: each bound is the smallest value g of a public grid
// that truncates at most the share f = BoundsTruncate of the users, found by
// a binary search of noisy tests
//
//	T_g = N_{>g} − f·N,   "T_g + Z ≤ 0",   Z ~ N(0, σ_t²)
//
// where N_{>g} counts the users whose statistic exceeds g: the number of
// distinct keys (Δ0), the largest number of rows under one key (m), the
// largest |value| (clamping bound U). One user moves N by 1 and N_{>g} by 0
// or 1, so T_g moves by −f or 1 − f: sensitivity ≤ 1. Each test is sampled
// exactly as Bernoulli(Φ(−T_g/σ_t)) (securerand.BernoulliFixed), so no noisy
// count exists. A sign test ("users with a negative value − f·N + Z ≤ 0")
// decides lower = 0 or lower = −U.
//
// Before those, one test "N + Z ≥ MinUsers" (N the users, sensitivity 1)
// decides whether the table is large enough for the searches to tell bounds
// apart (MinUsers = 2σ_t/f: the signal f·N of a test is then at least two
// noise deviations). It runs first (in the value pass, when clamping bounds
// are chosen). Below it, Δ0 and m take the data-independent
// FallbackMaxGroups and FallbackMaxRows without being searched, and each
// clamping bound comes from a thresholded noisy histogram of the users'
// largest |value| that spends those searches' budget (smallbounds.go):
// above the data the binary search's tests pass with probability
// Φ(f·N/σ_t) only, so it drifted up to 2^53.
//
// Privacy. The K tests of a release are Gaussian mechanisms of sensitivity
// 1 chosen adaptively: K/(2σ_t²)-zCDP together (Bun & Steinke 2016, Prop.
// 1.6 and Lemma 2.3), and σ_t is set so that this is BoundsShare·ρ, ρ the
// aggregates' zCDP budget from (ε_a, δ_a). The statistics get the rest,
// (1 − BoundsShare)·ρ, split by weights; key selection is unchanged. The
// noise of every statistic is then calibrated to the chosen bounds, which
// are outputs of the tests: the release is the adaptive composition of the
// tests and of a mechanism that is DP for every value of the bounds, so the
// aggregates' total is still ρ-zCDP and the release (ε, δ)-DP. The cost does
// not depend on the chosen values (TestChosenBoundsCost), so it is charged
// before any row is read, as every release is.

// Parameters of the private choice of bounds.
const (
	// BoundsShare is the share of the aggregates' ρ spent on the tests.
	BoundsShare = 0.1
	// BoundsTruncate is f, the share of users a chosen bound may truncate.
	BoundsTruncate = 0.03
	// FallbackMaxGroups and FallbackMaxRows are Δ0 and m for tables whose
	// noisy user count is below MinUsers.
	FallbackMaxGroups = 8
	FallbackMaxRows   = 2
	// countSearchTests is the binary search over setunion's grid of 32
	// values (1 to 65,536) for Δ0 and m; valueSearchTests over the 64
	// powers of two 2^−10 … 2^53 for a clamping bound, plus its sign test.
	countSearchTests = 5
	valueSearchTests = 6 + 1
)

// valueGrid is the public grid of clamping bounds: 2^−10 … 2^53.
var valueGrid = func() []float64 {
	g := make([]float64, 64)
	for i := range g {
		g[i] = math.Ldexp(1, i-10)
	}
	return g
}()

// BoundsPlan is the private choice of bounds a release will make.
type BoundsPlan struct {
	// Rho is the zCDP cost of all tests; Tests their number K; TestSigma σ_t.
	Rho       float64 `json:"rho"`
	Tests     int     `json:"tests"`
	TestSigma float64 `json:"test_sigma"`
	// Truncate is f; MinUsers the noisy user count below which Δ0 and m
	// take their fallbacks.
	Truncate float64 `json:"truncate"`
	MinUsers float64 `json:"min_users"`
	// What is chosen: Δ0, m, and the clamping bounds of the aggregates
	// listed by index.
	Groups bool `json:"max_groups_contributed,omitempty"`
	// AggregateGroups: the aggregates get their own Δ0 ≤ the selection's,
	// each user keeping its keys with the most rows (topgroups.go).
	AggregateGroups bool `json:"aggregate_groups,omitempty"`
	Rows            bool `json:"max_rows_per_group,omitempty"`
	// ErrorRows: m is then refined to minimise the error (errchoice.go).
	ErrorRows bool  `json:"max_rows_per_group_for_error,omitempty"`
	Values    []int `json:"values,omitempty"`
	// ValueTruncate is the share of users each value search may truncate,
	// per entry of Values: Truncate, or more for a quantile (quantile.go).
	ValueTruncate []float64 `json:"value_truncate,omitempty"`
	// NoiseChoice: the noise family of the statistics is chosen after the
	// bounds (noisechoice.go); LaplaceEpsilon is the statistics' ε if it
	// is Laplace.
	NoiseChoice    bool    `json:"noise_choice,omitempty"`
	LaplaceEpsilon float64 `json:"laplace_epsilon,omitempty"`
	statRho        float64 // the statistics' ρ if Gaussian
	errorValues    int     // the bounds refined for error (errchoice.go)
	// Chosen is set on the plan of a release after the choice.
	Chosen *Chosen `json:"chosen,omitempty"`
}

// Chosen is the outcome of the private choice (a DP output: it may be
// shown to the analyst).
type Chosen struct {
	MaxGroupsContributed int `json:"max_groups_contributed"`
	MaxRowsPerGroup      int `json:"max_rows_per_group"`
	// AggregateGroups is the aggregates' Δ0 (each user's keys with the most
	// rows, topgroups.go), 0 when they use MaxGroupsContributed.
	AggregateGroups int `json:"aggregate_groups,omitempty"`
	// Bounds holds [lower, upper] per aggregate (zero for those not chosen).
	Bounds [][2]float64 `json:"bounds,omitempty"`
	// Fallback reports that the table was too small for the searches of
	// Δ0 and m.
	Fallback bool `json:"fallback,omitempty"`
	// ValueSearch names, per aggregate, what chose its bounds: SearchBinary,
	// SearchHistogram or SearchNone (smallbounds.go); empty if not chosen.
	ValueSearch []string `json:"value_search,omitempty"`

	final bool // every choice is made: the noise family may be chosen (noisechoice.go)
}

// autoBounds returns the bounds the options leave to choose, or nil.
func (o Options) autoBounds() *BoundsPlan {
	b := &BoundsPlan{Groups: o.MaxGroupsContributed == 0 && !o.Global, Rows: o.MaxRowsPerGroup == 0}
	for i, a := range o.Aggregates {
		if a.Kind.clamped() && a.AutoBounds {
			b.Values = append(b.Values, i)
			b.ValueTruncate = append(b.ValueTruncate, valueTruncate(a))
		}
	}
	if !b.Groups && !b.Rows && len(b.Values) == 0 {
		return nil
	}
	b.Tests = 1 + len(b.Values)*valueSearchTests
	if b.Groups {
		b.Tests += countSearchTests
		if len(o.Aggregates) > 0 {
			b.AggregateGroups = true
			b.Tests += TopGroupsSlots
		}
	}
	if b.Rows {
		b.Tests += countSearchTests
		if rowsAggregate(o.Aggregates) >= 0 {
			b.ErrorRows = true
			b.Tests += rowsErrorTests // errchoice.go
		}
	}
	for _, ai := range b.Values {
		if errorValueKind(o.Aggregates[ai].Kind) {
			b.Tests += valueErrorTests
			b.errorValues++
		}
	}
	b.Truncate = BoundsTruncate
	return b
}

// withPlaceholders returns o with every bound left to choose replaced by a
// placeholder (Δ0 = m = 1, bounds [0, 1]) for calibrating the split; the
// real plan is made with the chosen values (Options.chosen).
func (o Options) withPlaceholders() Options {
	o.Aggregates = slices.Clone(o.Aggregates)
	if c := o.chosen; c != nil {
		if o.MaxGroupsContributed == 0 {
			o.MaxGroupsContributed = max(c.MaxGroupsContributed, 1)
		}
		if o.MaxRowsPerGroup == 0 {
			o.MaxRowsPerGroup = max(c.MaxRowsPerGroup, 1)
		}
		for i := range o.Aggregates {
			if o.Aggregates[i].AutoBounds {
				o.Aggregates[i].Lower, o.Aggregates[i].Upper = 0, 1
				if i < len(c.Bounds) && c.Bounds[i][0] < c.Bounds[i][1] {
					o.Aggregates[i].Lower, o.Aggregates[i].Upper = c.Bounds[i][0], c.Bounds[i][1]
				}
			}
		}
		return o
	}
	o.MaxGroupsContributed = max(o.MaxGroupsContributed, 1)
	o.MaxRowsPerGroup = max(o.MaxRowsPerGroup, 1)
	for i := range o.Aggregates {
		if o.Aggregates[i].AutoBounds {
			o.Aggregates[i].Lower, o.Aggregates[i].Upper = 0, 1
		}
	}
	return o
}

// setBoundsBudget gives the tests their share of the aggregates' ρ and
// returns what is left for the statistics.
func (b *BoundsPlan) setBoundsBudget(rho float64) float64 {
	b.Rho = BoundsShare * rho
	b.TestSigma = math.Sqrt(float64(b.Tests) / (2 * b.Rho))
	// MinUsers is set as if only the searches above ran (errorTests, the
	// error-minimising refinements of errchoice.go, leave it as it was: it
	// is a public threshold, and the searches' signal f·N is what it is for).
	searchSigma := math.Sqrt(float64(b.Tests-b.errorTests()) / (2 * b.Rho))
	b.MinUsers = 2 * searchSigma / b.Truncate
	return rho - b.Rho
}

// errorTests is the number of the plan's tests that refine bounds for
// error (errchoice.go).
func (b *BoundsPlan) errorTests() int {
	n := 0
	if b.ErrorRows {
		n += rowsErrorTests
	}
	return n + b.errorValues*valueErrorTests
}

// tester runs the noisy tests of one release, never more than planned.
type tester struct {
	rng   *rand.Rand
	sigma float64
	left  int
	// sized: the size test ran (small: it failed); countsSpent: a
	// small-table histogram spent the budget of the searches of Δ0 and m
	// (smallbounds.go); cells counts the histograms' cell tests.
	sized, small, countsSpent bool
	cells                     int
	passes                    int // tests run by pass
}

// pass samples the test "t + Z ≤ 0", Z ~ N(0, σ_t²), exactly. It reads two
// random words whatever the probability (securerand.BernoulliFixed), so
// the tests' work depends on their number only, not on the data.
func (t *tester) pass(stat float64) bool {
	if t.left <= 0 {
		panic("dpagg: more bound tests than planned")
	}
	t.left--
	t.passes++
	return securerand.BernoulliFixed(t.rng, noise.Phi(-stat/t.sigma))
}

// search returns the smallest grid index whose test passes (binary search,
// ⌈log2 len(grid)⌉ tests); above(i) is N_{>grid[i]}.
func (t *tester) search(n int, f float64, users int, above func(i int) int) int {
	lo, hi := 0, n-1
	for lo < hi {
		mid := (lo + hi) / 2
		if t.pass(float64(above(mid)) - f*float64(users)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// countAbove returns N_{>g} for values sorted ascending.
func countAbove(sorted []int, g int) int { return len(sorted) - sort.SearchInts(sorted, g+1) }

// chooseCounts runs the size test and the searches of Δ0 and m over the
// users' distinct keys and largest rows per key.
func (b *BoundsPlan) chooseCounts(t *tester, keys, rows []int, c *Chosen) {
	users := len(keys)
	small := t.sizeTest(b, users) // "N + Z ≥ MinUsers", sensitivity 1 (smallbounds.go)
	c.Fallback = small && (b.Groups || b.Rows)
	if small && t.countsSpent { // the histograms spent these searches' budget
		if b.Groups {
			c.MaxGroupsContributed = FallbackMaxGroups
		}
		if b.Rows {
			c.MaxRowsPerGroup = FallbackMaxRows
		}
		return
	}
	grid := setunion.MaxItemsGrid()
	if b.Groups {
		slices.Sort(keys)
		i := t.search(len(grid), b.Truncate, users, func(i int) int { return countAbove(keys, grid[i]) })
		c.MaxGroupsContributed = min(grid[i], setunion.AutoMaxItemsCap)
		if small {
			c.MaxGroupsContributed = FallbackMaxGroups
		}
	}
	if b.Rows {
		slices.Sort(rows)
		i := t.search(len(grid), b.Truncate, users, func(i int) int { return countAbove(rows, grid[i]) })
		c.MaxRowsPerGroup = min(grid[i], MaxMaxRowsPerGroup)
		if small {
			c.MaxRowsPerGroup = FallbackMaxRows
		}
	}
}

// userValues is one user's extremes of one aggregate's values.
type userValues struct {
	maxAbs   float64
	negative bool
}

// chooseValues searches each auto-bounded aggregate's clamping bound U over
// the users' largest |value| and decides its sign.
func (b *BoundsPlan) chooseValues(t *tester, users int, vals [][]userValues, c *Chosen, nAggs int) {
	c.Bounds = make([][2]float64, nAggs)
	c.ValueSearch = make([]string, nAggs)
	for j, ai := range b.Values {
		abs := make([]float64, 0, users)
		neg := 0
		for _, v := range vals[j] {
			abs = append(abs, v.maxAbs)
			if v.negative {
				neg++
			}
		}
		slices.Sort(abs)
		above := func(i int) int {
			g := valueGrid[i]
			return len(abs) - sort.Search(len(abs), func(k int) bool { return abs[k] > g })
		}
		f := b.Truncate
		if j < len(b.ValueTruncate) {
			f = b.ValueTruncate[j]
		}
		u := valueGrid[t.search(len(valueGrid), f, users, above)]
		lower := -u
		if t.pass(float64(neg) - f*float64(users)) {
			lower = 0
		}
		c.Bounds[ai] = [2]float64{lower, u}
		c.ValueSearch[ai] = SearchBinary
	}
}

// NeedsValuePass reports whether the release chooses clamping bounds: the
// caller must then feed every row to AddValues, call ChooseValueBounds,
// and only then feed the rows again to Add.
func (p *Pipeline) NeedsValuePass() bool {
	b := p.plan.Bounds
	return b != nil && len(b.Values) > 0 && p.valueStats != nil
}

// AddValues records one row for the choice of clamping bounds (first pass).
func (p *Pipeline) AddValues(unit []byte, values []Value) error {
	if len(values) != len(p.cols) {
		return fmt.Errorf("dpagg: row has %d values for %d aggregates", len(values), len(p.cols))
	}
	if len(unit) == 0 || p.valueStats == nil {
		return nil
	}
	u, ok := p.valueUsers[string(unit)]
	if !ok {
		u = len(p.valueUsers)
		p.valueUsers[string(unit)] = u
		for j := range p.valueStats {
			p.valueStats[j] = append(p.valueStats[j], userValues{})
		}
	}
	for j, ai := range p.plan.Bounds.Values {
		v := values[ai]
		if !v.Valid || math.IsNaN(v.Float) {
			continue
		}
		s := &p.valueStats[j][u]
		s.maxAbs = max(s.maxAbs, math.Abs(v.Float))
		s.negative = s.negative || v.Float < 0
	}
	return nil
}

// ChooseValueBounds runs the choice of the clamping bounds on the first
// pass's rows (with randomness from rng, which the release goes on using)
// and recalibrates the pipeline for them. Call it once, before Add.
func (p *Pipeline) ChooseValueBounds(rng *rand.Rand) error {
	if !p.NeedsValuePass() || p.rows > 0 {
		return fmt.Errorf("dpagg: ChooseValueBounds is for a release that chooses clamping bounds, before any Add")
	}
	b := p.plan.Bounds
	p.tests = &tester{rng: rng, sigma: b.TestSigma, left: b.Tests}
	c := &Chosen{}
	if p.tests.sizeTest(b, len(p.valueUsers)) {
		b.chooseValuesSmall(p.tests, p.valueStats, c, len(p.cols)) // smallbounds.go
	} else {
		b.chooseValues(p.tests, len(p.valueUsers), p.valueStats, c, len(p.cols))
	}
	p.valueStats, p.valueUsers = nil, nil
	p.chosen = c
	p.cands = valueCandidates(p.opts, c) // errchoice.go
	return p.replan(c)
}

// replan recalibrates the pipeline for the bounds chosen so far (the split
// of the budget is unchanged) and rebuilds the columns.
func (p *Pipeline) replan(c *Chosen) error {
	o := p.opts
	o.chosen = c
	plan, err := Calibrate(o)
	if err != nil {
		return fmt.Errorf("dpagg: calibration for the privately chosen bounds: %w", err)
	}
	cols, stride, err := columnsOf(o.withPlaceholders(), plan, p.cands)
	if err != nil {
		return err
	}
	if p.rows > 0 && stride != p.stride {
		return fmt.Errorf("internal error: the row layout changed after rows were added")
	}
	p.plan, p.cols, p.stride = plan, cols, stride
	return nil
}

// chooseCounts runs the choice of Δ0 and m on the grouped pairs, if the
// release makes it, and recalibrates.
func (p *Pipeline) chooseCounts(rng *rand.Rand) error {
	b := p.plan.Bounds
	if b == nil || (!b.Groups && !b.Rows) {
		return nil
	}
	if p.tests == nil {
		p.tests = &tester{rng: rng, sigma: b.TestSigma, left: b.Tests}
	}
	keys := make([]int, len(p.lists))
	rows := make([]int, len(p.lists))
	for u, l := range p.lists {
		keys[u] = len(l) / p.stride
		for i := 0; i < len(l); i += p.stride {
			rows[u] = max(rows[u], int(l[i]&0xffffffff))
		}
	}
	c := p.chosen
	if c == nil {
		c = &Chosen{}
	}
	b.chooseCounts(p.tests, keys, rows, c)
	if b.AggregateGroups {
		if err := p.chooseAggregateGroups(c); err != nil {
			return err
		}
	}
	p.chosen = c
	return p.replan(c)
}

// String describes the choice for a Note to the analyst.
func (c *Chosen) String() string {
	var parts []string
	if c.MaxGroupsContributed > 0 {
		parts = append(parts, fmt.Sprintf("max_groups_contributed=%d", c.MaxGroupsContributed))
	}
	if c.MaxRowsPerGroup > 0 {
		parts = append(parts, fmt.Sprintf("max_rows_per_group=%d", c.MaxRowsPerGroup))
	}
	if c.AggregateGroups > 0 {
		parts = append(parts, fmt.Sprintf("the aggregates count each user's %d keys with the most rows", c.AggregateGroups))
	}
	for i, b := range c.Bounds {
		if b[0] < b[1] {
			parts = append(parts, fmt.Sprintf("aggregate %d bounds [%g, %g]%s", i+1, b[0], b[1], c.searchNote(i)))
		}
	}
	s := strings.Join(parts, ", ")
	if c.Fallback {
		s += fmt.Sprintf(" (too few users for the searches: max_groups_contributed and max_rows_per_group took the fixed %d and %d)", FallbackMaxGroups, FallbackMaxRows)
	}
	return s
}
