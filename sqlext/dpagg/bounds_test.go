package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// userStats returns, per user of rows, the statistics the private choice of
// bounds tests: distinct keys, largest rows under one key, largest |value|
// of aggregate 0 and whether one is negative.
func userStats(rows []row) (keys, maxRows []int, abs []float64, neg []bool) {
	type st struct {
		keys map[string]int
		abs  float64
		neg  bool
	}
	by := map[string]*st{}
	var order []string
	for _, r := range rows {
		s := by[r.unit]
		if s == nil {
			s = &st{keys: map[string]int{}}
			by[r.unit] = s
			order = append(order, r.unit)
		}
		s.keys[r.key]++
		if v := r.values[0]; v.Valid && !math.IsNaN(v.Float) {
			s.abs = max(s.abs, math.Abs(v.Float))
			s.neg = s.neg || v.Float < 0
		}
	}
	for _, u := range order {
		s := by[u]
		keys = append(keys, len(s.keys))
		m := 0
		for _, n := range s.keys {
			m = max(m, n)
		}
		maxRows = append(maxRows, m)
		abs = append(abs, s.abs)
		neg = append(neg, s.neg)
	}
	return
}

// TestBoundTestSensitivity is the property test of the tests' sensitivity:
// on random neighbouring databases, every test statistic of the private
// choice — N (size test), T_g = N_{>g} − f·N for Δ0 and m over the whole
// grid, for the clamping bound over the value grid, and the sign test —
// moves by at most 1.
func TestBoundTestSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	f := BoundsTruncate
	grid := setunion.MaxItemsGrid()
	for it := range 2000 {
		var rows []row
		for u := range r.IntN(30) {
			rows = append(rows, genUser(r, fmt.Sprintf("u%d", u), 2+r.IntN(10), 1)...)
		}
		extra := genUser(r, "added", 2+r.IntN(10), 1)
		withExtra := append(slices.Clone(rows), extra...)
		ka, ra, aa, na := userStats(rows)
		kb, rb, ab, nb := userStats(withExtra)
		slices.Sort(ka)
		slices.Sort(kb)
		slices.Sort(ra)
		slices.Sort(rb)
		check := func(what string, a, b float64) {
			if math.Abs(a-b) > 1+1e-12 {
				t.Fatalf("iter %d %s: %v → %v", it, what, a, b)
			}
		}
		check("N", float64(len(ka)), float64(len(kb)))
		for _, g := range grid {
			check("Δ0 test", float64(countAbove(ka, g))-f*float64(len(ka)), float64(countAbove(kb, g))-f*float64(len(kb)))
			check("m test", float64(countAbove(ra, g))-f*float64(len(ra)), float64(countAbove(rb, g))-f*float64(len(rb)))
		}
		above := func(abs []float64, g float64) (n int) {
			for _, x := range abs {
				if x > g {
					n++
				}
			}
			return
		}
		for _, g := range valueGrid {
			check("value test", float64(above(aa, g))-f*float64(len(aa)), float64(above(ab, g))-f*float64(len(ab)))
		}
		negs := func(n []bool) (k int) {
			for _, x := range n {
				if x {
					k++
				}
			}
			return
		}
		check("sign test", float64(negs(na))-f*float64(len(na)), float64(negs(nb))-f*float64(len(nb)))
	}
}

// skewedDB: 20,000 users; user u has 1 + u%40 keys among 200 and 1 + u%5
// rows under each; values in [0, 90] with a few users at 1e6.
func skewedDB() []row {
	var rows []row
	for u := range 20000 {
		name := fmt.Sprintf("u%d", u)
		for k := range 1 + u%40 {
			for j := range 1 + u%5 {
				x := float64((u + 7*j) % 91)
				if u%1000 == 0 {
					x = 1e6
				}
				rows = append(rows, row{unit: name, key: fmt.Sprintf("k%d", (u+k*13)%200), values: []Value{Float(x), Float(x), Null}})
			}
		}
	}
	return rows
}

// TestChosenBounds: with every bound left unset, the release chooses Δ0,
// m and [lower, upper] near the 97th percentiles of the users' statistics,
// its cost is what was planned (charged before the data), and the values
// chosen are in the result.
func TestChosenBounds(t *testing.T) {
	o := Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
	o.Aggregates = []Aggregate{{Kind: Sum, AutoBounds: true}, {Kind: Avg, AutoBounds: true}, {Kind: CountRows}}
	planned, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	if planned.Bounds == nil || planned.Bounds.Tests != 1+5+5+TopGroupsSlots+2*7+rowsErrorTests+2*valueErrorTests || planned.Noise != Gaussian {
		t.Fatalf("bounds plan %+v", planned.Bounds)
	}
	rows := skewedDB()
	rng := securerand.NewSeeded(3)
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if !p.NeedsValuePass() {
		t.Fatal("no value pass")
	}
	for _, rw := range rows {
		if err := p.AddValues([]byte(rw.unit), rw.values); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.ChooseValueBounds(rng); err != nil {
		t.Fatal(err)
	}
	for _, rw := range rows {
		if err := p.Add([]byte(rw.unit), []byte(rw.key), rw.values); err != nil {
			t.Fatal(err)
		}
	}
	res, err := p.Release(rng)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Chosen
	t.Logf("chosen: %s; %d keys released", c, len(res.Rows))
	// 97th percentiles: keys 39-40 (grid 45), rows 5 (grid 6), values ≤ 90
	// (grid 128; the 1e6 users are 0.1 %).
	if c.MaxGroupsContributed < 32 || c.MaxGroupsContributed > 64 || c.MaxRowsPerGroup < 4 || c.MaxRowsPerGroup > 8 {
		t.Errorf("chosen counts %s", c)
	}
	for i := range 2 {
		if c.Bounds[i] != [2]float64{0, 128} && c.Bounds[i] != [2]float64{0, 64} {
			t.Errorf("aggregate %d bounds %v", i+1, c.Bounds[i])
		}
	}
	final := p.Plan()
	if final.MaxGroupsContributed != c.MaxGroupsContributed || final.Aggregates[0].Upper != c.Bounds[0][1] {
		t.Errorf("final plan Δ0 %d, sum bounds [%v, %v]", final.MaxGroupsContributed, final.Aggregates[0].Lower, final.Aggregates[0].Upper)
	}
	// The cost does not depend on the chosen values.
	var rp, rf float64
	for _, pl := range []*Plan{planned, final} {
		s := pl.Bounds.Rho
		for _, a := range pl.Aggregates {
			for _, st := range a.Stats {
				s += st.Rho
			}
		}
		if pl == planned {
			rp = s
		} else {
			rf = s
		}
	}
	if rf > planned.Rho*(1+1e-12) || math.Abs(rp-rf) > 1e-9*rp {
		t.Errorf("aggregates' ρ planned %v, after the choice %v (budget %v)", rp, rf, planned.Rho)
	}
}

// TestChosenBoundsSmallTable: below MinUsers the counts take their
// data-independent fallbacks (with high probability).
func TestChosenBoundsSmallTable(t *testing.T) {
	o := Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
	o.Aggregates = []Aggregate{{Kind: CountRows}}
	var rows []row
	for u := range 300 {
		for k := range 1 + u%7 {
			rows = append(rows, row{unit: fmt.Sprintf("u%d", u), key: fmt.Sprintf("k%d", k), values: []Value{Null}})
		}
	}
	p := feed(t, o, rows)
	if p.plan.Bounds.MinUsers < 1000 {
		t.Fatalf("MinUsers %v", p.plan.Bounds.MinUsers)
	}
	res, err := p.Release(securerand.NewSeeded(9))
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Chosen; !c.Fallback || c.MaxGroupsContributed != FallbackMaxGroups || c.MaxRowsPerGroup != FallbackMaxRows {
		t.Errorf("chosen %+v", c)
	}
}

// TestAutoBoundsLaplaceRefused: Laplace noise needs every bound given.
func TestAutoBoundsLaplaceRefused(t *testing.T) {
	o := Defaults()
	o.MaxRowsPerGroup = 0
	o.Noise = Laplace
	o.Aggregates = []Aggregate{{Kind: CountRows}}
	if _, err := Calibrate(o); err == nil {
		t.Error("Laplace with a bound left to choose was accepted")
	}
}
