package dpagg

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestAddRowsIsRepeatedAdd: n identical rows given at once (AddRows)
// release exactly what n calls of Add release, for the same seed, with
// SUM, AVG, COUNT(col) and a spread, NULLs, NaNs and infinities.
func TestAddRowsIsRepeatedAdd(t *testing.T) {
	o := Defaults()
	o.Epsilon, o.Delta = 5, 1e-6
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountValues}, {Kind: Sum, Lower: -3, Upper: 50}, {Kind: Avg, Lower: 0, Upper: 10}, {Kind: VarPop, Lower: 0, Upper: 10}}
	r := rand.New(rand.NewPCG(3, 4))
	one, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	grouped, _ := New(o)
	for u := range 300 {
		for k := range 1 + r.IntN(4) {
			vals := make([]Value, len(o.Aggregates))
			for j := range vals {
				vals[j] = genValue(r)
			}
			n := int64(1 + r.IntN(5))
			unit, key := []byte(fmt.Sprint("u", u)), []byte(fmt.Sprint("k", (u+k)%7))
			for range n {
				if err := one.Add(unit, key, vals); err != nil {
					t.Fatal(err)
				}
			}
			if err := grouped.AddRows(unit, key, vals, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, err := one.Release(securerand.NewSeeded(9))
	if err != nil {
		t.Fatal(err)
	}
	b, err := grouped.Release(securerand.NewSeeded(9))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Rows) == 0 || !reflect.DeepEqual(a.Rows, b.Rows) {
		t.Fatalf("AddRows released %v, repeated Add %v", b.Rows, a.Rows)
	}
}
