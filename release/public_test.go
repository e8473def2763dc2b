package release_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/lookup"
	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/storage"
)

// enrichedPairs runs a scan of protected rows (uid, item) filtered by
// EXISTS(item in the public table) and keyed by the public category of the
// item (a join), and returns the (uid, key) pairs it hands to the mechanism.
func enrichedPairs(t *testing.T, rows [][2]string, public [][2]string) []string {
	t.Helper()
	b, err := storage.NewTableBuilder("t", []storage.Column{{Name: "uid", Type: storage.Text}, {Name: "item", Type: storage.Text}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := b.Append(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := storage.NewTableBuilder("p", []storage.Column{{Name: "item", Type: storage.Text}, {Name: "cat", Type: storage.Text}})
	for _, r := range public {
		if err := pb.Append(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	ptbl, _ := pb.Build()
	ctx := sql.NewEmptyContext()
	set := lookup.NewSet(lookup.Text, sql.Collation_Default, "p", lookup.Limits{})
	item := expression.NewGetFieldWithTable(1, 0, types.LongText, "db", "t", "item", true)
	pub, err := release.NewPublicJoin(ctx, "db", "p", ptbl,
		release.Expr{E: expression.NewGetFieldWithTable(0, 0, types.LongText, "db", "p", "item", true), Where: "join column"},
		release.Expr{}, []release.Expr{{E: expression.NewGetFieldWithTable(1, 0, types.LongText, "db", "p", "cat", true), Where: "joined column"}},
		set, sealed.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	scan, err := release.NewScan(ctx, "db", "t", tbl, "uid",
		release.Expr{E: lookup.NewIn(item, set, true, "p"), Where: "WHERE clause"},
		[]release.Expr{{E: lookup.NewGet(item, set, 0, types.LongText, "cat"), Where: "selected columns"}}, sealed.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := scan.Run(ctx, func(r *release.Row) {
		k, ok := r.KeyText(0)
		if !ok {
			k = []byte("<NULL>")
		}
		out = append(out, string(r.Unit())+"\x00"+string(k))
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestEnrichmentIsRowWise: on random neighbouring databases (all rows of
// one user removed) and a fixed public table, the (privacy unit, key)
// pairs a release with a public lookup and join hands to the mechanism
// differ by exactly the removed user's pairs: every other user's pairs
// are the same, so the mechanism's per-user bound applies unchanged.
func TestEnrichmentIsRowWise(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 4))
	items := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for trial := range 30 {
		var public [][2]string
		for _, it := range items {
			if r.IntN(3) > 0 {
				public = append(public, [2]string{it, fmt.Sprintf("cat%d", r.IntN(3))})
			}
		}
		users := 2 + r.IntN(20)
		var rows [][2]string
		for range 1 + r.IntN(200) {
			rows = append(rows, [2]string{fmt.Sprintf("u%d", r.IntN(users)), items[r.IntN(len(items))]})
		}
		victim := fmt.Sprintf("u%d", r.IntN(users))
		var without [][2]string
		for _, row := range rows {
			if row[0] != victim {
				without = append(without, row)
			}
		}
		full, neighbour := enrichedPairs(t, rows, public), enrichedPairs(t, without, public)
		var others []string
		for _, p := range full {
			if p[:len(victim)+1] != victim+"\x00" {
				others = append(others, p)
			}
		}
		if !slices.Equal(others, neighbour) {
			t.Fatalf("trial %d: the other users' pairs changed with %s: %q vs %q", trial, victim, others, neighbour)
		}
		// And each pair is the row's own public category.
		cat := map[string]string{}
		for _, p := range public {
			cat[p[0]] = p[1]
		}
		want := 0
		for _, row := range rows {
			if _, ok := cat[row[1]]; ok {
				want++
			}
		}
		if len(full) != want {
			t.Fatalf("trial %d: %d pairs, want %d (one per row whose item is public)", trial, len(full), want)
		}
	}
}
