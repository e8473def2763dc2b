package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// reference computes the bounded aggregates of rows the slow, obvious way,
// for users holding at most Δ0 keys (no sampling): per user and key the
// rows, the non-NULL non-NaN values clamped, m of them counted (m times the
// mean when there are more), then summed over users.
func reference(o Options, rows []row) map[string][]float64 {
	type pair struct{ user, key string }
	rowsOf := map[pair]int{}
	vals := map[pair][][]float64{} // per aggregate
	for _, r := range rows {
		if r.unit == "" {
			continue
		}
		p := pair{r.unit, r.key}
		rowsOf[p]++
		if vals[p] == nil {
			vals[p] = make([][]float64, len(o.Aggregates))
		}
		for i, a := range o.Aggregates {
			v := r.values[i]
			if !v.Valid || math.IsNaN(v.Float) {
				continue
			}
			x := v.Float
			if a.Kind.clamped() {
				x = min(max(x, a.Lower), a.Upper)
			}
			vals[p][i] = append(vals[p][i], x)
		}
	}
	m := float64(o.MaxRowsPerGroup)
	type acc struct{ count, sum float64 }
	accs := map[string][]acc{}
	for p, n := range rowsOf {
		if accs[p.key] == nil {
			accs[p.key] = make([]acc, len(o.Aggregates))
		}
		for i, a := range o.Aggregates {
			xs := vals[p][i]
			nn := float64(len(xs))
			s := 0.0
			for _, x := range xs {
				s += x
			}
			c := &accs[p.key][i]
			switch a.Kind {
			case CountRows:
				c.count += min(float64(n), m)
			case CountUnits:
				c.count++
			case CountValues:
				c.count += min(nn, m)
			case Sum, Avg:
				if nn > m {
					s *= m / nn
				}
				c.count += min(nn, m)
				c.sum += s
			}
		}
	}
	out := map[string][]float64{}
	for key, as := range accs {
		v := make([]float64, len(as))
		for i, a := range o.Aggregates {
			switch a.Kind {
			case Sum:
				v[i] = as[i].sum
			case Avg:
				v[i] = (a.Lower + a.Upper) / 2
				if as[i].count > 0 {
					v[i] = as[i].sum / as[i].count
				}
			default:
				v[i] = as[i].count
			}
		}
		out[key] = v
	}
	return out
}

// TestReleaseIsExactWithoutNoise: at ε = 1e9 the noise is 0 (Laplace) or
// below the granularity's rounding (Gaussian), and every aggregate of every
// released key equals the reference up to the granularity's rounding.
func TestReleaseIsExactWithoutNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for _, nz := range []Noise{Laplace, Gaussian} {
		o := Defaults()
		o.Epsilon = 1e9
		o.Noise = nz
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 8, 2
		o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountValues}, {Kind: CountUnits},
			{Kind: Sum, Lower: -10, Upper: 100}, {Kind: Avg, Lower: 0, Upper: 5}}
		var rows []row
		for u := range 60 {
			for range 1 + r.IntN(6) {
				vals := []Value{Null, genValue(r), Null, genValue(r), genValue(r)}
				rows = append(rows, row{unit: fmt.Sprint("u", u), key: fmt.Sprint("k", r.IntN(4)), values: vals})
			}
		}
		rows = append(rows, row{unit: "", key: "k0", values: []Value{Null, Float(1), Null, Float(1), Float(1)}}) // dropped
		want := reference(o, rows)
		p := feed(t, o, rows)
		res, err := p.Release(securerand.NewSeeded(63))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != len(want) {
			t.Fatalf("%s: %d keys released, want all %d", nz, len(res.Rows), len(want))
		}
		for _, rw := range res.Rows {
			for i, a := range p.plan.Aggregates {
				tol := 1e-9
				if a.Kind == Sum || a.Kind == Avg {
					// Rounding: g/2 per user, plus the Gaussian's few units.
					s := a.Stats[len(a.Stats)-1]
					tol = 60*s.Granularity + 10*s.StdDev
					if a.Kind == Avg {
						tol /= want[rw.Key][1] + 1
					}
				}
				if math.Abs(rw.Values[i]-want[rw.Key][i]) > tol {
					t.Errorf("%s key %s %s: %v, want %v (± %v)", nz, rw.Key, a.Kind, rw.Values[i], want[rw.Key][i], tol)
				}
			}
		}
		if res.Stats.Users != 60 || res.Stats.Occurrences != int64(len(rows)-1) {
			t.Errorf("%s: stats %+v", nz, res.Stats)
		}
	}
}

// TestSamplingKeepsDelta0UniformKeys: a user with more than Δ0 keys keeps
// exactly Δ0 of them, each equally often.
func TestSamplingKeepsDelta0UniformKeys(t *testing.T) {
	o := Defaults()
	o.Epsilon = 1e9
	o.MaxGroupsContributed = 3
	o.Aggregates = []Aggregate{{Kind: CountUnits}}
	const keys, users = 8, 4000
	var rows []row
	for u := range users {
		for k := range keys {
			rows = append(rows, row{unit: fmt.Sprint("u", u), key: fmt.Sprint("k", k), values: []Value{Null}})
		}
	}
	res, err := feed(t, o, rows).Release(securerand.NewSeeded(64))
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	want := float64(users) * 3 / keys
	sd := math.Sqrt(users * 3.0 / keys * (1 - 3.0/keys))
	for _, rw := range res.Rows {
		total += rw.Values[0]
		if math.Abs(rw.Values[0]-want) > 5*sd {
			t.Errorf("key %s kept by %v users, expected %.0f ± %.0f", rw.Key, rw.Values[0], want, 5*sd)
		}
	}
	if len(res.Rows) != keys || total != users*3 {
		t.Errorf("%d keys released, %v user-keys kept; want %d and %d", len(res.Rows), total, keys, users*3)
	}
}

func TestPipelineMisuse(t *testing.T) {
	o := Defaults()
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Sum, Lower: 0, Upper: 1}}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add([]byte("u"), []byte("k"), []Value{Null}); err == nil || !strings.Contains(err.Error(), "2 aggregates") {
		t.Errorf("short row: %v", err)
	}
	if _, err := p.Release(securerand.NewSeeded(1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Add([]byte("u"), []byte("k"), []Value{Null, Null}); err == nil {
		t.Error("Add after Release accepted")
	}
	if _, err := p.Release(securerand.NewSeeded(1)); err == nil {
		t.Error("second Release accepted")
	}
	if _, err := New(Options{}); err == nil {
		t.Error("zero options accepted")
	}
}

// TestManyRowsPerPair drives compaction hard: one user, few keys, many
// interleaved rows, with the exact totals checked.
func TestManyRowsPerPair(t *testing.T) {
	o := Defaults()
	o.MaxRowsPerGroup = 1 << 20
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Sum, Lower: 0, Upper: 4}}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	for i := range n {
		k := []byte{byte('a' + i%7)}
		if err := p.Add([]byte("u"), k, []Value{Null, Float(float64(i % 5))}); err != nil {
			t.Fatal(err)
		}
	}
	b := boundFixed(p, 1)
	var rowsTotal, sumTotal int64
	for _, v := range b.totals {
		rowsTotal += v[0]
		sumTotal += v[1]
	}
	// Σ i%5 over 100,000 rows is 200,000; each of the 7 keys' contributions
	// is rounded to the granularity (g = 4 here: c = m·4 = 2^22).
	g := p.plan.Aggregates[1].Stats[0].Granularity
	if rowsTotal != n || math.Abs(float64(sumTotal)*g-2*n) > 7*g/2 {
		t.Errorf("rows %d, sum %v; want %d and %d ± %v", rowsTotal, float64(sumTotal)*g, n, 2*n, 7*g/2)
	}
	if len(p.lists[0])/p.stride != 7 {
		t.Errorf("%d entries after grouping, want 7", len(p.lists[0])/p.stride)
	}
}
