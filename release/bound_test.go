package release

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/storage"
)

// TestExprIndexBoundHolds: the static bound of an expression's index
// (exprIndexBound, with textOf's tighter bound for substrings, trims and
// case mappings of one text column) is at least the index's real size, on
// random tables whose values mix ASCII with runes whose case mapping grows
// in bytes (İ, ẞ, Ⱥ). A bound below the real size would send the release
// to the scan for a data-dependent reason (Indexes.build's internal
// error), so it must hold on every table.
func TestExprIndexBoundHolds(t *testing.T) {
	runes := []string{"a", "Z", "İ", "ẞ", "Ⱥ", "ȿ", "ı", "ſ", "K", "é", "日", "😀"}
	lit := func(v any, typ sql.Type) sql.Expression { return expression.NewLiteral(v, typ) }
	tables := 40
	if testing.Short() {
		tables = 8
	}
	for seed := range tables {
		r := rand.New(rand.NewPCG(uint64(seed), 77))
		b, err := storage.NewTableBuilder("t", []storage.Column{{Name: "uid", Type: storage.Text}, {Name: "s", Type: storage.Text}})
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + r.IntN(400) {
			var s []byte
			for range r.IntN(12) {
				s = append(s, runes[r.IntN(len(runes))]...)
			}
			if err := b.Append(fmt.Sprintf("u%d", r.IntN(50)), string(s)); err != nil {
				t.Fatal(err)
			}
		}
		tbl, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		s := column(tbl, "s")
		exprs := []sql.Expression{
			function.NewLower(s),
			function.NewUpper(function.NewLower(s)),
			function.NewLower(function.NewUpper(function.NewLower(s))),
			function.NewLeft(function.NewUpper(s), lit(int64(3), types.Int64)),
			function.NewSubstringIndex(function.NewLower(s), lit(" ", types.LongText), lit(int64(1), types.Int64)),
		}
		for _, e := range exprs {
			if _, _, ok := textOf(e); !ok {
				t.Fatalf("%s: not recognised", e)
			}
			_, sc := scanExprPairs(t, tbl, e, nil, false, sealed.Limits{})
			bound, ok := exprIndexBound(sc.src, sc.unitCol, sc.keyExprs[0], sc.lim)
			if !ok {
				t.Fatal("no bound")
			}
			idx, err := buildIndex(sql.NewContext(t.Context()), tbl, "db", "t", "uid", sc.keyExprs[0], sc.lim)
			if err != nil {
				t.Fatal(err)
			}
			if idx.bytes > bound {
				t.Errorf("seed %d, %s: index of %d bytes over its bound %d", seed, e, idx.bytes, bound)
			}
		}
	}
}
