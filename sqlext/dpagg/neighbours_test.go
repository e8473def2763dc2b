package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The fixtures of the property tests on random neighbouring databases
// (property_test.go, global_test.go, publickeys_test.go, spread_test.go,
// topgroups_test.go, quantile_test.go): the pair of databases, and the
// moves of a statistic's pre-noise totals between them; and of the plan
// tests of global and public-keys releases (countPlans).

// iterations is full, or short under go test -short.
func iterations(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// neighbourDBs draws a database D of users users (u0, u1, …, rows in
// random order, each user over some of nKeys keys k0, k1, …, see genUser)
// and its neighbour D' = D plus the rows of one more user, "added",
// interleaved at random positions; global puts every row under the one
// key "" of a global release.
func neighbourDBs(r *rand.Rand, users, nKeys, nAggs int, global bool) (d, withAdded []row) {
	for u := range users {
		d = append(d, genUser(r, fmt.Sprintf("u%d", u), nKeys, nAggs)...)
	}
	r.Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
	added := genUser(r, "added", nKeys, nAggs)
	if global {
		d, added = globalRows(d), globalRows(added)
	}
	withAdded = slices.Clone(d)
	for _, e := range added {
		withAdded = slices.Insert(withAdded, r.IntN(len(withAdded)+1), e)
	}
	return d, withAdded
}

// globalRows maps rows to the empty key (a global release).
func globalRows(rows []row) []row {
	out := slices.Clone(rows)
	for i := range out {
		out[i].key = ""
	}
	return out
}

// moves is how statistic si's pre-noise totals moved from a (on D) to b
// (on D'): keys whose total changed, and the ℓ1 and ℓ2 norms of the
// change (ℓ2 as the norm, the square root of the sum of squares). It fails t (what names the statistic) when one key moved by
// more than units, the per-key sensitivity.
func moves(t *testing.T, what string, a, b boundResult, si int, units int64) (changed int, l1, l2 float64) {
	t.Helper()
	for key, vb := range b.totals {
		x := vb[si]
		if va := a.totals[key]; va != nil { // nil for keys only the added user has
			x -= va[si]
		}
		if x == 0 {
			continue
		}
		if x < -units || x > units {
			t.Fatalf("%s key %q: total moved by %d units, sensitivity %d", what, key, x, units)
		}
		changed++
		l1 += math.Abs(float64(x))
		l2 += float64(x) * float64(x)
	}
	return changed, l1, math.Sqrt(l2)
}

// countPlans calibrates a COUNT(*) release with noise nz and Δ0 = d0 with
// key selection (keyed), and again after change (a global or public-keys
// release: o, its options, and other, its plan).
func countPlans(t *testing.T, nz Noise, d0 int, change func(*Options)) (o Options, keyed, other *Plan) {
	t.Helper()
	o = Defaults()
	o.Noise = nz
	o.MaxGroupsContributed = d0
	o.Aggregates = []Aggregate{{Kind: CountRows}}
	keyed, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	change(&o)
	if other, err = Calibrate(o); err != nil {
		t.Fatal(err)
	}
	return o, keyed, other
}
