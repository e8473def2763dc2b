package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// iterRows returns a Beam-style iterator over rows.
func iterRows(rows []Row) func(*Row) bool {
	i := 0
	return func(r *Row) bool {
		if i == len(rows) {
			return false
		}
		*r = rows[i]
		i++
		return true
	}
}

// shardedHistograms runs the pipeline's sharded policy without Beam: rows go
// to Of's shard, each shard runs Weights (the function beamdp's shard DoFn
// calls). It returns each shard's histogram.
func shardedHistograms(t *testing.T, opts setunion.Options, key [2]uint64, shards int, rows []Row) []map[string]float64 {
	t.Helper()
	per := make([][]Row, shards)
	for _, r := range rows {
		j := Of(key, shards, []byte(r.User))
		per[j] = append(per[j], r)
	}
	out := make([]map[string]float64, shards)
	for j := range per {
		items, w, _, err := Weights(opts, key, securerand.NewSeeded(uint64(j)), iterRows(per[j]), false)
		if err != nil {
			t.Fatal(err)
		}
		out[j] = make(map[string]float64, len(items))
		for i, it := range items {
			out[j][it] = w[i]
		}
	}
	return out
}

func sum(hs []map[string]float64) map[string]float64 {
	out := make(map[string]float64)
	for _, h := range hs {
		for it, w := range h {
			out[it] += w
		}
	}
	return out
}

// neighbourCase draws a random database whose users hold at most Δ0 items
// (so that bounding samples nothing and the neighbours share "the same
// sampled subsets"), options with a small cutoff Γ (so that items reach it
// and the cap matters), and one more user x who may hold items nobody else
// holds.
func neighbourCase(r *rand.Rand, m setunion.Mechanism, trial int) (setunion.Options, []Row, Row) {
	o := setunion.Defaults()
	o.Mechanism = m
	o.Epsilon = 2 + 40*r.Float64()
	o.Delta = math.Pow(10, -1-3*r.Float64())
	o.Alpha = setunion.Float(4 * r.Float64())
	o.MaxItems = 2 + r.IntN(5)
	nItems := 3 + r.IntN(10)
	if m == setunion.GreedyPublic {
		o.Public = make(map[string]float64)
		for i := range nItems {
			if r.IntN(3) > 0 {
				o.Public[fmt.Sprint("i", i)] = float64(r.IntN(4))
			}
		}
	}
	user := func(name string, fresh int) Row {
		k := 1 + r.IntN(min(o.MaxItems, nItems))
		if !m.Bounded() {
			k = 1 + r.IntN(nItems)
		}
		u := Row{User: name}
		for _, i := range r.Perm(nItems)[:k] {
			u.Items = append(u.Items, fmt.Sprint("i", i))
		}
		for f := range fresh {
			if len(u.Items) < o.MaxItems || !m.Bounded() {
				u.Items = append(u.Items, fmt.Sprint("new", f))
			}
		}
		if m == setunion.GreedyFrequency { // repeated items: the user's own counts
			for _, it := range slices.Clone(u.Items) {
				for range r.IntN(3) {
					u.Items = append(u.Items, it)
				}
			}
		}
		return u
	}
	var rows []Row
	for u := range 1 + r.IntN(40) {
		rows = append(rows, user(fmt.Sprint("u", u), 0))
	}
	return o, rows, user(fmt.Sprint("x", trial), r.IntN(4))
}

// TestShardedSensitivity checks the argument of beamdp's package documentation on
// random neighbouring databases D and D ∪ {x}, for every sequential
// mechanism and S ∈ {1, 2, 4, 16}, with the same key and subsets:
//
//   - every shard but x's has the same histogram in D and D ∪ {x};
//   - the summed histograms are at most 1 (+1e-9) apart in the mechanism's
//     norm (ℓ1 for Laplace noise, ℓ2 for Gaussian);
//   - the t items only x holds get at most 1/t each (policy_laplace), 1/√t
//     each (policy_gaussian_l2), or at most 1 together (greedy).
func TestShardedSensitivity(t *testing.T) {
	const trials = 1500
	for _, m := range []setunion.Mechanism{setunion.PolicyLaplace, setunion.PolicyGaussianL2, setunion.GreedyFrequency, setunion.GreedyPublic} {
		for _, shards := range []int{1, 2, 4, 16} {
			t.Run(fmt.Sprintf("%s/S=%d", m, shards), func(t *testing.T) {
				r := securerand.NewSeeded(uint64(len(m)*1000 + shards))
				l2 := m.Noise() == setunion.Gaussian
				worst, reached := 0.0, 0
				for trial := range trials {
					o, rows, x := neighbourCase(r, m, trial)
					key := securerand.Key(r)
					cal, err := setunion.Calibrate(o)
					if err != nil {
						t.Fatal(err)
					}
					a := shardedHistograms(t, o, key, shards, rows)
					b := shardedHistograms(t, o, key, shards, append(slices.Clone(rows), x))
					xs := Of(key, shards, []byte(x.User))
					for j := range a {
						if j != xs && !mapsEqual(a[j], b[j]) {
							t.Fatalf("trial %d: shard %d differs although x is in shard %d", trial, j, xs)
						}
					}
					ha, hb := sum(a), sum(b)
					d := dist(ha, hb, l2)
					worst = max(worst, d)
					if d > 1+1e-9 {
						t.Fatalf("trial %d: ‖H − H′‖ = %.12f > 1 (Γ = %.4f, %d users, x = %v)", trial, d, cal.Gamma, len(rows), x.Items)
					}
					for _, w := range hb {
						if w >= cal.Gamma-1e-12 {
							reached++
							break
						}
					}
					checkNewItems(t, trial, m, ha, hb)
				}
				t.Logf("worst distance %.6f over %d trials (%d with an item at Γ)", worst, trials, reached)
				if reached < trials/10 {
					t.Errorf("only %d of %d trials raised an item to Γ: the cases do not exercise the cap", reached, trials)
				}
			})
		}
	}
}

// checkNewItems checks the weights of the items that only x holds.
func checkNewItems(t *testing.T, trial int, m setunion.Mechanism, ha, hb map[string]float64) {
	t.Helper()
	var fresh []float64
	for it, w := range hb {
		if _, ok := ha[it]; !ok {
			fresh = append(fresh, w)
		}
	}
	if len(fresh) == 0 {
		return
	}
	n := float64(len(fresh))
	total := 0.0
	for _, w := range fresh {
		total += w
		switch m {
		case setunion.PolicyLaplace:
			if w > 1/n+1e-12 {
				t.Fatalf("trial %d: a new item got weight %v > 1/t = %v", trial, w, 1/n)
			}
		case setunion.PolicyGaussianL2:
			if w > 1/math.Sqrt(n)+1e-12 {
				t.Fatalf("trial %d: a new item got weight %v > 1/√t = %v", trial, w, 1/math.Sqrt(n))
			}
		}
	}
	if total > 1+1e-9 && m.Noise() == setunion.Laplace {
		t.Fatalf("trial %d: new items got %v > 1 in total", trial, total)
	}
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func dist(a, b map[string]float64, l2 bool) float64 {
	d := 0.0
	add := func(x float64) {
		x = math.Abs(x)
		if l2 {
			d += x * x
		} else {
			d += x
		}
	}
	for k, v := range a {
		add(v - b[k])
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			add(v)
		}
	}
	if l2 {
		return math.Sqrt(d)
	}
	return d
}

// TestShardsAreHashRanges checks that shards are contiguous ranges of the
// user hash, so that reading the shards in order visits users in the
// single-machine order, and that S = 1 puts everyone in shard 0.
func TestShardsAreHashRanges(t *testing.T) {
	r := securerand.NewSeeded(7)
	key := securerand.Key(r)
	type u struct {
		h     uint64
		shard int
	}
	for _, shards := range []int{1, 3, 16, 1000} {
		var us []u
		for i := range 5000 {
			id := []byte(fmt.Sprint("user", i))
			s := Of(key, shards, id)
			if s < 0 || s >= shards {
				t.Fatalf("shard %d out of range [0, %d)", s, shards)
			}
			us = append(us, u{setunion.UserHash(key, id), s})
		}
		slices.SortFunc(us, func(a, b u) int {
			if a.h < b.h {
				return -1
			}
			if a.h > b.h {
				return 1
			}
			return 0
		})
		for i := 1; i < len(us); i++ {
			if us[i].shard < us[i-1].shard {
				t.Fatalf("S=%d: shards are not ranges of the hash order", shards)
			}
		}
		if us[len(us)-1].shard == 0 && shards > 1 {
			t.Fatalf("S=%d: every user in shard 0", shards)
		}
	}
}
