package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestSpreadNeighbourSensitivity: on random neighbouring databases the
// three statistics of every variance and standard deviation move by at
// most Units per key on at most Δ0 keys (ℓ1 ≤ Δ0·Units, ℓ2 ≤ √Δ0·Units),
// the sensitivity their noise is calibrated to; per key and global.
func TestSpreadNeighbourSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	iters := iterations(1500, 200)
	for it := range iters {
		o := Defaults()
		o.Global = it%3 == 0
		o.MaxGroupsContributed = 1 + r.IntN(4)
		o.MaxRowsPerGroup = 1 + r.IntN(4)
		lo := (r.Float64() - 0.5) * 100
		hi := lo + 0.5 + r.Float64()*80
		o.Aggregates = []Aggregate{{Kind: VarPop, Lower: lo, Upper: hi}, {Kind: VarSamp, Lower: lo, Upper: hi},
			{Kind: StdDevPop, Lower: -1e6, Upper: 1e6}, {Kind: StdDevSamp, Lower: 0, Upper: 3}}
		rows, withExtra := neighbourDBs(r, 3+r.IntN(25), 2+r.IntN(8), len(o.Aggregates), o.Global)
		seed := r.Uint64()
		pa, pb := feed(t, o, rows), feed(t, o, withExtra)
		a, b := boundFixed(pa, seed), boundFixed(pb, seed)
		d0 := pa.plan.MaxGroupsContributed
		si := 0
		for _, ag := range pa.plan.Aggregates {
			if len(ag.Stats) != 3 {
				t.Fatalf("%s has %d statistics", ag.Kind, len(ag.Stats))
			}
			for _, st := range ag.Stats {
				changed, l1, l2 := moves(t, fmt.Sprintf("iter %d %s %s", it, ag.Kind, st.Name), a, b, si, st.Units)
				if changed > d0 || l1 > float64(d0)*float64(st.Units) || l2 > math.Sqrt(float64(d0))*float64(st.Units)*(1+1e-12) {
					t.Fatalf("iter %d %s %s: %d keys, ℓ1 %v ℓ2 %v, Δ0 %d, Units %d", it, ag.Kind, st.Name, changed, l1, l2, d0, st.Units)
				}
				si++
			}
		}
	}
}

// TestSpreadAccuracy: at a large ε the released variances and standard
// deviations of a known distribution are close to the truth (population
// and sample forms), per key and global.
func TestSpreadAccuracy(t *testing.T) {
	o := Defaults()
	o.Epsilon = 50
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 1, 1
	o.Aggregates = []Aggregate{{Kind: VarPop, Lower: 0, Upper: 10}, {Kind: VarSamp, Lower: 0, Upper: 10},
		{Kind: StdDevPop, Lower: 0, Upper: 10}, {Kind: StdDevSamp, Lower: 0, Upper: 10}}
	// 4,000 users, one row each, values 0..9 uniform: variance 8.25.
	var rows []row
	for u := range 4000 {
		x := Float(float64(u % 10))
		rows = append(rows, row{unit: fmt.Sprintf("u%d", u), key: "k", values: []Value{x, x, x, x}})
	}
	for _, global := range []bool{false, true} {
		o.Global = global
		in := rows
		if global {
			in = globalRows(rows)
		}
		res, err := feed(t, o, in).Release(securerand.NewSeeded(4))
		if err != nil || len(res.Rows) != 1 {
			t.Fatal(res, err)
		}
		v := res.Rows[0].Values
		want := []float64{8.25, 8.25 * 4000 / 3999, math.Sqrt(8.25), math.Sqrt(8.25 * 4000 / 3999)}
		for i, w := range want {
			if math.Abs(v[i]-w) > 0.05*w {
				t.Errorf("global=%v %s = %v, want about %v", global, o.Aggregates[i].Kind, v[i], w)
			}
		}
	}
}
