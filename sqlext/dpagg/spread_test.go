package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestSpreadNeighbourSensitivity: on random neighbouring databases the
// three statistics of every variance and standard deviation move by at
// most Units per key on at most Δ0 keys (ℓ1 ≤ Δ0·Units, ℓ2 ≤ √Δ0·Units),
// the sensitivity their noise is calibrated to; per key and global.
func TestSpreadNeighbourSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	iters := 1500
	if testing.Short() {
		iters = 200
	}
	for it := range iters {
		o := Defaults()
		o.Global = it%3 == 0
		o.MaxGroupsContributed = 1 + r.IntN(4)
		o.MaxRowsPerGroup = 1 + r.IntN(4)
		lo := (r.Float64() - 0.5) * 100
		hi := lo + 0.5 + r.Float64()*80
		o.Aggregates = []Aggregate{{Kind: VarPop, Lower: lo, Upper: hi}, {Kind: VarSamp, Lower: lo, Upper: hi},
			{Kind: StdDevPop, Lower: -1e6, Upper: 1e6}, {Kind: StdDevSamp, Lower: 0, Upper: 3}}
		nKeys := 2 + r.IntN(8)
		var rows []row
		for u := range 3 + r.IntN(25) {
			rows = append(rows, genUser(r, fmt.Sprintf("u%d", u), nKeys, len(o.Aggregates))...)
		}
		extra := genUser(r, "added", nKeys, len(o.Aggregates))
		if o.Global {
			rows, extra = globalRows(rows), globalRows(extra)
		}
		withExtra := slices.Clone(rows)
		for _, e := range extra {
			withExtra = slices.Insert(withExtra, r.IntN(len(withExtra)+1), e)
		}
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
				var l1, l2 float64
				changed := 0
				for key, vb := range b.totals {
					x := vb[si]
					if va := a.totals[key]; va != nil {
						x -= va[si]
					}
					if x == 0 {
						continue
					}
					changed++
					if x < -st.Units || x > st.Units {
						t.Fatalf("iter %d %s %s key %q: moved %d units, sensitivity %d", it, ag.Kind, st.Name, key, x, st.Units)
					}
					l1 += math.Abs(float64(x))
					l2 += float64(x) * float64(x)
				}
				if changed > d0 || l1 > float64(d0)*float64(st.Units) || math.Sqrt(l2) > math.Sqrt(float64(d0))*float64(st.Units)*(1+1e-12) {
					t.Fatalf("iter %d %s %s: %d keys, ℓ1 %v ℓ2 %v, Δ0 %d, Units %d", it, ag.Kind, st.Name, changed, l1, math.Sqrt(l2), d0, st.Units)
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
