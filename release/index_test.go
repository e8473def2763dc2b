package release

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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
	return scanExprPairs(t, tbl, column(tbl, col), filter, distinct, sealed.Limits{})
}

// column returns a reference to column col of tbl.
func column(tbl sql.Table, col string) sql.Expression {
	sch := tbl.Schema()
	i := sch.IndexOfColName(col)
	return expression.NewGetFieldWithTable(i, 0, sch[i].Type, "db", "t", sch[i].Name, true)
}

// scanExprPairs is scanPairs for a key expression, under limits lim.
func scanExprPairs(t testing.TB, tbl sql.Table, key, filter sql.Expression, distinct bool, lim sealed.Limits) (setunion.Grouped, *Scan) {
	t.Helper()
	return scanPairsIn(t, sql.NewContext(context.Background()), tbl, key, filter, distinct, lim)
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
	for trial := range trials(60, 12) {
		tbl := randomTable(t, r, trial%2 == 1)
		for _, col := range []string{"s", "n", "uid"} {
			x, err := buildIndex(ctx, tbl, "db", "t", "uid", column(tbl, col), sealed.DefaultLimits())
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
					if !ok || fmt.Sprint(got.Grouped()) != fmt.Sprint(want) {
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
	ix.entries[indexKey{"", "db", "t", "uid", "s"}] = e
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := s.Indexed(sql.NewContext(cctx), ix, 0); ok {
		t.Fatal("a cancelled wait returned an index")
	}
}

// keyExprs returns key expressions over t's columns: string and integer
// functions, some NULL or failing on some rows, one reading the unit.
func keyExprs(tbl sql.Table) []sql.Expression {
	s, n, uid := column(tbl, "s"), column(tbl, "n"), column(tbl, "uid")
	lit := func(v any) sql.Expression {
		if _, ok := v.(string); ok {
			return expression.NewLiteral(v, types.LongText)
		}
		return expression.NewLiteral(v, types.Int64)
	}
	return []sql.Expression{
		function.NewLower(s),
		mustFn(function.NewConcat(s, lit("-x"))),
		mustFn(function.NewConcat(uid, lit(":"), s)),
		function.NewSubstringIndex(s, lit("w"), lit(int64(-1))),
		expression.NewArithmetic(n, lit(int64(2)), "div"), // NULL when n is NULL
		expression.NewArithmetic(lit(int64(10)), n, "%"),  // NULL when n = 0
		mustFn(function.NewLeftPad(s, n, lit("ab"))),      // large for big n, NULL for NULL n
	}
}

func mustFn(e sql.Expression, err error) sql.Expression {
	if err != nil {
		panic(err)
	}
	return e
}

// TestIndexExprPairsEqualScanPairs is the property of the index of an
// expression key: over random tables, expressions and unit filters, and
// under a tight work limit that skips some rows, IndexedPairs gives
// exactly the pairs the release's scan groups, and never declines (the
// choice of path depends on no row: "No data-dependent choice of path").
func TestIndexExprPairsEqualScanPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 5))
	ix := NewIndexes(1<<30, t.Logf)
	ctx := sql.NewContext(context.Background())
	used, declined := 0, 0
	for trial := range trials(18, 6) {
		tbl := randomTable(t, r, trial%2 == 1)
		lim := sealed.Limits{}
		if trial%3 == 2 {
			lim.MaxRowWork = 6 + r.IntN(10) // some rows over it, with or without the filter
		}
		uf := column(tbl, "uid")
		for _, key := range keyExprs(tbl) {
			filters := append([]sql.Expression{nil}, unitFilters(r, uf)...)
			for _, filter := range filters {
				for view, distinct := range map[int]bool{DistinctView: true, ValueView: false} {
					want, s := scanExprPairs(t, tbl, key, filter, distinct, lim)
					got, ok := s.IndexedPairs(ctx, ix, 0, view)
					switch {
					case !ok:
						declined++
						t.Errorf("trial %d key %s filter %v view %d lim %+v: the index was declined", trial, key, filter, view, lim)
					case fmt.Sprint(got.Grouped()) != fmt.Sprint(want):
						t.Fatalf("trial %d key %s filter %v view %d lim %+v:\nindex %v\nscan  %v", trial, key, filter, view, lim, got, want)
					default:
						used++
					}
				}
			}
		}
	}
	if used == 0 || declined != 0 {
		t.Fatalf("index used %d times, declined %d", used, declined)
	}
	t.Logf("%d releases from expression indexes equal to the scan", used)
}

// TestIndexExprKeyedBySession: the index of an expression is kept per
// value of the session variables its evaluation reads (canonDeps): MD5's
// result takes the connection's collation, so a session with another
// collation_connection builds its own; sql_mode changes no evaluation, so
// a session with another one shares it.
func TestIndexExprKeyedBySession(t *testing.T) {
	if sql.SystemVariables == nil {
		variables.InitSystemVariables()
	}
	r := rand.New(rand.NewPCG(7, 8))
	tbl := randomTable(t, r, false)
	ix := NewIndexes(1<<30, nil)
	key := function.NewMD5(column(tbl, "s"))
	indexIn := func(name, value string) *Index {
		ctx := sql.NewContext(context.Background())
		if name != "" {
			if err := ctx.SetSessionVariable(ctx, name, value); err != nil {
				t.Fatalf("SET %s = %s: %v", name, value, err)
			}
		}
		s, err := NewScan(ctx, "db", "t", tbl, "uid", Expr{}, []Expr{{E: key}}, sealed.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		x, ok := s.Indexed(ctx, ix, 0)
		if !ok || x == nil {
			t.Fatalf("no expression index (ok=%v)", ok)
		}
		return x
	}
	x1 := indexIn("", "")
	if again := indexIn("", ""); again != x1 {
		t.Fatal("the same expression in the same session got another index")
	}
	if x := indexIn("sql_mode", "ANSI_QUOTES"); x != x1 {
		t.Error("another sql_mode, which MD5 does not read, built another index")
	}
	if x := indexIn("collation_connection", "utf8mb4_general_ci"); x == x1 {
		t.Error("another collation_connection, which MD5's result takes, shared the index")
	}
}

// TestIndexExprEviction: when an index does not fit, the least recently
// used indexes of expressions make room (any text makes one, so they must
// not fill the bound for good); a column's index is never dropped.
func TestIndexExprEviction(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	tbl := randomTable(t, r, false)
	ctx := sql.NewContext(context.Background())
	scanOf := func(key sql.Expression) *Scan {
		_, s := scanExprPairs(t, tbl, key, nil, false, sealed.Limits{})
		return s
	}
	col := scanOf(column(tbl, "s"))
	lower := scanOf(function.NewLower(column(tbl, "s")))
	upper := scanOf(function.NewUpper(column(tbl, "s")))
	bound := func(sc *Scan) int64 {
		b, ok := exprIndexBound(sc.src, sc.unitCol, sc.keyExprs[0], sc.lim)
		if !ok {
			t.Fatal("no bound")
		}
		return b
	}
	// Room in the account's quota for one expression's reservation (its
	// static bound), and the column's index in the columns' share.
	var logs []string
	reserve := bound(lower) + 4096
	ix := NewIndexes(reserve*3/2*exprShare, func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
	for _, s := range []*Scan{col, lower, upper, col} {
		if _, ok := s.Indexed(ctx, ix, 0); !ok {
			t.Fatalf("an index was not kept: %q", logs)
		}
	}
	var kept []string
	for k, e := range ix.entries {
		if e.counted > 0 {
			kept = append(kept, k.key)
		}
	}
	if len(kept) != 2 || !slices.ContainsFunc(kept, func(k string) bool { return k == "s" }) ||
		!slices.ContainsFunc(kept, func(k string) bool { return strings.Contains(k, "Upper") }) {
		t.Fatalf("kept %q, want the column's index and upper's", kept)
	}
	if ix.Bytes() > ix.limit || ix.exprUsed[""] > ix.quota() {
		t.Fatalf("%d bytes (%d of expressions) over the bound %d", ix.Bytes(), ix.exprUsed[""], ix.limit)
	}
	// An expression whose bound exceeds the quota is not built at all:
	// no entry, nothing evicted (decided before reading a row).
	tight := NewIndexes(bound(lower)*exprShare-1, nil)
	if _, ok := lower.Indexed(ctx, tight, 0); ok || tight.Bytes() != 0 || len(tight.entries) != 0 {
		t.Fatal("an expression index over the account's quota was started")
	}
	if !strings.Contains(strings.Join(logs, "\n"), "dropped the least recently used") {
		t.Fatalf("logs: %q", logs)
	}
}

// TestIndexExprBuildsBounded: while an expression's index is being built
// (outside every statement, where no KILL reaches it), a release of
// another expression scans instead of starting a second build; a column's
// index is still built.
func TestIndexExprBuildsBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	tbl := randomTable(t, r, false)
	ctx := sql.NewContext(context.Background())
	ix := NewIndexes(1<<30, nil)
	ix.building[account(ctx)] = maxExprBuilds // one under way
	_, lower := scanExprPairs(t, tbl, function.NewLower(column(tbl, "s")), nil, false, sealed.Limits{})
	if _, ok := lower.Indexed(ctx, ix, 0); ok || len(ix.entries) != 0 {
		t.Fatalf("a second expression build started (%d entries)", len(ix.entries))
	}
	_, col := scanPairs(t, tbl, "s", nil, false)
	if _, ok := col.Indexed(ctx, ix, 0); !ok {
		t.Fatal("a column's index was not built")
	}
	delete(ix.building, account(ctx))
	if _, ok := lower.Indexed(ctx, ix, 0); !ok || len(ix.building) != 0 {
		t.Fatalf("no expression index once the other build ended (building %v)", ix.building)
	}
}

// TestIndexExprBuildEndsWithStatement: the build of an expression's index
// (which evaluates the analyst's expression on every row) ends with the
// statement that started it, leaves no entry behind, and a later release
// builds it.
func TestIndexExprBuildEndsWithStatement(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	tbl := randomTable(t, r, false)
	ix := NewIndexes(1<<30, nil)
	_, lower := scanExprPairs(t, tbl, function.NewLower(column(tbl, "s")), nil, false, sealed.Limits{})
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := lower.Indexed(sql.NewContext(cctx), ix, 0); ok {
		t.Fatal("a cancelled statement got an index")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		ix.mu.Lock()
		building, entries := len(ix.building), len(ix.entries)
		ix.mu.Unlock()
		if building == 0 && entries == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the build did not end with its statement: %d building, %d entries", building, entries)
		}
	}
	if _, ok := lower.Indexed(sql.NewContext(context.Background()), ix, 0); !ok {
		t.Fatal("a later release did not build the index")
	}
}
