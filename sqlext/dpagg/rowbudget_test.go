package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// budgetUser draws one user's rows for the row budget's tests: 1 to 15
// keys of nKeys, 1 to 9 rows each (a heavy key now and then), with
// NULL or a value for COUNT(col).
func budgetUser(r *rand.Rand, name string, nKeys int) []row {
	var out []row
	for _, k := range r.Perm(nKeys)[:1+r.IntN(min(nKeys, 15))] {
		n := 1 + r.IntN(3)
		if r.IntN(5) == 0 {
			n += r.IntN(9)
		}
		for range n {
			v := Null
			if r.IntN(3) > 0 {
				v = Value{Valid: true, Float: 1}
			}
			out = append(out, row{unit: name, key: fmt.Sprintf("k%d", k), values: []Value{Null, v}})
		}
	}
	return out
}

// TestRowBudgetNeighbourSensitivity is the property test of rowbudget.go:
// on random neighbouring databases (D and D plus all rows of one user,
// interleaved at random; users with many keys of few rows, where the budget
// reaches past the box's d keys), with COUNT(*) and COUNT(col) counting
// each user's keys with most rows under a budget of d·m rows, every key's
// total moves by at most m and the totals by ‖·‖2 ≤ √d·m, the sensitivity
// the plan's noise is calibrated to; the budget does count more rows than
// the box of d keys on some databases (or it would test nothing); and the
// objective J of the choice of d moves by at most TopGroupsUnits·B per
// grid value.
func TestRowBudgetNeighbourSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	iters := iterations(600, 150)
	beyondBox := 0
	for it := range iters {
		o := Defaults()
		o.MaxGroupsContributed = 1 + r.IntN(6)
		o.MaxRowsPerGroup = 1 + r.IntN(4)
		o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountValues}}
		d := 1 + r.IntN(o.MaxGroupsContributed)
		o.chosen = &Chosen{MaxGroupsContributed: o.MaxGroupsContributed, AggregateGroups: d}
		nKeys := 2 + r.IntN(20)
		var rows []row
		for u := range 3 + r.IntN(20) {
			rows = append(rows, budgetUser(r, fmt.Sprintf("u%d", u), nKeys)...)
		}
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		withAdded := slices.Clone(rows)
		for _, e := range budgetUser(r, "added", nKeys) {
			withAdded = slices.Insert(withAdded, r.IntN(len(withAdded)+1), e)
		}
		seed, tie := r.Uint64(), r.Uint64()
		pa, pb := feed(t, o, rows), feed(t, o, withAdded)
		if !pa.plan.rowBudget() || pa.plan.statGroups() != d {
			t.Fatalf("plan: row budget %v, aggregate Δ0 %d, want a budget of d = %d", pa.plan.rowBudget(), pa.plan.statGroups(), d)
		}
		pa.tieSeed, pb.tieSeed = tie, tie
		a, b := boundFixed(pa, seed), boundFixed(pb, seed)
		m := int64(o.MaxRowsPerGroup)
		si := 0
		for _, ag := range pa.plan.Aggregates {
			for _, st := range ag.Stats {
				if st.Units != m {
					t.Fatalf("%s: units %d, want m = %d", ag.Kind, st.Units, m)
				}
				_, _, l2 := moves(t, fmt.Sprintf("iter %d %s", it, ag.Kind), a, b, si, st.Units)
				if b2 := math.Sqrt(float64(d)) * float64(m); l2 > b2*(1+1e-12) {
					t.Fatalf("iter %d %s: ℓ2 %v > √d·m = %v (d = %d, m = %d)", it, ag.Kind, l2, b2, d, m)
				}
				si++
			}
		}
		// The box would have counted at most min(rows, m) on d keys per user.
		var budget, box int64
		for _, v := range a.totals {
			budget += v[0]
		}
		for _, rs := range userRows(pa) {
			slices.Sort(rs)
			slices.Reverse(rs)
			for _, c := range rs[:min(d, len(rs))] {
				box += min(int64(c), m)
			}
		}
		if budget < box {
			t.Fatalf("iter %d: the budget counted %d rows, fewer than the box's %d", it, budget, box)
		}
		if budget > box {
			beyondBox++
		}
		ja, jb := topGroupsLoss(userRows(pa), o.MaxRowsPerGroup, true), topGroupsLoss(userRows(pb), o.MaxRowsPerGroup, true)
		for i := range ja {
			if x := jb[i] - ja[i]; x < 0 || x > TopGroupsUnits*TopGroupsLossCap {
				t.Fatalf("iter %d: J(%d) moved by %d units", it, topGroupsGrid[i], x)
			}
		}
	}
	if beyondBox < iters/4 {
		t.Errorf("the budget counted more than the box in only %d of %d databases", beyondBox, iters)
	}
}

// TestRowBudgetOnlyCounts: the budget applies only when every aggregate
// counts rows and Δ0_a is chosen; COUNT(DISTINCT unit), sums and a set Δ0
// keep the box.
func TestRowBudgetOnlyCounts(t *testing.T) {
	for _, c := range []struct {
		kinds  []Kind
		chosen bool
		want   bool
	}{
		{[]Kind{CountRows}, true, true},
		{[]Kind{CountRows, CountValues}, true, true},
		{[]Kind{CountRows}, false, false},
		{[]Kind{CountRows, CountUnits}, true, false},
		{[]Kind{CountRows, Sum}, true, false},
	} {
		o := Defaults()
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 3, 2
		for _, k := range c.kinds {
			o.Aggregates = append(o.Aggregates, Aggregate{Kind: k, Lower: 0, Upper: 1})
		}
		if c.chosen {
			o.chosen = &Chosen{MaxGroupsContributed: 3, AggregateGroups: 2}
		}
		p, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.rowBudget(); got != c.want {
			t.Errorf("%v chosen %v: row budget %v, want %v", c.kinds, c.chosen, got, c.want)
		}
	}
}
