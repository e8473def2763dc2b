package release

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// randomTable builds t(uid, s, n, f) with random rows: units as text or
// integers (NULL and empty ones included), a text column s with NULLs,
// empty strings and strings starting with 0x00 or 0x01, an integer column
// n with NULLs, and a double f (not indexable). Users' rows come in runs
// (as stored corpora have them) and scattered.
func randomTable(t testing.TB, r *rand.Rand, intUnits bool) *storage.Table {
	t.Helper()
	ut := storage.Text
	if intUnits {
		ut = storage.BigInt
	}
	b, err := storage.NewTableBuilder("t", []storage.Column{
		{Name: "uid", Type: ut}, {Name: "s", Type: storage.Text}, {Name: "n", Type: storage.BigInt}, {Name: "f", Type: storage.Double},
	})
	if err != nil {
		t.Fatal(err)
	}
	nUsers, nVals := 1+r.IntN(60), 1+r.IntN(40)
	unit := func() any {
		u := r.IntN(nUsers)
		switch {
		case u == 0:
			return nil
		case intUnits:
			return int64(u - nUsers/2)
		case u == 1:
			return ""
		}
		return fmt.Sprintf("user%d", u)
	}
	str := func() any {
		v := r.IntN(nVals)
		switch v {
		case 0:
			return nil
		case 1:
			return ""
		case 2:
			return "\x00zero"
		case 3:
			return "\x01one"
		}
		return fmt.Sprintf("w%d", v)
	}
	for range r.IntN(600) {
		u := unit()
		for range 1 + r.IntN(5) {
			var n any = int64(r.IntN(nVals) - 3)
			if r.IntN(9) == 0 {
				n = nil
			}
			if err := b.Append(u, str(), n, r.Float64()); err != nil {
				t.Fatal(err)
			}
		}
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// scanPairs runs a release's scan of key column col (with an optional
// filter) and groups its pairs as the planner's releases add them: by the
// key's text, NULLs skipped (values), or by keyItem (distinct).
func scanPairs(t testing.TB, tbl sql.Table, col string, filter sql.Expression, distinct bool) (setunion.Grouped, *Scan) {
	t.Helper()
	ctx := sql.NewContext(context.Background())
	sch := tbl.Schema()
	i := sch.IndexOfColName(col)
	key := expression.NewGetFieldWithTable(i, 0, sch[i].Type, "db", "t", sch[i].Name, true)
	s, err := NewScan(ctx, "db", "t", tbl, "uid", Expr{E: filter}, []Expr{{E: key}}, sealed.Limits{})
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

// TestIndexPairsEqualScanPairs is the index's property: over random tables
// and every indexable key column, the grouped pairs of each view equal the
// pairs the release's scan groups (same users and items in the same order
// of first occurrence, same lists and multiplicities); and a scan with a
// filter, or over a column that is not indexable, does not use an index.
func TestIndexPairsEqualScanPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	ix := NewIndexes(1<<30, t.Logf)
	ctx := sql.NewContext(context.Background())
	for trial := range 60 {
		tbl := randomTable(t, r, trial%2 == 1)
		for _, col := range []string{"s", "n", "uid"} {
			x, err := buildIndex(tbl, "db", "t", "uid", col)
			if err != nil {
				t.Fatal(err)
			}
			for view, distinct := range map[int]bool{DistinctView: true, ValueView: false} {
				want, s := scanPairs(t, tbl, col, nil, distinct)
				if got := x.Grouped(view); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("trial %d column %s view %d:\nindex %v\nscan  %v", trial, col, view, got, want)
				}
				// Through the cache, as a release gets it.
				y, ok := s.Indexed(ctx, ix, 0)
				if !ok || fmt.Sprint(y.Grouped(view)) != fmt.Sprint(want) {
					t.Fatalf("trial %d column %s: Indexed ok=%v", trial, col, ok)
				}
			}
			// A filter on the privacy unit alone: the pairs of the users
			// it keeps, as the filtered scan groups them.
			sch := tbl.Schema()
			uf := expression.NewGetFieldWithTable(0, 0, sch[0].Type, "db", "t", "uid", true)
			for _, filter := range unitFilters(r, uf) {
				for view, distinct := range map[int]bool{DistinctView: true, ValueView: false} {
					want, s := scanPairs(t, tbl, col, filter, distinct)
					got, ok := s.IndexedPairs(ctx, ix, 0, view)
					if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("trial %d column %s filter %s view %d (ok=%v):\nindex %v\nscan  %v", trial, col, filter, view, ok, got, want)
					}
				}
			}
			// A filter reading another column scans.
			k := sch.IndexOfColName("f")
			filter := expression.NewGreaterThan(expression.NewGetFieldWithTable(k, 0, sch[k].Type, "db", "t", "f", true), expression.NewLiteral(0.5, types.Float64))
			if _, s := scanPairs(t, tbl, col, filter, false); func() bool { _, ok := s.Indexed(ctx, ix, 0); return ok }() {
				t.Fatalf("a scan filtered on another column used the index")
			}
		}
		if _, s := scanPairs(t, tbl, "f", nil, false); func() bool { _, ok := s.Indexed(ctx, ix, 0); return ok }() {
			t.Fatalf("a DOUBLE column was indexed")
		}
	}
	if ix.Bytes() <= 0 {
		t.Fatal("no index kept")
	}
}

// unitFilters returns filters on the unit column uf: comparisons, NULL
// tests, arithmetic and string functions (with values that fail or are
// NULL for some units).
func unitFilters(r *rand.Rand, uf sql.Expression) []sql.Expression {
	k := int64(r.IntN(40) - 20)
	return []sql.Expression{
		expression.NewLessThanOrEqual(uf, expression.NewLiteral(k, types.Int64)),
		expression.NewGreaterThan(uf, expression.NewLiteral(fmt.Sprintf("user%d", r.IntN(40)), types.LongText)),
		expression.NewNot(expression.NewIsNull(uf)),
		expression.NewEquals(expression.NewMod(uf, expression.NewLiteral(int64(3), types.Int64)), expression.NewLiteral(int64(1), types.Int64)),
		expression.NewLike(uf, expression.NewLiteral("%1%", types.LongText), nil),
	}
}

// TestIndexesFollowReloads checks the cache's keying: a table built again
// (a new Version) gets a new index and the old one's memory is released;
// a statement still running over the replaced table scans; an index over
// the bound is not kept, and its releases scan.
func TestIndexesFollowReloads(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ctx := sql.NewContext(context.Background())
	var logs []string
	ix := NewIndexes(1<<30, func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
	t1 := randomTable(t, r, false)
	_, s1 := scanPairs(t, t1, "s", nil, false)
	x1, ok := s1.Indexed(ctx, ix, 0)
	if !ok {
		t.Fatal("no index")
	}
	if again, _ := s1.Indexed(ctx, ix, 0); again != x1 {
		t.Fatal("the index was built twice")
	}
	// A copy of the table (projection, guard) shares the index.
	_, s1b := scanPairs(t, t1.WithRowCounts(storage.HiddenCounts), "s", nil, false)
	if again, _ := s1b.Indexed(ctx, ix, 0); again != x1 {
		t.Fatal("a copy of the table got another index")
	}
	t2 := randomTable(t, r, false) // the reload
	want2, s2 := scanPairs(t, t2, "s", nil, false)
	x2, ok := s2.Indexed(ctx, ix, 0)
	if !ok || x2 == x1 || fmt.Sprint(x2.Grouped(ValueView)) != fmt.Sprint(want2) {
		t.Fatal("the reloaded table did not get its own index")
	}
	if ix.Bytes() != x2.Bytes() {
		t.Fatalf("indexes hold %d bytes, want the new index's %d", ix.Bytes(), x2.Bytes())
	}
	if _, ok := s1.Indexed(ctx, ix, 0); ok {
		t.Fatal("a scan of the replaced table got an index")
	}
	// Over the bound: not kept.
	small := NewIndexes(1, func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
	if _, ok := s2.Indexed(ctx, small, 0); ok || small.Bytes() != 0 {
		t.Fatal("an index over the bound was kept")
	}
	if !strings.Contains(strings.Join(logs, "\n"), "does not fit") {
		t.Fatalf("logs: %q", logs)
	}
	// Disabled.
	if NewIndexes(0, nil) != nil || NewIndexes(-1, nil) != nil {
		t.Fatal("a bound ≤ 0 must disable the indexes")
	}
	var none *Indexes
	if _, ok := s2.Indexed(ctx, none, 0); ok || none.Bytes() != 0 {
		t.Fatal("a nil cache indexed")
	}
}

// TestIndexWaitEndsWithContext: a release waiting for a build that its
// context outlives… does not: a cancelled statement stops waiting (and its
// scan reports the cancellation).
func TestIndexWaitEndsWithContext(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	tbl := randomTable(t, r, false)
	_, s := scanPairs(t, tbl, "s", nil, false)
	ix := NewIndexes(1<<30, nil)
	// An entry whose build never ends.
	e := &indexEntry{version: tbl.Version(), done: make(chan struct{})}
	ix.entries[indexKey{"db", "t", "uid", "s"}] = e
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := s.Indexed(sql.NewContext(cctx), ix, 0); ok {
		t.Fatal("a cancelled wait returned an index")
	}
}
