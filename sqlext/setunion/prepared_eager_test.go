package setunion

import (
	"slices"
	"testing"
)

// TestPreparedNothingLazy: a Prepared computes the users' sizes (the
// private Δ0's input) in Prepare, and its item lookup on BuildLookup, so
// that no release of a Prepared shared across analysts pays for them (a
// first use that did would be a cache another analyst can feel).
func TestPreparedNothingLazy(t *testing.T) {
	b, err := NewBuilder(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	for u, items := range [][]string{{"a", "b", "c"}, {"a"}, {"b", "c"}} {
		id, _ := b.UserID([]byte{byte('p' + u)})
		for _, it := range items {
			b.AddID(id, []byte(it))
		}
	}
	p, err := Prepare(b.Grouped())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.sizes, []int{1, 2, 3}) {
		t.Fatalf("sizes after Prepare: %v, want [1 2 3]", p.sizes)
	}
	if p.LookupBuilt() {
		t.Fatal("lookup built before BuildLookup")
	}
	p.BuildLookup()
	if !p.LookupBuilt() {
		t.Fatal("lookup not built by BuildLookup")
	}
	if i, ok := p.lookup("c"); !ok || p.g.Items[i] != "c" {
		t.Fatalf("lookup(c) = %d, %v", i, ok)
	}
}
