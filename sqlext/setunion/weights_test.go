package setunion

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestWeights checks Builder.Weights against the histogram built by hand:
// users in UserHash order under the given key, each user's items (at most Δ0,
// so nothing is sampled) through the mechanism's update rule; every distinct
// item is returned, and dp_sips is refused.
func TestWeights(t *testing.T) {
	r := securerand.NewSeeded(3)
	for _, m := range []Mechanism{PolicyLaplace, PolicyGaussianL2, WeightedGaussian, CountLaplace} {
		o := Defaults()
		o.Mechanism, o.MaxItems, o.Epsilon, o.Delta = m, 4, 8, 0.01
		cal, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewBuilder(o)
		users := map[string][]string{}
		for u := range 15 {
			name := fmt.Sprint("user", u)
			for _, i := range r.Perm(8)[:1+r.IntN(4)] {
				users[name] = append(users[name], fmt.Sprint("item", i))
				b.Add(name, fmt.Sprint("item", i))
			}
		}
		key := securerand.Key(r)
		items, weights, st, err := b.Weights(securerand.NewSeeded(1), key)
		if err != nil {
			t.Fatal(err)
		}
		if st.Users != 15 || len(items) != st.DistinctItems || len(weights) != len(items) {
			t.Fatalf("%s: stats %+v, %d items, %d weights", m, st, len(items), len(weights))
		}
		names := make([]string, 0, len(users))
		for n := range users {
			names = append(names, n)
		}
		slices.SortFunc(names, func(a, c string) int {
			ha, hc := UserHash(key, []byte(a)), UserHash(key, []byte(c))
			if ha != hc {
				if ha < hc {
					return -1
				}
				return 1
			}
			return 0
		})
		id := map[string]uint32{}
		for i, it := range items {
			id[it] = uint32(i)
		}
		h := NewHistogram(m, cal.Gamma, len(items))
		for _, n := range names {
			var ids []uint32
			for _, it := range users[n] {
				ids = append(ids, id[it])
			}
			slices.Sort(ids)
			h.Update(ids, nil)
		}
		for i := range items {
			if d := weights[i] - h.W[i]; d > 1e-12 || d < -1e-12 {
				t.Errorf("%s: %s has weight %v, by hand %v", m, items[i], weights[i], h.W[i])
			}
		}
	}
	o := Defaults()
	o.Mechanism = DPSIPS
	b, _ := NewBuilder(o)
	b.Add("u", "i")
	if _, _, _, err := b.Weights(securerand.NewSeeded(1), [2]uint64{}); err == nil {
		t.Error("Weights accepted dp_sips")
	}
}
