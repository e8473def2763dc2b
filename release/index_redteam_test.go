package release

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/go-mysql-server/sql/variables"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// scanPairsIn runs a release's scan of key (with an optional filter) in
// the analyst's session ctx and groups its pairs as scanPairs does.
func scanPairsIn(t testing.TB, ctx *sql.Context, tbl sql.Table, key, filter sql.Expression, distinct bool, lim sealed.Limits) (setunion.Grouped, *Scan) {
	t.Helper()
	s, err := NewScan(ctx, "db", "t", tbl, "uid", Expr{E: filter}, []Expr{{E: key}}, lim)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := setunion.NewBuilder(setunion.Defaults())
	var item []byte
	if err := s.Run(ctx, func(row *Row) {
		v, ok := row.Key(0)
		if !ok {
			return
		}
		text, isText := row.KeyText(0)
		if distinct {
			item = keyItem(item[:0], v, text)
			b.AddBytes(row.Unit(), item)
		} else if isText {
			b.AddBytes(row.Unit(), text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return b.Grouped(), s
}

// TestIndexExprVariables: a key expression may read user variables and
// system variables (sealed.Compile reads them once, as constants, in the
// analyst's session). The index of such a key must hold what the scan
// would give in the session that reads it — the build runs in a sealed
// copy of the session, which has no user variables — and two sessions
// whose variables differ must neither share an index nor a reuse
// specification.
func TestIndexExprVariables(t *testing.T) {
	if sql.SystemVariables == nil {
		variables.InitSystemVariables()
	}
	r := rand.New(rand.NewPCG(21, 22))
	tbl := randomTable(t, r, false)
	s := column(tbl, "s")
	keys := []sql.Expression{
		mustFn(function.NewConcat(s, expression.NewUserVarWithType("v", types.LongText))),
		mustFn(function.NewConcat(s, expression.NewSystemVar("max_allowed_packet", sql.GetMysqlScope(sql.SystemVariableScope_Session), "max_allowed_packet"))),
		mustFn(function.NewConcat(s, expression.NewSystemVar("autocommit", sql.GetMysqlScope(sql.SystemVariableScope_Session), "autocommit"))),
	}
	session := func(v string, autocommit bool) *sql.Context {
		ctx := sql.NewContext(context.Background())
		if err := ctx.SetUserVariable(ctx, "v", v, types.LongText); err != nil {
			t.Fatal(err)
		}
		if err := ctx.SetSessionVariable(ctx, "autocommit", autocommit); err != nil {
			t.Fatal(err)
		}
		return ctx
	}
	for _, key := range keys {
		ix := NewIndexes(1<<30, nil)
		var specs []string
		for _, ctx := range []*sql.Context{session("-A", true), session("-B", false)} {
			for view, distinct := range map[int]bool{DistinctView: true, ValueView: false} {
				want, sc := scanPairsIn(t, ctx, tbl, key, nil, distinct, sealed.Limits{})
				got, ok := sc.IndexedPairs(ctx, ix, 0, view)
				if !ok {
					t.Fatalf("key %s: no index", key)
				}
				if fmt.Sprint(got.Grouped()) != fmt.Sprint(want) {
					t.Errorf("key %s view %d: the index differs from the scan:\nindex %v\nscan  %v", key, view, got.Grouped(), want)
				}
				if view == DistinctView {
					specs = append(specs, sc.Spec())
				}
			}
		}
		if strings.Contains(key.String(), "max_allowed_packet") {
			continue // the same value in both sessions
		}
		if specs[0] == specs[1] {
			t.Errorf("key %s: two sessions whose variables differ have the same scan specification (a release of one would be reused for the other):\n%s", key, specs[0])
		}
	}
}

// TestIndexExprClock: an allowed expression can depend on the date (a
// TIME converted to a date takes today's, as in MySQL): an index built on
// one day must not serve a release of the next, which would then differ
// from its scan (and whether a release reads the index or scans depends on
// the data: its size, the rows' work).
func TestIndexExprClock(t *testing.T) {
	b, err := storage.NewTableBuilder("t", []storage.Column{{Name: "uid", Type: storage.Text}, {Name: "s", Type: storage.Text}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]string{{"a", "10:00:00"}, {"b", "11:30:00"}, {"c", "x"}} {
		if err := b.Append(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	key := function.NewDateFormat(function.NewTime(column(tbl, "s")), expression.NewLiteral("%Y-%m-%d %H", types.LongText))
	ix := NewIndexes(1<<30, nil)
	day := time.Date(2024, 2, 28, 12, 0, 0, 0, time.Local)
	for d := range 3 {
		now := day.AddDate(0, 0, d)
		_ = sql.RunWithNowFunc(func() time.Time { return now }, func() error {
			ctx := sql.NewContext(context.Background())
			want, sc := scanPairsIn(t, ctx, tbl, key, nil, false, sealed.Limits{})
			got, ok := sc.IndexedPairs(ctx, ix, 0, ValueView)
			if ok && fmt.Sprint(got.Grouped()) != fmt.Sprint(want) {
				t.Errorf("%s: the index differs from the scan:\nindex %v\nscan  %v", now.Format(time.DateOnly), got.Grouped(), want)
			}
			return nil
		})
	}
}

// TestIndexExprEntriesBounded: an expression's index that is not kept
// (over the bound, or its build failed) must not leave an entry behind for
// good: any expression text makes one, so an analyst who sends many would
// grow the cache's map — and hold every text — without bound.
func TestIndexExprEntriesBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	tbl := randomTable(t, r, false)
	ctx := sql.NewContext(context.Background())
	ix := NewIndexes(1, nil) // nothing fits
	pad := strings.Repeat("p", 4096)
	n := trials(50, 10)
	for i := range n {
		key := mustFn(function.NewConcat(column(tbl, "s"), expression.NewLiteral(fmt.Sprintf("%s%d", pad, i), types.LongText)))
		_, sc := scanPairsIn(t, ctx, tbl, key, nil, false, sealed.Limits{})
		if _, ok := sc.Indexed(ctx, ix, 0); ok {
			t.Fatal("an index over the bound was kept")
		}
	}
	ix.mu.Lock()
	entries := len(ix.entries)
	ix.mu.Unlock()
	if entries > maxExprBuilds {
		t.Errorf("%d expressions whose index was not kept left %d entries in the cache", n, entries)
	}
}

// TestIndexExprKeyBytesCounted: the text of an expression (up to
// max_statement_bytes, 1 MiB) is held by its cache entry: it must count
// against the expressions' share, or many long expressions with small
// indexes hold memory far beyond limits.release_index_bytes.
func TestIndexExprKeyBytesCounted(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	tbl := randomTable(t, r, false)
	ctx := sql.NewContext(context.Background())
	const limit = 1 << 20
	ix := NewIndexes(limit, nil)
	pad := strings.Repeat("p", 64<<10)
	for i := range 40 {
		// A long text, a small index: IF(FALSE, '<text>', s).
		key := function.NewIf(expression.NewLiteral(false, types.Boolean), expression.NewLiteral(fmt.Sprintf("%s%d", pad, i), types.LongText), column(tbl, "s"))
		_, sc := scanPairsIn(t, ctx, tbl, key, nil, false, sealed.Limits{})
		sc.Indexed(ctx, ix, 0)
	}
	ix.mu.Lock()
	var held int64
	for k, e := range ix.entries {
		held += int64(len(k.key))
		if x, ok := e.val.(*Index); ok {
			held += x.Bytes()
		}
	}
	ix.mu.Unlock()
	if held > limit/exprShare {
		t.Errorf("expressions' entries hold %d bytes (texts and indexes), over their share %d of the bound %d", held, limit/exprShare, limit)
	}
}
