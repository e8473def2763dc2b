package setunion

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// flatten lays g out as PrepareFlat takes it.
func flatten(g Grouped) FlatGrouped {
	f := FlatGrouped{Users: g.Users, Items: g.Items, Off: []int{0}, Occurrences: g.Occurrences}
	for _, l := range g.Lists {
		f.Entries = append(f.Entries, l...)
		f.Off = append(f.Off, len(f.Entries))
	}
	return f
}

// TestPrepareFlatAsPrepare: on random groupings PrepareFlat (and
// PreparedFromParts, given the sums) builds the Prepared that Prepare builds (every field: lists, flat ids, per-item
// sums, sorted sizes, statistics), so every release is the same; and it
// refuses the shapes Prepare refuses but for repeated names, which its
// callers rule out.
func TestPrepareFlatAsPrepare(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	for trial := range 30 {
		g := groupPairs(pairsOf(r, r.IntN(5000), 1+r.IntN(300), 1+r.IntN(200)))
		want, err := Prepare(g)
		if err != nil {
			t.Fatal(err)
		}
		got, err := PrepareFlat(flatten(g))
		if err != nil {
			t.Fatal(err)
		}
		if trial%2 == 1 { // the parts, as a caller computes them
			f := flatten(g)
			parts := FlatParts{ItemUsers: make([]uint32, len(g.Items)), ItemOcc: make([]uint64, len(g.Items))}
			for _, e := range f.Entries {
				parts.IDs = append(parts.IDs, uint32(e>>32))
				parts.ItemUsers[e>>32]++
				parts.ItemOcc[e>>32] += e & 0xffffffff
			}
			for u := range g.Users {
				parts.Longest = max(parts.Longest, f.Off[u+1]-f.Off[u])
			}
			if trial%4 == 3 { // the entries laid out on the first read
				entries := f.Entries
				f.Entries, parts.Entries = nil, func() []uint64 { return entries }
			}
			got = PreparedFromParts(f, parts)
			if trial%4 == 3 {
				if got.g.Lists != nil {
					t.Fatalf("trial %d: lists laid out before a read", trial)
				}
				if got.Grouped(); got.g.Lists == nil {
					t.Fatalf("trial %d: lists not laid out by Grouped", trial)
				}
			}
		}
		if !reflect.DeepEqual(got.g, want.g) || !reflect.DeepEqual(got.flatL, want.flatL) ||
			!reflect.DeepEqual(got.itemUsers, want.itemUsers) || !reflect.DeepEqual(got.itemOcc, want.itemOcc) ||
			got.occ != want.occ || !reflect.DeepEqual(got.sizes, want.sizes) || got.stats != want.stats {
			t.Fatalf("trial %d: PrepareFlat differs from Prepare:\n%+v\n%+v", trial, got, want)
		}
	}
	for _, g := range []Grouped{
		{Users: []string{""}, Items: []string{"x"}, Lists: [][]uint64{{GroupedEntry(0, 1)}}},
		{Users: []string{"a"}, Items: []string{"x"}, Lists: [][]uint64{{GroupedEntry(1, 1)}}},
		{Users: []string{"a"}, Items: []string{"x"}, Lists: [][]uint64{{GroupedEntry(0, 0)}}},
		{Users: []string{"a"}, Items: []string{"x", "y"}, Lists: [][]uint64{{GroupedEntry(1, 1), GroupedEntry(0, 1)}}},
		{Users: []string{"a"}, Items: []string{"x", "y"}, Lists: [][]uint64{{GroupedEntry(1, 1), GroupedEntry(1, 1)}}},
	} {
		if _, err := PrepareFlat(flatten(g)); err == nil {
			t.Errorf("PrepareFlat accepted %+v", g)
		}
	}
	for _, f := range []FlatGrouped{
		{Users: []string{"a"}, Items: []string{"x"}, Entries: []uint64{GroupedEntry(0, 1)}, Off: []int{0}},
		{Users: []string{"a"}, Items: []string{"x"}, Entries: []uint64{GroupedEntry(0, 1)}, Off: []int{0, 2}},
		{Users: []string{"a", "b"}, Items: []string{"x"}, Entries: []uint64{GroupedEntry(0, 1)}, Off: []int{0, 2, 1}},
	} {
		if _, err := PrepareFlat(f); err == nil {
			t.Errorf("PrepareFlat accepted %s", fmt.Sprint(f))
		}
	}
}
