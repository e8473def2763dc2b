package release

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// TestRowGrouperAsBuilder: rowGrouper groups rows exactly as a
// setunion.Builder fed them (users, items, lists with counts), with each
// pair's first row as a map of first rows records it, on tables large
// enough for the parallel sort.
func TestRowGrouperAsBuilder(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for trial := range 6 {
		rows := 100 + r.IntN(2000)
		if trial%2 == 1 {
			rows = 70_000 + r.IntN(30_000) // over the parallel threshold
		}
		var g rowGrouper
		// The same rows read by three workers, merged.
		parts := []*rowGrouper{{}, {}, {}}
		b, err := setunion.NewBuilder(setunion.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		first := map[[2]uint32]uint32{}
		users := 1 + r.IntN(rows/3+1)
		u := 0
		for row := range rows {
			if r.IntN(4) == 0 {
				u = r.IntN(users) // runs of a user's rows, and scattered ones
			}
			unit := []byte(fmt.Sprintf("u%d", u))
			item := []byte(fmt.Sprintf("i%d", int(40*r.Float64()*r.Float64())))
			null := r.IntN(9) == 0
			g.add(unit, item, null)
			parts[min(row*3/rows, 2)].add(unit, item, null)
			bu, _ := b.UserID(unit)
			b.AddID(bu, item)
			bi, _ := g.items.Lookup(item)
			if _, ok := first[[2]uint32{bu, bi}]; !ok {
				first[[2]uint32{bu, bi}] = uint32(row)
			}
		}
		want := b.Grouped()
		m := merge(parts)
		if !reflect.DeepEqual(m.us, g.us) || !reflect.DeepEqual(m.is, g.is) || !reflect.DeepEqual(m.nnOrder, g.nnOrder) ||
			m.nullOcc != g.nullOcc || !reflect.DeepEqual(m.users.Strings(), g.users.Strings()) || !reflect.DeepEqual(m.items.Strings(), g.items.Strings()) {
			t.Fatalf("trial %d: the merged workers differ from one grouper", trial)
		}
		gr := g.group()
		us, items, offs, ents, firsts := gr.users, gr.items, gr.offs, gr.ents, gr.first
		if !reflect.DeepEqual(us, want.Users) || !reflect.DeepEqual(items, want.Items) {
			t.Fatalf("trial %d: users or items differ", trial)
		}
		for u, l := range want.Lists {
			got := ents[offs[u]:offs[u+1]]
			if !reflect.DeepEqual(got, l) {
				t.Fatalf("trial %d: user %d: %v, want %v", trial, u, got, l)
			}
			for j, e := range got {
				if f := first[[2]uint32{uint32(u), uint32(e >> 32)}]; firsts[int(offs[u])+j] != f {
					t.Fatalf("trial %d: user %d item %d: first row %d, want %d", trial, u, e>>32, firsts[int(offs[u])+j], f)
				}
			}
		}
	}
}
