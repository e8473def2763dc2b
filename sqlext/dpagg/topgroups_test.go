package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
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

// TestOneKeyPerUserInterval measures target (b) of issue 21: on a table
// where every user has one row under one key (20,000 users, one country
// each among 50), the half-width of COUNT(*)'s 95 % interval with every
// bound chosen privately against the best hand-set bounds (Δ0 = m = 1,
// noise auto, so Laplace at ε_a). The choice finds Δ0 = m = 1 (asserted).
// At the defaults of a basic-composition deployment (NoiseAfterBounds on,
// server/defaults.go) the statistics then take Laplace noise at
// ε_L = ε_a − ε_t (noisechoice.go): ±9 against ±6, the target ×1.5 exactly
// (integer half-widths). At the zCDP ledger's defaults (the option off)
// they stay Gaussian, ×3.17 — and no ρ-zCDP count at that charge can meet
// the target (docs/privacy.md §31), so that is logged, not asserted.
func TestOneKeyPerUserInterval(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	zipf := rand.NewZipf(r, 1.2, 1, 49)
	width := func(o Options, seed uint64) (float64, *Chosen) {
		o.Aggregates = []Aggregate{{Kind: CountRows}}
		p, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		for u := range 20_000 {
			if err := p.Add([]byte(fmt.Sprint(u)), []byte(fmt.Sprintf("c%d", zipf.Uint64())), []Value{Null}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := p.Release(securerand.NewSeeded(seed))
		if err != nil {
			t.Fatal(err)
		}
		return p.Plan().Aggregates[0].Stats[0].HalfWidth95, res.Chosen
	}
	o := Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
	o.NoiseAfterBounds = true
	auto, c := width(o, 1)
	if c == nil || c.MaxGroupsContributed != 1 || c.MaxRowsPerGroup != 1 || c.AggregateGroups != 1 {
		t.Fatalf("chosen %v, want Δ0 = m = 1", c)
	}
	o.NoiseAfterBounds = false
	gauss, _ := width(o, 1)
	o = Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 1, 1
	hand, _ := width(o, 1)
	t.Logf("one row per user: COUNT(*) 95 %% half-width %.0f with bounds chosen privately at a basic ledger's defaults (%s): %.2f× the %.0f of Δ0 = m = 1 set (target ≤ 1.5×); at the zCDP ledger's defaults (Gaussian) %.0f: %.2f×", auto, c, auto/hand, hand, gauss, gauss/hand)
	if auto/hand > 1.5 {
		t.Errorf("interval at a basic ledger's defaults %.2f× the hand-set one, want ≤ 1.5×", auto/hand)
	}
}
