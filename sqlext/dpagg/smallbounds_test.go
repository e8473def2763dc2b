package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Accuracy of the clamping bounds chosen on small tables (smallbounds.go).

// releaseChosen runs a release of o over rows with bounds chosen (both
// passes) and seed, and returns its result.
func releaseChosen(t testing.TB, o Options, rows []row, seed uint64) *Result {
	t.Helper()
	_, res := releaseRows(t, o, rows, securerand.NewSeeded(seed), true)
	return res
}

// globalSum is a global SUM with every bound left to choose (the SQL
// defaults: m and the clamping bounds).
func globalSum() Options {
	o := Defaults()
	o.Global = true
	o.MaxRowsPerGroup = 0
	o.Aggregates = []Aggregate{{Kind: Sum, AutoBounds: true}}
	return o
}

// smallTable is a named small table and the truth of its SUM (every row,
// no bounding).
type smallTable struct {
	name  string
	rows  []row
	truth float64
	// bounded is the truth with each user's rows bounded to the
	// small-table fallback m = FallbackMaxRows (m × mean beyond m rows).
	bounded float64
	max     float64 // the largest |value|
}

func newSmallTable(name string, users int, rowsOf func(u int) []float64) smallTable {
	st := smallTable{name: name}
	for u := range users {
		vs := rowsOf(u)
		var sum float64
		for _, v := range vs {
			st.rows = append(st.rows, row{unit: fmt.Sprintf("u%d", u), key: "", values: []Value{Float(v)}})
			sum += v
			st.max = max(st.max, math.Abs(v))
		}
		st.truth += sum
		st.bounded += sum * min(1, float64(FallbackMaxRows)/float64(len(vs)))
	}
	return st
}

// smallTables are the tables of the known problem (docs/accuracy.md): 600
// users with values in {0, 1, 2}; the planner's visits (300 users, g =
// u % 3, two rows each and a third for even users), where the binary
// search released 3.5·10¹³ and a public slack 6 for a SUM of about 340; and
// 500 users with one lognormal value each (skewed).
func smallTables() []smallTable {
	r := rand.New(rand.NewPCG(21, 21))
	logn := make([]float64, 500)
	for i := range logn {
		logn[i] = math.Exp(r.NormFloat64())
	}
	return []smallTable{
		newSmallTable("600 users, values 0-2", 600, func(u int) []float64 { return []float64{float64(u % 3)} }),
		newSmallTable("planner visits, 300 users", 300, func(u int) []float64 {
			if u%2 == 0 {
				return []float64{float64(u % 3), float64(u % 3), float64(u % 3)}
			}
			return []float64{float64(u % 3), float64(u % 3)}
		}),
		newSmallTable("500 users, lognormal", 500, func(u int) []float64 { return []float64{logn[u]} }),
	}
}

// smallBoundsStats releases the global SUM of st over seeds and returns
// the chosen upper bounds and the SUM's relative errors.
func smallBoundsStats(t testing.TB, st smallTable, seeds int) (ups, errs []float64) {
	for s := range seeds {
		res := releaseChosen(t, globalSum(), st.rows, uint64(1000+s))
		ups = append(ups, res.Chosen.Bounds[0][1])
		errs = append(errs, math.Abs(res.Rows[0].Values[0]-st.bounded)/st.bounded)
	}
	return ups, errs
}

// TestSmallTableBoundsAccuracy is the accuracy target of the small-table
// choice: on the tables of the known problem, the chosen upper bound is at
// most 4× the largest |value| in at least 95 % of 200 seeded releases, and
// the SUM's median relative error (against the truth with rows bounded to
// the fallback m = 2, which the release uses on these tables) stays below
// 0.25.
func TestSmallTableBoundsAccuracy(t *testing.T) {
	seeds := iterations(200, 40)
	for _, st := range smallTables() {
		ups, errs := smallBoundsStats(t, st, seeds)
		far := 0
		for _, u := range ups {
			if u > 4*st.max {
				far++
			}
		}
		slices.Sort(errs)
		t.Logf("%s: truth %.1f (%.1f with m = %d), max %.3g; U > 4·max in %d of %d releases; median U %g (range %g…%g); SUM relative error median %.3f, p90 %.3f",
			st.name, st.truth, st.bounded, FallbackMaxRows, st.max, far, seeds, median(ups), slices.Min(ups), slices.Max(ups), errs[len(errs)/2], errs[len(errs)*9/10])
		if float64(far) > 0.05*float64(seeds) {
			t.Errorf("%s: U > 4·max in %d of %d releases", st.name, far, seeds)
		}
		if errs[len(errs)/2] > 0.25 {
			t.Errorf("%s: median relative error %.3f", st.name, errs[len(errs)/2])
		}
	}
}

// TestLargeTableGlobalBounds reports (asserts nothing) the bounds a global
// SUM and AVG choose above min_users, where the binary search runs, and
// their relative errors: the numbers to compare before and after a change
// to the choice (docs/accuracy.md).
func TestLargeTableGlobalBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	logn := make([]float64, 20000)
	for i := range logn {
		logn[i] = math.Exp(r.NormFloat64())
	}
	tables := []smallTable{
		newSmallTable("20,000 users, lognormal", 20000, func(u int) []float64 { return []float64{logn[u]} }),
		newSmallTable("6,000 users, values 0-2", 6000, func(u int) []float64 { return []float64{float64(u % 3)} }),
		newSmallTable("20,000 users, 0-90 and 20 at 1e6", 20000, func(u int) []float64 {
			if u%1000 == 0 {
				return []float64{1e6}
			}
			return []float64{float64(u % 91)}
		}),
	}
	seeds := iterations(20, 4)
	for _, st := range tables {
		for _, k := range []Kind{Sum, Avg} {
			o := globalSum()
			o.Aggregates[0].Kind = k
			truth := st.truth
			if k == Avg {
				truth /= float64(len(st.rows))
			}
			var ups, errs []float64
			for s := range seeds {
				res := releaseChosen(t, o, st.rows, uint64(1000+s))
				ups = append(ups, res.Chosen.Bounds[0][1])
				errs = append(errs, math.Abs(res.Rows[0].Values[0]-truth)/truth)
			}
			t.Logf("%s, %s: median U %g (range %g…%g), median relative error %.4f (max %.4f)",
				st.name, k, median(ups), slices.Min(ups), slices.Max(ups), median(errs), slices.Max(errs))
		}
	}
}

// TestSmallTableGroupByBounds: a GROUP BY SUM over 2,000 users (below its
// min_users, about 9,000), five keys, 1–3 rows per user with lognormal
// values: the chosen upper bound is at most 4× the 99th percentile of the
// users' largest value in at least 90 % of the releases.
func TestSmallTableGroupByBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 23))
	var rows []row
	var maxes []float64
	for u := range 2000 {
		m := 0.0
		for j := range 1 + u%3 {
			v := math.Exp(r.NormFloat64())
			m = max(m, v)
			rows = append(rows, row{unit: fmt.Sprintf("u%d", u), key: fmt.Sprintf("k%d", (u+j)%5), values: []Value{Float(v)}})
		}
		maxes = append(maxes, m)
	}
	slices.Sort(maxes)
	p99 := maxes[len(maxes)*99/100]
	o := globalSum()
	o.Global, o.MaxGroupsContributed = false, 0
	seeds := iterations(100, 20)
	var ups []float64
	far := 0
	for s := range seeds {
		res := releaseChosen(t, o, rows, uint64(2000+s))
		u := res.Chosen.Bounds[0][1]
		ups = append(ups, u)
		if u > 4*p99 {
			far++
		}
	}
	t.Logf("99th percentile of the users' largest value %.3g; U > 4× it in %d of %d releases; median U %g (range %g…%g)",
		p99, far, seeds, median(ups), slices.Min(ups), slices.Max(ups))
	if float64(far) > 0.1*float64(seeds) {
		t.Errorf("U > 4·p99 in %d of %d releases", far, seeds)
	}
}

// cellsOf returns aggregate j's histogram cells after the value pass of
// rows under o.
func cellsOf(t *testing.T, o Options, rows []row, j int) (cells [histogramCells]int, users int) {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, rw := range rows {
		if err := p.AddValues([]byte(rw.unit), rw.values); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range p.valueStats[j] {
		cells[valueCell(v)]++
	}
	return cells, len(p.valueUsers)
}

// TestHistogramSensitivity is the property test of the small-table
// histogram: on random neighbouring databases (one user's rows added, with
// NULL, NaN, ±Inf, 1e300 and values on both sides of zero, global and
// GROUP BY), the vector of cells moves by 1 in exactly one cell (ℓ1 = ℓ2 =
// 1), and the user count of the size test by 1.
func TestHistogramSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for it := range iterations(2000, 300) {
		nAggs := 1 + r.IntN(3)
		o := Defaults()
		o.Global = it%2 == 0
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
		for range nAggs {
			o.Aggregates = append(o.Aggregates, Aggregate{Kind: []Kind{Sum, Avg, VarPop}[r.IntN(3)], AutoBounds: true})
		}
		d, withAdded := neighbourDBs(r, r.IntN(40), 5, nAggs, o.Global)
		for j := range nAggs {
			a, na := cellsOf(t, o, d, j)
			b, nb := cellsOf(t, o, withAdded, j)
			l1 := 0
			for k := range a {
				l1 += max(a[k]-b[k], b[k]-a[k])
			}
			if l1 != 1 || nb-na != 1 {
				t.Fatalf("iteration %d, aggregate %d: the cells moved by %d in ℓ1, the users by %d", it, j, l1, nb-na)
			}
		}
	}
}

// histogramLaw is the exact law of a small-table histogram's outcome for
// cell counts cells at σ_h = sigma: the probability of each top grid
// index (−1: no cell passes) and of lower = −U.
func histogramLaw(cells [histogramCells]int, sigma float64) (top map[int]float64, neg float64) {
	tau := HistogramZ * sigma
	pass := func(n int) float64 { return noise.Phi((float64(n) - tau) / sigma) }
	top = map[int]float64{}
	none := 1.0 // P(no cell of a grid index above i passes)
	for i := len(valueGrid) - 1; i >= 0; i-- {
		q := 1 - (1-pass(cells[i]))*(1-pass(cells[i+len(valueGrid)]))
		top[i] = none * q
		none *= 1 - q
	}
	top[-1] = none
	noNeg := 1.0
	for i := range valueGrid {
		noNeg *= 1 - pass(cells[i+len(valueGrid)])
	}
	return top, 1 - noNeg
}

// TestHistogramLaw is the statistical test of the small-table choice: over
// 20,000 seeded histograms of a table whose cells sit near the threshold,
// the frequency of every outcome (the upper bound, or none, and the sign)
// is within 4.5 standard errors of histogramLaw's formula.
func TestHistogramLaw(t *testing.T) {
	b, err := Calibrate(globalSum())
	if err != nil {
		t.Fatal(err)
	}
	plan := b.Bounds
	sigma := plan.HistogramSigma()
	tau := HistogramZ * sigma
	var vals []userValues
	add := func(i, n int, negative bool) {
		for range n {
			vals = append(vals, userValues{maxAbs: valueGrid[i], negative: negative})
		}
	}
	add(5, int(tau+sigma), false) // passes with probability Φ(1)
	add(12, int(tau), false)      // about ½
	add(20, int(tau-sigma), true) // Φ(−1), negative
	add(30, int(tau-2*sigma), false)
	add(0, 300, false) // always passes: the top is never −1 here
	var cells [histogramCells]int
	for _, v := range vals {
		cells[valueCell(v)]++
	}
	law, negP := histogramLaw(cells, sigma)
	runs := iterations(20000, 4000)
	rng := securerand.NewSeeded(77)
	seen := map[int]int{}
	negs := 0
	for range runs {
		tt := &tester{rng: rng, sigma: plan.TestSigma, left: plan.Tests}
		c := &Chosen{}
		plan.chooseValuesSmall(tt, [][]userValues{vals}, c, 1)
		up := -1 // the grid index of U, −1 for none
		if c.ValueSearch[0] == SearchHistogram {
			up = slices.Index(valueGrid, c.Bounds[0][1])
		}
		seen[up]++
		if c.Bounds[0][0] < 0 {
			negs++
		}
		if tt.cells != histogramCells {
			t.Fatalf("%d cells tested, want %d", tt.cells, histogramCells)
		}
	}
	check := func(what string, n int, p float64) {
		se := math.Sqrt(p * (1 - p) / float64(runs))
		f := float64(n) / float64(runs)
		t.Logf("%s: %.4f, formula %.4f", what, f, p)
		if math.Abs(f-p) > 4.5*se+1e-9 {
			t.Errorf("%s: frequency %.4f, formula %.4f (standard error %.4f)", what, f, p, se)
		}
	}
	// U = valueGrid[min(top+1, 63)].
	upLaw := map[int]float64{-1: law[-1]}
	for i := range valueGrid {
		upLaw[min(i+1, len(valueGrid)-1)] += law[i]
	}
	var falseP float64 // U above every populated cell: an empty cell passed
	falseN := 0
	for i := -1; i < len(valueGrid); i++ {
		if i > 31 {
			falseP += upLaw[i]
			falseN += seen[i]
			continue
		}
		if upLaw[i] > 1e-4 || seen[i] > 0 {
			check(fmt.Sprintf("U index %d", i), seen[i], upLaw[i])
		}
	}
	check("U index above 31 (an empty cell passed)", falseN, falseP)
	check("lower = −U", negs, negP)
}

// TestSmallBoundsBudget: the small-table histograms cost exactly the
// tests they replace (Σ over aggregates of 1/(2σ_h²) = K_s/(2σ_t²)), which
// the plan counts among its tests, so the charge fixed before any row is
// read does not move; a release over a small table spends no more tests
// than planned and its final plan charges what was planned.
func TestSmallBoundsBudget(t *testing.T) {
	var rows []row
	for u := range 400 {
		for j := range 1 + u%3 {
			rows = append(rows, row{unit: fmt.Sprintf("u%d", u), key: fmt.Sprintf("k%d", (u+j)%4), values: []Value{Float(float64(u%7) - 1), Float(float64(u % 5)), Float(1)}})
		}
	}
	cases := map[string]func(o *Options){
		"global SUM":             func(o *Options) { o.Global = true; o.Aggregates = o.Aggregates[:1] },
		"global SUM, AVG, m set": func(o *Options) { o.Global = true; o.MaxRowsPerGroup = 3; o.Aggregates = o.Aggregates[:2] },
		"GROUP BY SUM, AVG, VAR": func(o *Options) {},
		"GROUP BY MEDIAN, Δ0 and m set": func(o *Options) {
			o.MaxGroupsContributed, o.MaxRowsPerGroup = 4, 2
			o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: 0.5, AutoBounds: true}}
		},
	}
	for name, edit := range cases {
		o := Defaults()
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
		o.Aggregates = []Aggregate{{Kind: Sum, AutoBounds: true}, {Kind: Avg, AutoBounds: true}, {Kind: VarPop, AutoBounds: true}}
		edit(&o)
		planned, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		b := planned.Bounds
		hist := float64(len(b.Values)) / (2 * b.HistogramSigma() * b.HistogramSigma())
		want := float64(b.smallTests()) / (2 * b.TestSigma * b.TestSigma)
		if math.Abs(hist-want) > 1e-12*want || 1+b.smallTests() > b.Tests {
			t.Errorf("%s: histograms' ρ %v, the tests they replace %v; %d of %d tests", name, hist, want, 1+b.smallTests(), b.Tests)
		}
		p, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, rw := range rows {
			_ = p.AddValues([]byte(rw.unit), rw.values[:len(o.Aggregates)])
		}
		if err := p.ChooseValueBounds(securerand.NewSeeded(5)); err != nil {
			t.Fatal(err)
		}
		for _, rw := range rows {
			_ = p.Add([]byte(rw.unit), []byte(rw.key), rw.values[:len(o.Aggregates)])
		}
		res, err := p.Release(securerand.NewSeeded(6))
		if err != nil {
			t.Fatal(err)
		}
		if !p.tests.small || !p.tests.countsSpent || p.tests.left < 0 {
			t.Errorf("%s: small %v, histograms %v, %d tests left", name, p.tests.small, p.tests.countsSpent, p.tests.left)
		}
		final := p.Plan()
		if rp, rf := planRho(planned), planRho(final); math.Abs(rp-rf) > 1e-9*rp {
			t.Errorf("%s: aggregates' ρ planned %v, after the choice %v", name, rp, rf)
		}
		t.Logf("%s: %s; histogram σ_h %.1f users (σ_t %.1f), %d of %d tests spent", name, res.Chosen, b.HistogramSigma(), b.TestSigma, b.Tests-p.tests.left, b.Tests)
	}
}

// planRho is a plan's ρ: the tests' and the statistics'.
func planRho(pl *Plan) float64 {
	s := pl.Bounds.Rho
	for _, a := range pl.Aggregates {
		for _, st := range a.Stats {
			s += st.Rho
		}
	}
	return s
}
