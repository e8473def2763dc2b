package release

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Indexed returns the index of key i of the scan when the release reads
// it instead of the table. Whether it does is decided before any row is
// read, from the statement, the table's version and size, the
// configuration and the account's own history, never from the rows (see
// "No data-dependent choice of path"):
//
//   - the shape: the scan has no filter or one on the privacy unit alone
//     (see IndexedPairs), its privacy unit and every key are plain
//     columns of text or integer types, or it has one key that is an
//     indexable expression; the table's rows never change (versioned);
//   - for a column: the index is there, built by the server itself
//     (Prebuild) when ix is governed, or built on first use otherwise;
//   - for an expression: the static bound of its index (exprIndexBound,
//     from the table's size, the key's type and the limits) fits the
//     account's quota, and the account builds no other expression's
//     index at the time.
//
// ok is false otherwise, and when ctx ended while waiting for a build: the
// release then runs the scan, which gives the same result.
func (s *Scan) Indexed(ctx *sql.Context, ix *Indexes, i int) (_ *Index, ok bool) {
	if ix == nil || (s.filter >= 0 && s.unitFilter == nil) || s.plain == nil {
		return nil, false
	}
	// Every key plain, not only key i: another key's evaluation could
	// otherwise skip a row (its work limit) that the index holds. Or one
	// key, an expression.
	var expr string
	for k, c := range s.plain {
		if c == "" {
			if len(s.plain) != 1 || s.exprKey[k] == "" {
				return nil, false
			}
			expr = s.exprKey[k]
		}
	}
	v, isVersioned := s.src.(versioned)
	if !isVersioned {
		return nil, false
	}
	if expr == "" {
		key := indexKey{"", strings.ToLower(s.db), strings.ToLower(s.name), strings.ToLower(s.unitCol), strings.ToLower(s.plain[i])}
		x, ok := ix.column(ctx, key, v.Version(), s.src, s.db, s.name, s.unitCol, s.plain[i])
		if !ok {
			return nil, false
		}
		return x.(*Index), true
	}
	// The key's value may depend on the session variables and the day it
	// reads and on the limits: expr, its canonical key (indexExprKey),
	// holds them, and the build evaluates under a copy of this session's
	// variables. And the index is the account's own.
	key := indexKey{account(ctx), strings.ToLower(s.db), strings.ToLower(s.name), strings.ToLower(s.unitCol), exprKeyPrefix + expr}
	bound, ok := exprIndexBound(s.src, s.unitCol, s.keyExprs[i], s.lim)
	if !ok {
		return nil, false
	}
	name := fmt.Sprintf("%s.%s(%s by %s, account %s)", key.db, key.table, s.keyExprs[i], s.unitCol, key.account)
	// The build evaluates the analyst's expression on every row: it ends
	// with the statement that started it (KILL, max_execution_time, a
	// client that left), like the scan it replaces, and is tried again by
	// a later release.
	table, db, tname, unitCol, keyExpr, lim := s.src, s.db, s.name, s.unitCol, s.keyExprs[i], s.lim
	start := func() indexBuild {
		// The copy of the session is made now, while the statement waits
		// for the build, not when the build runs.
		bctx := sealed.Detached(ctx, lim).WithContext(ctx.Context)
		return func() (any, int64, string, error) {
			idx, err := buildIndex(bctx, table, db, tname, unitCol, keyExpr, lim)
			if err != nil {
				return nil, 0, "", err
			}
			return idx, idx.bytes, indexSummary(idx), nil
		}
	}
	x, ok := ix.get(ctx, key, v.Version(), name, bound, start)
	if !ok {
		return nil, false
	}
	return x.(*Index), true
}

// IndexedPairs returns the grouped pairs of key i of the scan, prepared
// for releases, for a release of kind view (DistinctView, ValueView), from
// the release index,
// when Indexed gives one: all of them, or, with a filter on the privacy
// unit alone, the pairs of the users the filter keeps (evaluated sealed,
// once per user, in the analyst's session as the scan would per row), in
// the order of first occurrence among the rows it keeps.
func (s *Scan) IndexedPairs(ctx *sql.Context, ix *Indexes, i, view int) (*setunion.Prepared, bool) {
	p, ok := s.indexedPairs(ctx, ix, i, view)
	ix.count(s, ok)
	return p, ok
}

func (s *Scan) indexedPairs(ctx *sql.Context, ix *Indexes, i, view int) (*setunion.Prepared, bool) {
	x, ok := s.Indexed(ctx, ix, i)
	if !ok {
		return nil, false
	}
	if s.filter < 0 {
		return x.Prepared(view), true
	}
	keep, ok := s.keepUsers(ctx, x)
	if !ok {
		return nil, false // ctx ended: the scan reports it
	}
	// Prepare fails only on a malformed grouping (more than 2³² users or
	// items, which a table of fewer rows cannot give, or a bug): not on
	// the rows' values.
	p, err := x.filteredPrepared(view, keep)
	return p, err == nil
}

// keepUsers evaluates the unit filter for every user of x, as Scan.Run
// evaluates the filter's program on a row: a row whose evaluation is
// skipped (its work), fails, is NULL or false is left out. A filter that
// is one comparison of a BIGINT unit with a constant is compared natively,
// with the same result (keepCompared, unitcmp.go). ok is false only when
// ctx ended.
func (s *Scan) keepUsers(ctx *sql.Context, x *Index) (keep []bool, ok bool) {
	if s.unitCmp != nil {
		return s.keepCompared(ctx, x)
	}
	ev := s.unitFilter.NewEvaluator(ctx)
	sctx := ev.Context()
	row := make(sql.Row, len(s.src.Schema()))
	typ := s.src.Schema()[s.unitAt].Type
	keep = make([]bool, len(x.users))
	for u, name := range x.users {
		if u%checkRows == 0 && ctx.Err() != nil {
			return nil, false // the scan reports the cancellation
		}
		// A unit's text is its stored value (TEXT) or the decimal text
		// of its int64 (BIGINT, unitValueType): it parses back, always.
		v, _ := unitValue(typ, name)
		row[s.unitAt] = v
		keep[u] = func() (pass bool) {
			defer func() {
				if recover() != nil {
					pass = false
				}
			}()
			if !ev.Row(row) {
				return false
			}
			f, ok := ev.Value(0)
			if !ok || f == nil {
				return false
			}
			b, err := sql.ConvertToBool(sctx, f)
			return err == nil && b
		}()
	}
	return keep, true
}

// keepCompared is keepUsers for a filter that is one comparison of a
// BIGINT unit with a constant (unitcmp.go).
func (s *Scan) keepCompared(ctx *sql.Context, x *Index) (keep []bool, ok bool) {
	keep = make([]bool, len(x.users))
	for u, name := range x.users {
		if u%checkRows == 0 && ctx.Err() != nil {
			return nil, false // the scan reports the cancellation
		}
		keep[u] = s.unitCmp.keep(name)
	}
	return keep, true
}

// unitValueType reports whether a privacy unit of type t can be given back
// its stored value from its text (unitValue): text, or a BIGINT (stored as
// int64).
func unitValueType(t sql.Type) bool {
	return t != nil && (types.IsText(t) && !types.IsEnum(t) && !types.IsSet(t) || t.Equals(types.Int64))
}

// unitValue returns the stored value of a unit from its text.
func unitValue(t sql.Type, text string) (any, bool) {
	if types.IsText(t) {
		return text, true
	}
	n, err := strconv.ParseInt(text, 10, 64)
	return n, err == nil
}

// readsOnly reports whether e reads column col of the row and no other,
// and is deterministic.
func readsOnly(e sql.Expression, col int) bool {
	ok := deterministic(e)
	transform.InspectExpr(e, func(e sql.Expression) bool {
		if gf, isField := e.(*expression.GetField); isField && gf.Index() != col {
			ok = false
		}
		return !ok
	})
	return ok
}

// deterministic reports whether no node of e says it is not
// deterministic (the allow-list admits none; defence in depth).
func deterministic(e sql.Expression) bool {
	ok := true
	transform.InspectExpr(e, func(e sql.Expression) bool {
		if nd, isND := e.(interface{ IsNonDeterministic() bool }); isND && nd.IsNonDeterministic() {
			ok = false
		}
		return !ok
	})
	return ok
}
