package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopGroupsNeighbourSensitivity is the property test of topgroups.go:
// on random neighbouring databases (D and D plus all rows of one user,
// interleaved at random), with the aggregates counting each user's d keys
// with the most rows (d below the selection's Δ0 or above it), every
// statistic's totals move on at most d keys, by at most Units each, so by
// ‖·‖2 ≤ √d·Units, the sensitivity the noise is calibrated to
// (Plan.statGroups); and the objective J of the noisy argmin moves by at
// most TopGroupsUnits·TopGroupsLossCap per grid value.
func TestTopGroupsNeighbourSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	iters := iterations(600, 150)
	for it := range iters {
		o := Defaults()
		o.MaxGroupsContributed = 1 + r.IntN(4)
		o.MaxRowsPerGroup = 1 + r.IntN(3)
		lo := (r.Float64() - 0.5) * 100
		o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountValues}, {Kind: CountUnits},
			{Kind: Sum, Lower: lo, Upper: lo + 1 + r.Float64()*80}, {Kind: Avg, Lower: lo, Upper: lo + 0.5 + r.Float64()*10},
			{Kind: VarPop, Lower: lo, Upper: lo + 3}}
		d := 1 + r.IntN(5)
		o.chosen = &Chosen{MaxGroupsContributed: o.MaxGroupsContributed, AggregateGroups: d}
		rows, withExtra := neighbourDBs(r, 3+r.IntN(25), 2+r.IntN(8), len(o.Aggregates), false)
		seed, tie := r.Uint64(), r.Uint64()
		pa, pb := feed(t, o, rows), feed(t, o, withExtra)
		if pa.plan.AggregateGroups != d || pa.plan.statGroups() != d {
			t.Fatalf("plan's aggregate Δ0 %d, want %d", pa.plan.AggregateGroups, d)
		}
		pa.tieSeed, pb.tieSeed = tie, tie
		a, b := boundFixed(pa, seed), boundFixed(pb, seed)
		si := 0
		for _, ag := range pa.plan.Aggregates {
			for _, st := range ag.Stats {
				changed, _, l2 := moves(t, fmt.Sprintf("iter %d %s %s", it, ag.Kind, st.Name), a, b, si, st.Units)
				if b2 := math.Sqrt(float64(d)) * float64(st.Units); changed > d || l2 > b2*(1+1e-12) {
					t.Fatalf("iter %d %s %s: %d keys moved (d = %d), ℓ2 %v > %v", it, ag.Kind, st.Name, changed, d, l2, b2)
				}
				if st.L2 != math.Sqrt(float64(d))*float64(st.Units)*st.Granularity {
					t.Fatalf("plan's ℓ2 sensitivity %v is not for d = %d", st.L2, d)
				}
				si++
			}
		}
		ja, jb := topGroupsLoss(userRows(pa), o.MaxRowsPerGroup, false), topGroupsLoss(userRows(pb), o.MaxRowsPerGroup, false)
		for i := range ja {
			if x := jb[i] - ja[i]; x < 0 || x > TopGroupsUnits*TopGroupsLossCap {
				t.Fatalf("iter %d: J(%d) moved by %d units", it, topGroupsGrid[i], x)
			}
		}
	}
}

// TestTopKeys: the kept keys are those with the most rows, ties by the
// tie order.
func TestTopKeys(t *testing.T) {
	rows := []uint64{3, 1, 5, 3, 1}
	tie := []uint64{9, 1, 0, 2, 0}
	got := topKeys([]int32{0, 1, 2, 3, 4}, 3,
		func(i int32) uint64 { return rows[i] }, func(i int32) uint64 { return tie[i] })
	if !slices.Equal(got, []int32{2, 3, 0}) {
		t.Errorf("kept %v, want [2 3 0]", got)
	}
}
