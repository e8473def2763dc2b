package release

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release/sealed"
)

// # No data-dependent choice of path
//
// Whether a release reads an index, a corpus or the table is decided
// before any row is read, from the statement, the table's version and
// size, the configuration and the analyst's own history; and the index's
// output equals the scan's by construction, so the choice changes nothing
// but time. Every branch that sends a release to the scan is one of:
//
//   - the statement's shape (Indexed, IndexedCorpus, the planner's
//     fromIndexes; for a GROUP BY with aggregates groupShape and the
//     planner's groupIndexable): the kinds of its keys, aggregates and
//     filter, their types and the columns they read, public lookups;
//   - the table: versioned or not, its version, its row count and the
//     bytes of its privacy-unit column's distinct values (exprIndexBound);
//   - the configuration: limits.release_index_bytes, the release limits
//     and the number of analyst accounts (Govern);
//   - for a column's index or a corpus on the governed server, whether the
//     server's own build (Prebuild, started when the tables are loaded, in
//     a fixed order) has ended by now, and whether it fitted the columns'
//     share: see "Caches and other analysts" for this residual;
//   - for an expression's index, the account's own history: whether its
//     one build slot is busy with another expression of the same account,
//     and which of its indexes its own later builds evicted (by their
//     reservations, exprIndexBound, not their sizes);
//   - the statement's end (KILL, max_execution_time, a client that left)
//     while it waits for a build: the scan then reports the cancellation.
//
// The remaining branches are invariants, not data: setunion.Prepare fails
// only on more than 2³² users or items (a table has fewer rows) and
// NewPreparedBuilder only on options, which NewBuilder checked already.
//
// Why the index's output equals the scan's with a unit filter and an
// expression key. The scan evaluates the filter and the keys as two
// programs, each within limits.release_row_work (Scan.Run): a row is kept
// iff the filter's program stays within the bound and gives true, the
// keys' program stays within the bound, and the key does not fail. The
// index is built by the keys' program alone, on every row: it records
// exactly the rows whose keys' program stays within the bound and whose
// key does not fail, the unit's text and the key's item. A filter on the
// unit alone, deterministic, is a function of the unit's value: on every
// row of a user it has the same value, work and failures (its program
// reads that one column), so keepUsers, which evaluates the same
// expression once per user on the unit's value given back from its text,
// keeps a user iff the scan keeps that user's rows that pass the keys'
// program. The kept pairs are thus exactly the scan's, and filtered
// orders them as the scan meets them (see "The release index").
//
// # Caches and other analysts
//
// Whether a cache is warm depends on the analyst's own history and on what
// the server builds on its own, never on other analysts' statements:
//
//   - an expression's index is keyed by the account (indexKey.account):
//     built by the account's own release, waited for by its own releases
//     only, evicted by its own builds only (least recently used among its
//     own), within its own quota (quota: the expressions' share divided by
//     the number of analyst accounts) and its own build slot
//     (maxExprBuilds per account);
//   - on the governed server (Govern), the indexes of columns and the
//     n-gram corpora of text columns are built by the server itself, in
//     the background right after the tables are loaded, one after the
//     other in the order of the configuration's datasets and of their
//     columns (Prebuild); a release never starts one, and while one is not
//     built its releases scan: a function of the time since the load (and
//     of the table, through how long the builds take). Whether one fits
//     the columns' share is decided by its real size, once per load, in
//     that fixed order: this is the one remaining dependence of the path
//     on the data's values, one bit per column and load, which no
//     statement can choose or repeat;
//   - the reuse of identical releases and its waits for one in flight
//     (server/governance's join) are keyed by the analyst with
//     reuse.scope: analyst (the default), so no analyst waits on
//     another's release; with reuse.scope: database the analysts of a
//     database share their releases and their waits by design.

// Paths counts the releases that looked for an index or a corpus, by the
// path they took (tests compare deployments with it; time is not used).
type Paths struct {
	Index     int64 // a column's index
	ExprIndex int64 // an expression's index
	Corpus    int64 // a text column's n-gram corpus
	Group     int64 // a column's index, read by a GROUP BY with aggregates (groupindex.go)
	Scan      int64 // the table, after looking for one of the above
}

// Paths returns the counts of the paths releases took.
func (ix *Indexes) Paths() Paths {
	if ix == nil {
		return Paths{}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.paths
}

// count records the path of a release of s.
func (ix *Indexes) count(s *Scan, indexed bool) {
	if ix == nil {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	switch {
	case !indexed:
		ix.paths.Scan++
	case len(s.plain) == 1 && s.plain[0] == "":
		ix.paths.ExprIndex++
	default:
		ix.paths.Index++
	}
}

// countCorpus records the path of an n-gram extraction.
func (ix *Indexes) countCorpus(indexed bool) {
	if ix == nil {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if indexed {
		ix.paths.Corpus++
	} else {
		ix.paths.Scan++
	}
}

// Govern sets ix to the governed server's policy (call it before any
// release): the expressions' share is divided among accounts, and the
// indexes of columns and the corpora are built by Prebuild only.
func (ix *Indexes) Govern(accounts int) {
	if ix == nil {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.accounts, ix.prebuilt = max(accounts, 1), true
}

// PrebuildTable is a protected table whose columns' indexes and corpora
// Prebuild builds.
type PrebuildTable struct {
	DB, Name string
	Table    sql.Table // the table as the provider serves it (versioned)
	UnitCol  string
}

// Prebuild builds, in one goroutine and one after the other, the index of
// every column of the tables that a release may read from an index (text
// or integer type, not the privacy unit; the unit's type indexable), then
// the n-gram corpus of every text column: tables in the order given,
// columns in schema order. It returns at once; Close stops the builds.
func (ix *Indexes) Prebuild(tables []PrebuildTable) {
	if ix == nil {
		return
	}
	// One context for every Prebuild of ix (the load's, then each
	// reload's): Close ends them all, and a Prebuild after Close builds
	// nothing.
	done := make(chan struct{})
	ix.mu.Lock()
	if ix.stopCtx == nil {
		ix.stopCtx, ix.stop = context.WithCancel(context.Background())
	}
	ctx := ix.stopCtx
	ix.prebuiltDone = done
	ix.mu.Unlock()
	type job struct {
		key   indexKey
		name  string
		table sql.Table
		build indexBuild
	}
	var jobs []job
	for _, corpora := range []bool{false, true} {
		for _, t := range tables {
			sch := t.Table.Schema()
			ui := sch.IndexOfColName(t.UnitCol)
			if ui < 0 || !indexable(sch[ui].Type) {
				continue
			}
			if _, ok := t.Table.(versioned); !ok {
				continue
			}
			for _, c := range sch {
				if strings.EqualFold(c.Name, t.UnitCol) || !indexable(c.Type) || corpora && !types.IsText(c.Type) {
					continue
				}
				j := job{table: t.Table}
				if corpora {
					j.key = corpusKey(t.DB, t.Name, t.UnitCol, c.Name)
					j.name = fmt.Sprintf("%s.%s(n-gram corpus of %s by %s)", j.key.db, j.key.table, c.Name, t.UnitCol)
					j.build = corpusBuild(ctx, t.Table, t.DB, t.Name, t.UnitCol, c.Name)
				} else {
					var ok bool
					if j.build, ok = columnBuild(ctx, t.Table, t.DB, t.Name, t.UnitCol, c.Name); !ok {
						continue
					}
					j.key = indexKey{"", strings.ToLower(t.DB), strings.ToLower(t.Name), strings.ToLower(t.UnitCol), strings.ToLower(c.Name)}
					j.name = fmt.Sprintf("%s.%s(%s by %s)", j.key.db, j.key.table, c.Name, t.UnitCol)
				}
				jobs = append(jobs, j)
			}
		}
	}
	go func() {
		defer close(done)
		for _, j := range jobs {
			if ctx.Err() != nil {
				return
			}
			build := j.build
			e := ix.entry(j.key, j.table.(versioned).Version(), j.name, 0, startBuild(func() (any, int64, string, error) {
				if err := ctx.Err(); err != nil {
					return nil, 0, "", err
				}
				return build()
			}))
			if e != nil {
				<-e.done
			}
		}
	}()
}

// Prebuilt returns a channel closed once the last Prebuild's builds have ended
// (closed at once without Prebuild): for tests, which compare paths once
// the server's own caches are warm.
func (ix *Indexes) Prebuilt() <-chan struct{} {
	var done chan struct{}
	if ix != nil {
		ix.mu.Lock()
		done = ix.prebuiltDone
		ix.mu.Unlock()
	}
	if done == nil {
		done = make(chan struct{})
		close(done)
	}
	return done
}

// Close stops Prebuild's builds.
func (ix *Indexes) Close() {
	if ix == nil {
		return
	}
	ix.mu.Lock()
	stop := ix.stop
	ix.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// sizedTable is a table that reports its size: its row count, and an
// upper bound of the bytes of a column's distinct values' text
// (storage.Table).
type sizedTable interface {
	Len() int
	TextBytes(col string) (int64, bool)
	Distinct(col string) (int64, bool)
}

// Bytes an index holds per row at most besides the units' and items'
// texts (buildIndex's count: per pair 12 in ents, 4 in first, 8 in the
// value view and 4 per prepared view; per user 4 in offs and nnOrder, 16
// for its string, 24 for its list in the distinct view and 40 in the
// value view, 8 per prepared view; per item 16 for its string, 16 in the
// value view and 12 per prepared view). A row adds at most one pair, one
// user and one item.
const (
	indexPairBytes = 12 + 4 + 8 + 2*4
	indexUserBytes = 4 + 4 + 16 + 24 + 40 + 2*8
	indexItemBytes = 16 + 16 + 2*12
	indexRowBytes  = indexPairBytes + indexUserBytes + indexItemBytes
)

// exprIndexBound is an upper bound of Index.bytes for the index of an
// expression key of type keyType over table, computed before any row is
// read from the table's size, the type and the limits: rows × (the bytes
// per row above + the largest item: 22 for an integer's text, with its
// tag; for any other type, the largest value the limits allow, with its
// tag) + the bytes of the privacy unit's distinct texts. ok is false when
// the table does not report its size (the release then scans).
func exprIndexBound(table sql.Table, unitCol string, keyExpr sql.Expression, lim sealed.Limits) (int64, bool) {
	keyType := keyExpr.Type()
	st, ok := table.(sizedTable)
	if !ok {
		return 0, false
	}
	rows := int64(st.Len())
	item := int64(lim.MaxValueBytes)
	if item <= 0 {
		item = int64(sealed.DefaultLimits().MaxValueBytes)
	}
	item += 1 + 3 // keyItem's tag and length
	if types.IsInteger(keyType) {
		item = 1 + 1 + 20
	}
	units, ok := st.TextBytes(unitCol)
	if !ok {
		return 0, false
	}
	bound := rows*(indexRowBytes+item) + 4 + units
	if col, factor, ok := textOf(keyExpr); ok && !types.IsInteger(keyType) {
		colBytes, ok1 := st.TextBytes(col)
		items, ok2 := st.Distinct(col)
		users, ok3 := st.Distinct(unitCol)
		if ok1 && ok2 && ok3 {
			// Items are the distinct values of keyExpr, a function of one
			// column's value: at most one per distinct value of the
			// column (and NULL), each no longer than factor times it,
			// plus its tag and length; users at most the unit's distinct
			// values; pairs at most the rows.
			items, users = min(items+1, rows), min(users, rows)
			tight := rows*indexPairBytes + users*indexUserBytes + items*(indexItemBytes+1+3) + factor*colBytes + 4 + units
			bound = min(bound, tight)
		}
	}
	return bound, true
}

// maxCaseGrowth bounds how many times longer, in bytes, LOWER or UPPER
// makes a string: in UTF-8 a case mapping turns a rune of 1 byte into 1,
// of 2 into at most 3, of 3 into at most 4 (×1.5); 3 leaves room for any
// character set's encoder.
const maxCaseGrowth = 3

// textOf reports whether e is a text column, or LOWER, UPPER, SUBSTRING,
// SUBSTRING_INDEX, LEFT, RIGHT, TRIM, LTRIM or RTRIM of such an expression
// with constant other arguments: a function of one column's value whose
// text is at most factor times that value's bytes (a substring or a trim
// is no longer than its string; a case mapping at most maxCaseGrowth
// times). It returns the column's name. Anything else is not recognised
// (ok false), and its index keeps the bound of the value limit.
func textOf(e sql.Expression) (col string, factor int64, ok bool) {
	switch e := e.(type) {
	case *expression.GetField:
		if !types.IsText(e.Type()) {
			return "", 0, false
		}
		return e.Name(), 1, true
	case *function.Lower, *function.Upper:
		c, f, ok := textOf(e.Children()[0])
		return c, f * maxCaseGrowth, ok && f <= 1<<20
	case *function.Substring, *function.SubstringIndex, function.Left, function.Right, *function.Left, *function.Right,
		*function.Trim, *function.LeftTrim, *function.RightTrim:
		ch := e.Children()
		for _, a := range ch[1:] {
			if _, lit := a.(*expression.Literal); !lit {
				return "", 0, false
			}
		}
		return textOf(ch[0])
	}
	return "", 0, false
}
