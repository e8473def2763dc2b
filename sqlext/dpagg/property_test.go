package dpagg

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dchest/siphash"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// row is one input row of a generated database.
type row struct {
	unit, key string
	values    []Value
}

// genValue draws a value that exercises NULL, NaN, ±Inf, huge values and
// values on both sides of the bounds.
func genValue(r *rand.Rand) Value {
	switch r.IntN(12) {
	case 0:
		return Null
	case 1:
		return Float(math.NaN())
	case 2:
		return Float(math.Inf(1 - 2*r.IntN(2)))
	case 3:
		return Float((r.Float64() - 0.5) * 1e300)
	case 4:
		return Float(float64(r.IntN(7) - 3))
	default:
		return Float((r.Float64() - 0.3) * 120)
	}
}

// genUser draws the rows of one user over nKeys keys.
func genUser(r *rand.Rand, name string, nKeys, nAggs int) []row {
	n := 1 + r.IntN(12)
	// Users favour a few keys, so that rows repeat under one key.
	own := r.Perm(nKeys)[:1+r.IntN(min(nKeys, 6))]
	out := make([]row, n)
	for i := range out {
		vals := make([]Value, nAggs)
		for j := range vals {
			vals[j] = genValue(r)
		}
		out[i] = row{unit: name, key: fmt.Sprintf("k%d", own[r.IntN(len(own))]), values: vals}
	}
	return out
}

// feed builds a pipeline over rows.
func feed(t *testing.T, o Options, rows []row) *Pipeline {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, rw := range rows {
		if err := p.Add([]byte(rw.unit), []byte(rw.key), rw.values); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// boundResult is the pre-noise output of bound, indexed by key name: the
// totals of every statistic and each user's kept keys.
type boundResult struct {
	totals map[string][]int64 // key -> per-statistic totals
	kept   map[string][]string
}

// boundFixed runs bound with a sampling that depends only on the user's own
// data (keep the Δ0 keys of smallest keyed hash of user and key), so that
// neighbouring databases share every other user's sample, as the coupling
// in the privacy proof does.
func boundFixed(p *Pipeline, seed uint64) boundResult {
	d0 := p.plan.MaxGroupsContributed
	br := boundResult{totals: map[string][]int64{}, kept: map[string][]string{}}
	tot := p.bound(func(u uint32, idx []int32) []int32 {
		name := p.userNames[u]
		l := p.lists[u]
		h := func(i int32) uint64 {
			k := l[int(i)*p.stride] >> 32
			return siphash.Hash(seed, 0, []byte(name+"\x00"+p.keyNames[k]))
		}
		slices.SortFunc(idx, func(a, b int32) int { return cmp.Compare(h(a), h(b)) })
		return idx[:min(d0, len(idx))]
	}, func(u, k uint32) {
		br.kept[p.userNames[u]] = append(br.kept[p.userNames[u]], p.keyNames[k])
	})
	for k, name := range p.keyNames {
		v := make([]int64, len(tot))
		for s := range tot {
			v[s] = tot[s][k]
		}
		br.totals[name] = v
	}
	return br
}

// selectionWeights builds the selection histogram of the mechanism over the
// kept pairs, users in keyed-hash order (setunion.OrderUsers), items indexed
// by ids.
func selectionWeights(cal setunion.Calibration, kept map[string][]string, ids map[string]uint32) []float64 {
	names := make([]string, 0, len(kept))
	for n := range kept {
		names = append(names, n)
	}
	slices.Sort(names)
	h := setunion.NewHistogram(cal.Mechanism, cal.Gamma, len(ids))
	for _, u := range setunion.OrderUsers([2]uint64{7, 9}, names) {
		var items []uint32
		for _, k := range kept[names[u]] {
			items = append(items, ids[k])
		}
		h.Update(items, nil)
	}
	return h.W
}

// TestNeighbourSensitivity is the property test of the privacy proof: on
// many random neighbouring databases (D and D plus all rows of one user,
// interleaved at random), the pre-noise vector (selection weights, clamped
// counts, clamped sums) moves by at most the sensitivity the noise is
// calibrated to: per key at most Units per statistic, on at most Δ0 keys,
// so ‖·‖1 ≤ Δ0·Units and ‖·‖2 ≤ √Δ0·Units; and the selection histogram by
// at most 1 in its mechanism's norm (√Δ0 or Δ0 for the count mechanisms).
func TestNeighbourSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	mechs := []setunion.Mechanism{setunion.PolicyGaussianL2, setunion.WeightedGaussian, setunion.PolicyLaplace,
		setunion.WeightedLaplace, setunion.CountGaussian, setunion.CountLaplace, ""}
	iters := iterations(600, 100)
	var maxRatio [3]float64 // worst observed ‖Δ‖/bound for l1, l2, selection
	for it := range iters {
		o := Defaults()
		o.MaxGroupsContributed = 1 + r.IntN(4)
		o.MaxRowsPerGroup = 1 + r.IntN(3)
		o.Mechanism = mechs[it%len(mechs)]
		if o.Mechanism == "" { // the default on a basic ledger at Δ0 = 1: single_item
			o.MaxGroupsContributed, o.BasicLedger = 1, true
		}
		lo := (r.Float64() - 0.5) * 100
		o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountValues}, {Kind: CountUnits},
			{Kind: Sum, Lower: lo, Upper: lo + 1 + r.Float64()*80}, {Kind: Avg, Lower: lo, Upper: lo + 0.5 + r.Float64()*10},
			{Kind: Sum, Lower: 0, Upper: 3}}
		rows, withExtra := neighbourDBs(r, 3+r.IntN(25), 2+r.IntN(8), len(o.Aggregates), false)
		seed := r.Uint64()
		pa, pb := feed(t, o, rows), feed(t, o, withExtra)
		a, b := boundFixed(pa, seed), boundFixed(pb, seed)

		// Statistics.
		plan := pa.plan
		si := 0
		for _, ag := range plan.Aggregates {
			for _, st := range ag.Stats {
				changed, l1, l2 := moves(t, fmt.Sprintf("iter %d %s %s", it, ag.Kind, st.Name), a, b, si, st.Units)
				d0 := float64(o.MaxGroupsContributed)
				b1, b2 := d0*float64(st.Units), math.Sqrt(d0)*float64(st.Units)
				if changed > o.MaxGroupsContributed || l1 > b1 || l2 > b2*(1+1e-12) {
					t.Fatalf("iter %d %s %s: %d keys changed, ℓ1 %v (bound %v), ℓ2 %v (bound %v)", it, ag.Kind, st.Name, changed, l1, b1, l2, b2)
				}
				maxRatio[0] = max(maxRatio[0], l1/b1)
				maxRatio[1] = max(maxRatio[1], l2/b2)
				si++
			}
		}
		// Every other user kept the same keys.
		for u, ka := range a.kept {
			if !slices.Equal(ka, b.kept[u]) {
				t.Fatalf("iter %d: user %s kept %v in D and %v in D'", it, u, ka, b.kept[u])
			}
		}
		if len(b.kept["added"]) > o.MaxGroupsContributed {
			t.Fatalf("iter %d: added user kept %d keys, Δ0 = %d", it, len(b.kept["added"]), o.MaxGroupsContributed)
		}

		// Selection weights on the same kept pairs.
		ids := map[string]uint32{}
		for key := range b.totals {
			ids[key] = uint32(len(ids))
		}
		wa := selectionWeights(plan.Selection, a.kept, ids)
		wb := selectionWeights(plan.Selection, b.kept, ids)
		norm, bound := 2, 1.0
		if plan.Selection.Noise == setunion.Laplace {
			norm = 1
		}
		if o.Mechanism == "" && plan.Selection.Mechanism != setunion.SingleItem {
			t.Fatalf("iter %d: selection %s on a basic ledger at Δ0 = 1, want single_item", it, plan.Selection.Mechanism)
		}
		switch plan.Selection.Mechanism {
		case setunion.CountLaplace:
			bound = float64(o.MaxGroupsContributed)
		case setunion.CountGaussian:
			bound = math.Sqrt(float64(o.MaxGroupsContributed))
		}
		d := 0.0
		for i := range wa {
			x := math.Abs(wa[i] - wb[i])
			if norm == 1 {
				d += x
			} else {
				d += x * x
			}
		}
		if norm == 2 {
			d = math.Sqrt(d)
		}
		if d > bound+1e-9 {
			t.Fatalf("iter %d %s: selection weights moved %v in ℓ%d, bound %v", it, plan.Selection.Mechanism, d, norm, bound)
		}
		maxRatio[2] = max(maxRatio[2], d/bound)
	}
	t.Logf("%d neighbouring pairs; worst ratio to the bound: ℓ1 %.3f, ℓ2 %.3f, selection %.3f", iters, maxRatio[0], maxRatio[1], maxRatio[2])
}

// TestOrderIndependence: the pre-noise totals are identical, bit for bit,
// whatever the order of the rows (floating-point sums would not be).
func TestOrderIndependence(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for range 100 {
		o := Defaults()
		o.MaxGroupsContributed = 3
		o.MaxRowsPerGroup = 2
		o.Aggregates = []Aggregate{{Kind: Sum, Lower: -1e6, Upper: 1e6}, {Kind: Avg, Lower: 0.1, Upper: 0.3}}
		var rows []row
		for u := range 10 {
			rows = append(rows, genUser(r, fmt.Sprintf("u%d", u), 5, 2)...)
		}
		for i := range rows { // values with many significant bits
			for j := range rows[i].values {
				if rows[i].values[j].Valid {
					rows[i].values[j].Float = r.NormFloat64() * 3e5
				}
			}
		}
		a := boundFixed(feed(t, o, rows), 5)
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		b := boundFixed(feed(t, o, rows), 5)
		for key, va := range a.totals {
			if !slices.Equal(va, b.totals[key]) {
				t.Fatalf("key %s: totals %v, after shuffling %v", key, va, b.totals[key])
			}
		}
	}
}
