package setunion

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAddIDCountIsRepeatedAddID: pairs given with their counts
// (AddIDCount) release exactly what the pairs given one by one release,
// for the same seed, under a mechanism that reads the counts.
func TestAddIDCountIsRepeatedAddID(t *testing.T) {
	for _, m := range []Mechanism{PolicyLaplace, GreedyFrequency} {
		o := Defaults()
		o.Epsilon, o.Delta, o.Mechanism, o.MaxItems = 3, 1e-5, m, 3
		one, err := NewBuilder(o)
		if err != nil {
			t.Fatal(err)
		}
		grouped, _ := NewBuilder(o)
		r := rand.New(rand.NewPCG(1, 2))
		for u := range 2000 {
			name := []byte(fmt.Sprint("user", u))
			a, _ := one.UserID(name)
			b, _ := grouped.UserID(name)
			for k := range 1 + r.IntN(5) {
				item := []byte(fmt.Sprint("w", (u*7+k*k)%40))
				c := int64(1 + r.IntN(4))
				for range c {
					one.AddID(a, item)
				}
				grouped.AddIDCount(b, item, c)
			}
		}
		x := one.Release(rand.New(rand.NewPCG(5, 6)))
		y := grouped.Release(rand.New(rand.NewPCG(5, 6)))
		if len(x.Items) == 0 || !slices.Equal(x.Items, y.Items) {
			t.Fatalf("%s: AddIDCount released %v, AddID %v", m, y.Items, x.Items)
		}
	}
}
