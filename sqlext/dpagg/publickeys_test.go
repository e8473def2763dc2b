package dpagg

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// publicOptions is a release over public keys with random contribution
// bounds and every kind of aggregate.
func publicOptions(r *rand.Rand) Options {
	o := Defaults()
	o.PublicKeys = true
	o.MaxGroupsContributed = 1 + r.IntN(4)
	o.MaxRowsPerGroup = 1 + r.IntN(5)
	lo := (r.Float64() - 0.5) * 100
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountValues}, {Kind: CountUnits},
		{Kind: Sum, Lower: lo, Upper: lo + 1 + r.Float64()*80}, {Kind: Avg, Lower: lo, Upper: lo + 0.5 + r.Float64()*10},
		{Kind: StdDevPop, Lower: lo, Upper: lo + 2}}
	return o
}

// feedPublic builds a pipeline over public keys.
func feedPublic(t *testing.T, o Options, keys []string, rows []row) *Pipeline {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetPublicKeys(keys); err != nil {
		t.Fatal(err)
	}
	for _, rw := range rows {
		if err := p.Add([]byte(rw.unit), []byte(rw.key), rw.values); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestPublicKeysNeighbourSensitivity is the property test of the proof in
// publickeys.go: on many random neighbouring databases (D and D plus all
// rows of one user, interleaved at random; keys partly outside the public
// set), (1) the released key set and its order are the public set, sorted,
// on both; (2) the pre-noise totals of the public keys move by at most
// Units per statistic on at most Δ0 keys, so ‖·‖1 ≤ Δ0·Units and ‖·‖2 ≤
// √Δ0·Units, the sensitivities the plan's noise is calibrated to; (3) no
// key outside the public set has a total.
func TestPublicKeysNeighbourSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	iters := iterations(600, 100)
	worst := 0.0
	for it := range iters {
		o := publicOptions(r)
		// Public keys: a random subset of k0…k7, plus keys no row has.
		var keys []string
		for k := range 8 {
			if r.IntN(3) > 0 {
				keys = append(keys, fmt.Sprintf("k%d", k))
			}
		}
		keys = append(keys, "never", "k5") // a duplicate is ignored
		distinct := slices.Compact(slices.Sorted(slices.Values(keys)))
		rows, withExtra := neighbourDBs(r, r.IntN(25), 10, len(o.Aggregates), false)
		pa, pb := feedPublic(t, o, keys, rows), feedPublic(t, o, keys, withExtra)
		if !pa.plan.PublicKeys || pa.plan.Global || pa.plan.MaxGroupsContributed != o.MaxGroupsContributed {
			t.Fatalf("plan %+v", pa.plan)
		}
		a, b := boundFixed(pa, uint64(it)), boundFixed(pb, uint64(it))
		for k := range b.totals {
			if !slices.Contains(keys, k) {
				t.Fatalf("iter %d: key %q outside the public set has a total", it, k)
			}
		}
		d0 := float64(o.MaxGroupsContributed)
		si := 0
		for _, ag := range pa.plan.Aggregates {
			for _, st := range ag.Stats {
				changed, l1, l2 := moves(t, fmt.Sprintf("iter %d %s %s", it, ag.Kind, st.Name), a, b, si, st.Units)
				if changed > o.MaxGroupsContributed {
					t.Fatalf("iter %d %s: %d keys changed, Δ0 = %d", it, ag.Kind, changed, o.MaxGroupsContributed)
				}
				u := float64(st.Units)
				if l1 > d0*u || l2 > math.Sqrt(d0)*u+1e-9 {
					t.Fatalf("iter %d %s %s: ℓ1 %v ℓ2 %v above Δ0·Units %v, √Δ0·Units %v", it, ag.Kind, st.Name, l1, l2, d0*u, math.Sqrt(d0)*u)
				}
				if st.L1 != d0*u*st.Granularity || math.Abs(st.L2-math.Sqrt(d0)*u*st.Granularity) > 1e-9*st.L2 {
					t.Fatalf("iter %d %s %s: plan sensitivities ℓ1 %v ℓ2 %v for Δ0 %v Units %d", it, ag.Kind, st.Name, st.L1, st.L2, d0, st.Units)
				}
				worst = max(worst, l1/(d0*u))
				si++
			}
		}
		// The released rows: the public set, sorted, on both databases.
		want := distinct
		for _, rows := range [][]row{rows, withExtra} {
			res, err := feedPublic(t, o, keys, rows).Release(securerand.NewSeeded(uint64(it)))
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(res.Rows))
			for i, rr := range res.Rows {
				got[i] = rr.Key
			}
			if !slices.Equal(got, want) {
				t.Fatalf("iter %d: released keys %q, want the public keys %q", it, got, want)
			}
		}
	}
	t.Logf("%d neighbouring pairs; worst ℓ1/(Δ0·Units) %.3f", iters, worst)
}

// TestPublicKeysPlan: a release over public keys gives the aggregates all
// of ε and δ with no selection, keeps Δ0 in the noise, and names itself.
func TestPublicKeysPlan(t *testing.T) {
	for _, nz := range []Noise{Laplace, Gaussian} {
		o, keyed, p := countPlans(t, nz, 4, func(o *Options) { o.PublicKeys = true })
		if p.MaxGroupsContributed != 4 || p.AggregatesEpsilon != o.Epsilon || p.Selection.Mechanism != "" || !p.PublicKeys {
			t.Errorf("%s: plan %+v", nz, p)
		}
		if st := p.Aggregates[0].Stats[0]; st.L1 != 4 || st.L2 != 2 {
			t.Errorf("%s: sensitivities %v %v, want 4 and 2", nz, st.L1, st.L2)
		}
		if !(p.Aggregates[0].StdDev < keyed.Aggregates[0].StdDev) {
			t.Errorf("%s: public-keys stddev %v not below keyed %v", nz, p.Aggregates[0].StdDev, keyed.Aggregates[0].StdDev)
		}
		found := false
		for _, f := range p.Facts() {
			found = found || f.Name == "key_selection" && f.Value == "public keys, no selection"
		}
		if !found {
			t.Errorf("%s: no key_selection fact", nz)
		}
	}
	o := Defaults()
	o.PublicKeys, o.Global = true, true
	o.Aggregates = []Aggregate{{Kind: CountRows}}
	if _, err := Calibrate(o); err == nil {
		t.Error("a release both global and over public keys was accepted")
	}
	o.Global = false
	o.MaxGroupsContributed = 0 // chosen privately, among the public keys
	if p, err := Calibrate(o); err != nil || p.Bounds == nil || !p.Bounds.Groups {
		t.Errorf("private Δ0 over public keys: %+v %v", p, err)
	}
}

// TestPublicKeysRelease: every public key is released, in sorted order,
// over no rows or many; keys outside the set are dropped; too large a set
// and a missing one are refused; the noise has the plan's deviation.
func TestPublicKeysRelease(t *testing.T) {
	o := Defaults()
	o.PublicKeys = true
	o.Noise = Gaussian
	o.MaxGroupsContributed = 2
	o.MaxRowsPerGroup = 3
	o.Aggregates = []Aggregate{{Kind: CountRows}}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add([]byte("u"), []byte("a"), []Value{Null}); err == nil {
		t.Error("Add before SetPublicKeys was accepted")
	}
	many := make([]string, MaxPublicKeys+1)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	if err := p.SetPublicKeys(many); !errors.Is(err, ErrTooManyPublicKeys) {
		t.Errorf("%d keys: %v", len(many), err)
	}
	if err := p.SetPublicKeys(many[:MaxPublicKeys]); err != nil {
		t.Errorf("%d keys: %v", MaxPublicKeys, err)
	}
	if err := p.SetPublicKeys([]string{"a"}); err == nil {
		t.Error("SetPublicKeys twice was accepted")
	}
	g := Defaults()
	g.Aggregates = o.Aggregates
	if q, _ := New(g); q.SetPublicKeys([]string{"a"}) == nil {
		t.Error("SetPublicKeys on a release with key selection was accepted")
	}

	rng := securerand.NewSeeded(9)
	keys := []string{"z", "b", "a"}
	res, err := feedPublic(t, o, keys, nil).Release(rng)
	if err != nil || len(res.Rows) != 3 || res.Rows[0].Key != "a" || res.Rows[2].Key != "z" {
		t.Fatalf("empty input: %+v %v", res, err)
	}
	// 300 users, each with rows under a (1..5 rows) and under "other",
	// which is not public: a's truth is Σ min(rows, 3); b and z have none.
	var rows []row
	truth := 0.0
	for u := range 300 {
		n := 1 + u%5
		truth += float64(min(n, 3))
		for range n {
			rows = append(rows, row{unit: fmt.Sprintf("u%d", u), key: "a", values: []Value{Null}})
			rows = append(rows, row{unit: fmt.Sprintf("u%d", u), key: "other", values: []Value{Null}})
		}
	}
	const trials = 3000
	var s2 float64
	sd := 0.0
	for range trials {
		p := feedPublic(t, o, keys, rows)
		sd = p.plan.Aggregates[0].StdDev
		res, err := p.Release(rng)
		if err != nil || len(res.Rows) != 3 {
			t.Fatal(res, err)
		}
		if res.Stats.DistinctItems != 1 {
			t.Fatalf("the non-public key was kept: %d keys", res.Stats.DistinctItems)
		}
		d := res.Rows[0].Values[0] - truth
		s2 += d * d
	}
	v := s2 / trials
	if z := (v - sd*sd) / (sd * sd * math.Sqrt(2.0/trials)); math.Abs(z) > 4.5 {
		t.Errorf("sample variance %v against the plan's %v (z = %.2f)", v, sd*sd, z)
	}
}

// BenchmarkPublicKeysMax releases MaxPublicKeys public keys with COUNT(*)
// and SUM over no rows: the noise draws every release over public keys
// makes per key, whatever the data (the cost MaxPublicKeys bounds).
func BenchmarkPublicKeysMax(b *testing.B) {
	o := Defaults()
	o.PublicKeys = true
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Sum, Lower: 0, Upper: 100}}
	keys := make([]string, MaxPublicKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key%06d", i)
	}
	rng := securerand.NewSeeded(1)
	for b.Loop() {
		p, err := New(o)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.SetPublicKeys(keys); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Release(rng); err != nil {
			b.Fatal(err)
		}
	}
}
