package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestGlobalNeighbourSensitivity: on many random neighbouring databases
// (D and D plus all rows of one user, interleaved at random), every
// statistic's single total moves by at most its per-key bound Units, the
// sensitivity the global release's noise is calibrated to (Δ0 = 1).
func TestGlobalNeighbourSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	iters := iterations(2000, 200)
	worst := 0.0
	for it := range iters {
		o := Defaults()
		o.Global = true
		o.MaxRowsPerGroup = 1 + r.IntN(5)
		lo := (r.Float64() - 0.5) * 100
		o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountValues}, {Kind: CountUnits},
			{Kind: Sum, Lower: lo, Upper: lo + 1 + r.Float64()*80}, {Kind: Avg, Lower: lo, Upper: lo + 0.5 + r.Float64()*10},
			{Kind: Sum, Lower: 0, Upper: 3}}
		rows, withExtra := neighbourDBs(r, r.IntN(25), 4, len(o.Aggregates), true)
		pa, pb := feed(t, o, rows), feed(t, o, withExtra)
		if pa.plan.MaxGroupsContributed != 1 || !pa.plan.Global {
			t.Fatalf("plan %+v", pa.plan)
		}
		a, b := boundFixed(pa, 1), boundFixed(pb, 1)
		si := 0
		for _, ag := range pa.plan.Aggregates {
			for _, st := range ag.Stats {
				_, l1, _ := moves(t, fmt.Sprintf("iter %d %s %s", it, ag.Kind, st.Name), a, b, si, st.Units)
				if st.L1 != float64(st.Units)*st.Granularity || st.L2 != st.L1 {
					t.Fatalf("iter %d %s %s: sensitivities ℓ1 %v ℓ2 %v for Units %d", it, ag.Kind, st.Name, st.L1, st.L2, st.Units)
				}
				worst = max(worst, l1/float64(st.Units))
				si++
			}
		}
	}
	t.Logf("%d neighbouring pairs; worst |Δ|/Units %.3f", iters, worst)
}

// TestGlobalPlan: a global release gives the aggregates all of ε and δ
// (no selection), and its noise is smaller than the same aggregate's per
// key with selection.
func TestGlobalPlan(t *testing.T) {
	for _, nz := range []Noise{Laplace, Gaussian} {
		o, keyed, g := countPlans(t, nz, 1, func(o *Options) {
			o.Global = true
			o.MaxGroupsContributed = 50 // ignored: a user has one key
		})
		if g.MaxGroupsContributed != 1 || g.AggregatesEpsilon != o.Epsilon || g.Selection.Mechanism != "" {
			t.Errorf("%s: plan %+v", nz, g)
		}
		if nz == Gaussian && g.AggregatesDelta != o.Delta {
			t.Errorf("gaussian: aggregates δ %v, want %v", g.AggregatesDelta, o.Delta)
		}
		if nz == Laplace && g.AggregatesDelta != 0 {
			t.Errorf("laplace: aggregates δ %v, want 0", g.AggregatesDelta)
		}
		if !(g.Aggregates[0].StdDev < keyed.Aggregates[0].StdDev) {
			t.Errorf("%s: global stddev %v not below keyed %v", nz, g.Aggregates[0].StdDev, keyed.Aggregates[0].StdDev)
		}
	}
	o := Defaults()
	o.Global = true
	if _, err := Calibrate(o); err == nil {
		t.Error("a global release without aggregates was accepted")
	}
}

// TestGlobalReleaseOneRow: a global release always has exactly one row,
// even over no input, and refuses a non-empty key; its noise has the
// plan's standard deviation (z-test on the sample variance).
func TestGlobalReleaseOneRow(t *testing.T) {
	o := Defaults()
	o.Global = true
	o.Noise = Gaussian
	o.MaxRowsPerGroup = 3
	o.Aggregates = []Aggregate{{Kind: CountRows}}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add([]byte("u"), []byte("k"), []Value{Null}); err == nil {
		t.Error("a keyed row was accepted by a global release")
	}
	rng := securerand.NewSeeded(5)
	res, err := p.Release(rng)
	if err != nil || len(res.Rows) != 1 || res.Rows[0].Key != "" {
		t.Fatalf("empty input: %+v %v", res, err)
	}
	// 200 users with 1..5 rows: truth Σ min(rows, 3).
	var rows []row
	truth := 0.0
	for u := range 200 {
		n := 1 + u%5
		truth += float64(min(n, 3))
		for range n {
			rows = append(rows, row{unit: fmt.Sprintf("u%d", u), values: []Value{Null}})
		}
	}
	const trials = 4000
	var s2 float64
	sd := 0.0
	for range trials {
		p := feed(t, o, rows)
		sd = p.plan.Aggregates[0].StdDev
		res, err := p.Release(rng)
		if err != nil || len(res.Rows) != 1 {
			t.Fatal(res, err)
		}
		d := res.Rows[0].Values[0] - truth
		s2 += d * d
	}
	v := s2 / trials
	// Var of the sample variance of a near-normal: 2σ⁴/n.
	if z := (v - sd*sd) / (sd * sd * math.Sqrt(2.0/trials)); math.Abs(z) > 4.5 {
		t.Errorf("sample variance %v against the plan's %v (z = %.2f)", v, sd*sd, z)
	}
}
