package release

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// # The release index
//
// Protected tables are read-only, so the pairs a release groups — per
// privacy unit, the distinct values of a key column — are the same for
// every release over the same column that reads every row. An Index keeps
// them, grouped and interned, per (table version, privacy-unit column, key
// column): built by one scan of the table — on the governed server by the
// server itself after loading (Prebuild), elsewhere on first use — then
// handed to the mechanism by every later release
// (setunion.NewPreparedBuilder) instead of scanning and grouping the table
// again.
//
// Why the output is the same. A release may read an index only when its
// scan evaluates nothing but, at most, a filter on the privacy unit alone:
// the privacy unit and every key are plain columns (Scan.Indexed). The
// sealed evaluation of such a scan computes no value for them — a column
// reference is read as it is, with no work or size limit applying — so,
// without a filter, the scan hands the mechanism, row by row, the unit's
// text and the key's value, skipping rows whose unit is NULL or empty:
// exactly what the index build (the same Scan.Run) records. A filter that
// reads only the unit column and is deterministic has, on every row of a
// user, the same value, work and failures (they depend on the unit's value
// only, given back exactly from its text for TEXT and BIGINT units), so
// evaluating it once per user, sealed and in the analyst's session, keeps
// exactly the rows the scan keeps: all rows of the users it keeps. Their
// pairs are then renumbered as the filtered scan meets them: users keep
// their order (a user's first kept row is its first row), and items are
// ordered by their first row among the kept users' rows, which the index
// records per pair. The
// index keeps those pairs in the state a setunion.Builder reaches after
// grouping them (users and items in order of first occurrence, each user's
// distinct items by ascending id with their multiplicities), and
// NewGroupedBuilder (and NewPreparedBuilder, which skips its checks: the
// index prepares each view once) is proven (its tests, and setunion's
// TestReleaseGolden) to release exactly what the
// builder fed pair by pair releases, for the same random source. The two
// ways a release names items are both derived from the one recorded
// sequence: the item of a SELECT DISTINCT key (the planner's encoding of a
// single key, keyItem) and the value of a DP_SET_UNION item, where NULLs are
// skipped — which removes the NULL item and changes the order of first
// occurrence of users, so the index also records the order in which users
// first hold a non-NULL value.
//
// An expression key. A release with one key that is an expression (with a
// text or integer value, deterministic, and allowed, as every release
// expression must be) may read the index of that expression: built by the
// same sealed program (unit and key, no filter), under a copy of the first
// session's variables (sealed.Detached) and the release's limits, and
// kept per account (the analyst's own: "Caches and other analysts", in
// paths.go) and per canonical key (indexExprKey, "Canonical keys" in
// canon.go: the analysed tree, with variables replaced by their values by
// sealed.Resolve, the limits, and the values of the session variables and
// the date the expression reads — a TIME converted to a date takes
// today's), so a release reads only an index whose evaluation is its own.
// The scan evaluates its filter and its keys
// as two programs, each within the row-work bound (Scan.Run), so the keys'
// program is the same with or without a filter: without one the index
// build and the scan are the same program, row for row; with a filter on
// the unit, the filter keeps or drops all of a user's rows together, and
// the index holds exactly the pairs of the rows that pass the keys'
// program. The index is then read whenever it exists, and whether it does
// depends on no row ("No data-dependent choice of path", in paths.go).
//
// Key and unit columns must have text or integer types: their MySQL text
// does not depend on the session (the sealed session copies the analyst's
// system variables; a date's or a float's text could in principle), so one
// index serves every session.
//
// What it costs and shows. The index holds, per million distinct (unit,
// key) pairs, 12 MB of entries (item, count, first row) plus the unit and
// key strings, and its views prepared for releases (Index.Bytes: 19.6 MiB
// per million pairs on git_python_ecosystem's words); building it takes
// about one scan, plus a transient map of the pairs' first rows.
// Indexes bounds the total: columns' indexes and corpora share half of it
// (one that does not fit is not kept and its releases scan); expressions'
// indexes share the rest, divided among the accounts, and each reserves,
// before its build, a static bound of its size (exprIndexBound) with the
// text of its key (up to a statement's size), so that neither many long
// expressions nor large values hold memory beyond the bound, and which
// index fits or is evicted depends on no row. A build reads the table
// once, for a column with no analyst's session, for an expression in a
// sealed copy of the starting statement's: it runs outside the
// statement's session (a failure or a panic is logged for the operator,
// and the release scans instead), so an analyst sees the same rows and
// the same errors with or without it; only the time of a release changes,
// and the path it takes depends on no row (paths.go).

// DefaultIndexBytes is the default bound of the memory of all release
// indexes of a server.
const DefaultIndexBytes = 512 << 20

// Indexes is a server's cache of release indexes. It is safe for concurrent
// use. A nil *Indexes keeps none.
type Indexes struct {
	limit int64
	logf  func(format string, args ...any)
	// accounts is the number of accounts among which the expressions'
	// share is divided (Govern; 1 otherwise); prebuilt is set when the
	// indexes of columns and the corpora are built by Prebuild only,
	// never by a release.
	accounts     int
	prebuilt     bool
	stop         context.CancelFunc // ends Prebuild's builds (Close)
	stopCtx      context.Context    // the context of every Prebuild's builds
	prebuiltDone chan struct{}      // closed when Prebuild's builds end

	mu       sync.Mutex
	used     int64            // bytes counted against the bounds (reservations for expressions)
	held     int64            // bytes the kept values hold (Bytes)
	clock    int64            // counts uses (indexEntry.used)
	exprUsed map[string]int64 // per account, the part of used its expressions' indexes hold
	entries  map[indexKey]*indexEntry
	// building counts, per account, the builds of expressions' indexes
	// under way: a build runs in a goroutine of its own, which the memory
	// guard does not see (KILL, max_execution_time and a client that left
	// end it with the statement that started it), so an analyst who sends
	// many expressions must not start many; beyond maxExprBuilds a release
	// of a new expression of the same account scans instead.
	building map[string]int
	paths    Paths
}

// maxExprBuilds bounds the builds of one account's expressions' indexes
// at once.
const maxExprBuilds = 1

// indexKey names a cached value. account is "" for a column's index and
// a corpus (the server's own, shared), and the analyst's account for an
// expression's index (one per account: see "Caches and other analysts").
type indexKey struct{ account, db, table, unit, key string } // lower case

type indexEntry struct {
	version uint64
	done    chan struct{}
	val     any   // *Index or *ngrams.Corpus; nil when the build failed or did not fit
	counted int64 // bytes counted in Indexes.used
	held    int64 // bytes counted in Indexes.held
	used    int64 // Indexes.clock at the last use, for evicting expressions' indexes
}

// evictable reports whether the entry of k may be evicted to make room:
// the index of an analyst's expression (any expression text makes one),
// not of a column or a text column's corpus (a table has few).
func (k indexKey) evictable() bool { return strings.HasPrefix(k.key, exprKeyPrefix) }

const exprKeyPrefix = "\x00expr\x00"

// indexBuild builds one cached value outside any statement: the value, the
// memory it holds, and a line for the operator's log. Indexes.get takes a
// function that makes it, called only when a build starts.
type indexBuild func() (val any, bytes int64, summary string, err error)

// startBuild returns a maker of b, for Indexes.get.
func startBuild(b indexBuild) func() indexBuild { return func() indexBuild { return b } }

// NewIndexes returns an index cache holding at most limit bytes of indexes
// (≤ 0: none; every release scans). logf, if non-nil, receives a line per
// index built, refused or failed: for the operator, never for an analyst.
func NewIndexes(limit int64, logf func(format string, args ...any)) *Indexes {
	if limit <= 0 {
		return nil
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Indexes{limit: limit, logf: logf, accounts: 1, entries: map[indexKey]*indexEntry{},
		exprUsed: map[string]int64{}, building: map[string]int{}}
}

// Bytes returns the memory the cached indexes hold (an expression's index
// counts its real size here, its reservation in the bounds).
func (ix *Indexes) Bytes() int64 {
	if ix == nil {
		return 0
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.held
}

// versioned is a table whose rows never change (storage.Table): Version
// identifies its rows, and a table loaded again has a larger one.
type versioned interface {
	Version() uint64
}

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

// indexSummary is the operator's log line of a built index.
func indexSummary(idx *Index) string {
	return fmt.Sprintf("%d users, %d values, %d pairs, %.1f MiB (%.1f MiB per million pairs)",
		len(idx.users), len(idx.items), len(idx.ents), float64(idx.bytes)/(1<<20),
		float64(idx.bytes)/(1<<20)/max(float64(len(idx.ents))/1e6, 1e-6))
}

// columnBuild returns the build of the index of column keyCol, which
// stops when ctx ends.
func columnBuild(ctx context.Context, table sql.Table, db, tname, unitCol, keyCol string) (indexBuild, bool) {
	sch := table.Schema()
	ki := sch.IndexOfColName(keyCol)
	if ki < 0 {
		return nil, false
	}
	kc := sch[ki]
	keyExpr := expression.NewGetFieldWithTable(ki, 0, kc.Type, db, tname, kc.Name, kc.Nullable)
	return func() (any, int64, string, error) {
		idx, err := buildIndex(sql.NewContext(ctx), table, db, tname, unitCol, keyExpr, sealed.DefaultLimits())
		if err != nil {
			return nil, 0, "", err
		}
		return idx, idx.bytes, indexSummary(idx), nil
	}, true
}

// column returns the cached index of a column (or corpus) key: when ix is
// governed, only one that Prebuild has built (never waiting: while it is
// being built, releases scan), else one built on first use.
func (ix *Indexes) column(ctx *sql.Context, key indexKey, version uint64, table sql.Table, db, tname, unitCol, keyCol string) (any, bool) {
	if ix.prebuilt {
		return ix.lookup(key, version)
	}
	build, ok := columnBuild(context.Background(), table, db, tname, unitCol, keyCol)
	if !ok {
		return nil, false
	}
	name := fmt.Sprintf("%s.%s(%s by %s)", key.db, key.table, keyCol, unitCol)
	return ix.get(ctx, key, version, name, 0, startBuild(build))
}

// lookup returns the value of key for the table version if it is built
// and kept, without waiting or building.
func (ix *Indexes) lookup(key indexKey, version uint64) (any, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := ix.entries[key]
	if e == nil || e.version != version {
		return nil, false
	}
	select {
	case <-e.done:
		return e.val, e.val != nil
	default:
		return nil, false
	}
}

// account returns the account of ctx's session ("" without one).
func account(ctx *sql.Context) string {
	if ctx == nil || ctx.Session == nil {
		return ""
	}
	return ctx.Session.Client().User
}

// get returns the cached value of key for the table version, starting its
// build when there is none, and waiting for it; ok is false when the
// build failed, did not fit, or ctx ended while waiting. reserve is, for
// an expression's index, the static bound of its bytes, which the entry
// holds against the account's quota whatever the index's real size.
func (ix *Indexes) get(ctx *sql.Context, key indexKey, version uint64, name string, reserve int64, start func() indexBuild) (any, bool) {
	e := ix.entry(key, version, name, reserve, start)
	if e == nil {
		return nil, false
	}
	select {
	case <-e.done:
		return e.val, e.val != nil
	case <-ctx.Done():
		return nil, false // the scan reports the cancellation
	}
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
	p, err := setunion.Prepare(x.filtered(view, keep))
	return p, err == nil
}

// keepUsers evaluates the unit filter for every user of x, as Scan.Run
// evaluates the filter's program on a row: a row whose evaluation is
// skipped (its work), fails, is NULL or false is left out. ok is false
// only when ctx ended.
func (s *Scan) keepUsers(ctx *sql.Context, x *Index) (keep []bool, ok bool) {
	ev := s.unitFilter.NewEvaluator(ctx)
	sctx := ev.Context()
	row := make(sql.Row, len(s.src.Schema()))
	typ := s.src.Schema()[s.unitAt].Type
	keep = make([]bool, len(x.users))
	for u, name := range x.users {
		if u&1023 == 0 && ctx.Err() != nil {
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

// filtered makes view of the pairs of the users keep keeps: users in their
// order (of first row, or of first non-NULL value for ValueView), items
// renumbered by their first row among the kept users' rows (the order in
// which a scan with the filter meets them), lists sorted again.
func (x *Index) filtered(view int, keep []bool) setunion.Grouped {
	valueView := view == ValueView
	order := x.nnOrder
	if !valueView || x.null < 0 {
		order = nil
	}
	users := len(x.users)
	if order != nil {
		users = len(order)
	}
	user := func(k int) uint32 {
		if order != nil {
			return order[k]
		}
		return uint32(k)
	}
	skip := func(item uint64) bool { return valueView && x.null >= 0 && item == uint64(x.null) }
	minFirst := make([]uint32, len(x.items))
	for i := range minFirst {
		minFirst[i] = math.MaxUint32
	}
	for k := range users {
		u := user(k)
		if !keep[u] {
			continue
		}
		for j := x.offs[u]; j < x.offs[u+1]; j++ {
			if it := x.ents[j] >> 32; !skip(it) {
				minFirst[it] = min(minFirst[it], x.first[j])
			}
		}
	}
	var ids []uint32
	for i, f := range minFirst {
		if f != math.MaxUint32 {
			ids = append(ids, uint32(i))
		}
	}
	slices.SortFunc(ids, func(a, b uint32) int { return cmp.Compare(minFirst[a], minFirst[b]) })
	newID := make([]uint32, len(x.items))
	g := setunion.Grouped{Items: make([]string, len(ids))}
	for n, i := range ids {
		newID[i] = uint32(n)
		g.Items[n] = x.items[i]
		if valueView {
			g.Items[n], _ = itemText(x.items[i])
		}
	}
	for k := range users {
		u := user(k)
		if !keep[u] {
			continue
		}
		var l []uint64
		for j := x.offs[u]; j < x.offs[u+1]; j++ {
			e := x.ents[j]
			if skip(e >> 32) {
				continue
			}
			l = append(l, uint64(newID[e>>32])<<32|e&0xffffffff)
			g.Occurrences += int64(e & 0xffffffff)
		}
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		g.Users = append(g.Users, x.users[u])
		g.Lists = append(g.Lists, l)
	}
	return g
}

// entry returns the cache entry of key for the given version, starting its
// build when there is none (or only one of an older version). It returns
// nil for a table older than the cached one (a statement still running
// over a replaced table), and for an expression's index that may not be
// built now: its reservation (the static bound of its bytes, with its
// key's text) exceeds the account's quota, or the account builds another
// one. Both are decided from the statement, the table's size, the
// configuration and the account's own history.
func (ix *Indexes) entry(key indexKey, version uint64, name string, reserve int64, start func() indexBuild) *indexEntry {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := ix.entries[key]
	switch {
	case e != nil && e.version == version:
		ix.clock++
		e.used = ix.clock
		return e
	case e != nil && e.version > version:
		return nil
	case key.evictable() && (ix.building[key.account] >= maxExprBuilds || reserve+key.bytes() > ix.quota()):
		return nil
	case e != nil:
		ix.release(key, e) // a reload: the old rows' index goes
	}
	e = &indexEntry{version: version, done: make(chan struct{})}
	if key.evictable() {
		// The expression's index holds its reservation from now on,
		// whatever it turns out to need: which of the account's indexes
		// are evicted then depends on its statements only.
		ix.evict(key, reserve+key.bytes())
		e.counted = reserve + key.bytes()
		ix.used += e.counted
		ix.exprUsed[key.account] += e.counted
		ix.building[key.account]++
		ix.clock++
		e.used = ix.clock
	}
	ix.entries[key] = e
	go ix.build(key, e, name, start())
	return e
}

// release gives back the memory e holds; ix.mu is held.
func (ix *Indexes) release(key indexKey, e *indexEntry) {
	ix.used -= e.counted
	ix.held -= e.held
	e.held = 0
	if key.evictable() {
		ix.exprUsed[key.account] -= e.counted
		if ix.exprUsed[key.account] == 0 {
			delete(ix.exprUsed, key.account)
		}
	}
	e.counted = 0
}

// build builds the value of e, outside any statement, and records it if
// it fits. An expression's index was reserved its bound (entry): it is
// kept, and the reservation stays counted; a column's index or a corpus
// is kept if its size fits the columns' share.
func (ix *Indexes) build(key indexKey, e *indexEntry, name string, build indexBuild) {
	defer close(e.done)
	start := time.Now()
	val, bytes, summary, err := func() (val any, bytes int64, summary string, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("internal error: %v", r)
			}
		}()
		return build()
	}()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if key.evictable() {
		if ix.building[key.account]--; ix.building[key.account] <= 0 {
			delete(ix.building, key.account)
		}
	}
	if ix.entries[key] != e {
		return // evicted or replaced meanwhile
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		ix.release(key, e)
		delete(ix.entries, key) // the statement that started it ended: not a failure
		ix.logf("release index %s: build stopped with the statement that started it; a later release builds it", name)
		return
	}
	switch {
	case err != nil:
		// For an expression, the entry keeps its reservation, and its
		// releases scan until it is evicted.
		ix.logf("release index %s: not built (%v); its releases scan the table", name, err)
	case key.evictable() && bytes+key.bytes() > e.counted:
		// exprIndexBound is an upper bound of Index.bytes: unreachable
		// unless a type lies about its values.
		ix.logf("release index %s: internal error: %d bytes, more than its bound of %d; its releases scan the table", name, bytes, e.counted)
	case key.evictable():
		e.val, e.held = val, bytes+key.bytes()
		ix.held += e.held
		ix.logf("release index %s: %s (bound %.1f MiB), built in %v; %.1f MiB of indexes in use",
			name, summary, float64(e.counted)/(1<<20), time.Since(start).Round(time.Millisecond), float64(ix.used)/(1<<20))
	case !ix.fits(key, bytes):
		ix.logf("release index %s: %d MiB does not fit the bound of %d MiB for columns and corpora (%d MiB in use); its releases scan the table",
			name, bytes>>20, ix.columnShare()>>20, ix.used>>20)
	default:
		e.val, e.counted, e.held = val, bytes, bytes
		ix.used += bytes
		ix.held += bytes
		ix.logf("release index %s: %s, built in %v; %.1f MiB of indexes in use",
			name, summary, time.Since(start).Round(time.Millisecond), float64(ix.used)/(1<<20))
	}
}

// bytes is the memory an expression's entry holds besides its index: its
// key's text and the entry (0 for a column's or corpus's entry, which is
// not counted: a few per table).
func (k indexKey) bytes() int64 {
	if !k.evictable() {
		return 0
	}
	return int64(len(k.account)+len(k.db)+len(k.table)+len(k.unit)+len(k.key)) + 160
}

// exprShare: the indexes of expressions hold at most 1/exprShare of the
// bound together, divided equally among the accounts (quota). Any text
// makes one, so an analyst's expressions (with values as large as the
// evaluation limits allow) could otherwise fill the memory that indexes
// hold for good; columns' indexes and corpora, a few per table, built by
// the server, hold the rest (columnShare).
const exprShare = 2

// quota is one account's share of the memory of expressions' indexes.
func (ix *Indexes) quota() int64 { return ix.limit / exprShare / int64(max(ix.accounts, 1)) }

// columnShare is the memory columns' indexes and corpora may hold.
func (ix *Indexes) columnShare() int64 { return ix.limit - ix.limit/exprShare }

// fits reports whether bytes more for a column's index or corpus fit the
// columns' share; ix.mu is held.
func (ix *Indexes) fits(_ indexKey, bytes int64) bool {
	var cols int64 = ix.used
	for _, n := range ix.exprUsed {
		cols -= n
	}
	return cols+bytes <= ix.columnShare()
}

// evict drops the least recently used expressions' indexes of key's
// account until bytes more fit its quota; ix.mu is held. It reads and
// changes nothing of other accounts. A release still reading a dropped
// index keeps it until it ends.
func (ix *Indexes) evict(key indexKey, bytes int64) {
	var cands []indexKey
	for k, e := range ix.entries {
		if k.evictable() && k.account == key.account && e.counted > 0 {
			cands = append(cands, k)
		}
	}
	slices.SortFunc(cands, func(a, b indexKey) int { return cmp.Compare(ix.entries[a].used, ix.entries[b].used) })
	for _, k := range cands {
		if ix.exprUsed[key.account]+bytes <= ix.quota() {
			return
		}
		e := ix.entries[k]
		ix.logf("release index: dropped the least recently used index of an expression of account %s (%.1f MiB reserved) to make room",
			k.account, float64(e.counted)/(1<<20))
		ix.release(k, e)
		delete(ix.entries, k)
	}
}

// Index is the grouped pairs of one key column of a protected table: per
// privacy unit, the distinct values it holds (see "The release index"
// above). It is immutable once built.
type Index struct {
	users []string // units in order of first row
	items []string // keyItem of the values, in order of first row
	offs  []uint32 // users[u]'s entries are ents[offs[u]:offs[u+1]]
	ents  []uint64 // setunion.GroupedEntry(item, count), ascending item
	first []uint32 // per entry, the ordinal of its first recorded row
	occ   int64    // rows recorded
	// NULL: the item id of the NULL value (-1: none), its rows, and the
	// users in order of their first non-NULL value.
	null    int
	nullOcc int64
	nnOrder []uint32
	bytes   int64

	views    [2]setunion.Grouped   // DistinctView, ValueView
	prepared [2]*setunion.Prepared // the views prepared for releases
}

// Bytes returns the memory the index holds (views included once built).
func (x *Index) Bytes() int64 { return x.bytes }

// Pairs returns the number of distinct (unit, value) pairs.
func (x *Index) Pairs() int { return len(x.ents) }

// keyItem appends the item a release of one key makes of value v, whose
// MySQL text is text: planner.keyEncoder's encoding of a single key (a
// string as it is unless it starts with a byte ≤ 0x01; NULL as 0x00;
// otherwise 0x01, the text's length and the text). The planner's tests
// check that the two agree.
func keyItem(dst []byte, v any, text []byte) []byte {
	if v == nil {
		return append(dst, 0)
	}
	if s, ok := v.(string); ok && (len(s) == 0 || s[0] > 1) {
		return append(dst, s...)
	}
	dst = append(dst, 1)
	dst = binary.AppendUvarint(dst, uint64(len(text)))
	return append(dst, text...)
}

// itemText decodes keyItem: the text of the value, or null.
func itemText(item string) (text string, null bool) {
	switch {
	case item == "\x00":
		return "", true
	case len(item) > 0 && item[0] == 1:
		l, w := binary.Uvarint([]byte(item[1:]))
		if w <= 0 || uint64(len(item)-1-w) != l {
			panic("release index: malformed item") // keyItem made it
		}
		return item[1+w:], false
	}
	return item, false
}

// indexable reports whether the MySQL text of a column of type t is the
// same in every session.
func indexable(t sql.Type) bool {
	return t != nil && (types.IsText(t) || types.IsInteger(t)) && !types.IsEnum(t) && !types.IsSet(t)
}

// buildIndex reads table once, as a release's scan with the one key
// keyExpr (a column, or an expression evaluated under ctx's session and
// lim) and no filter, and groups its pairs. With work, it records each
// user's largest row work (Index.work).
func buildIndex(ctx *sql.Context, table sql.Table, db, name, unitCol string, keyExpr sql.Expression, lim sealed.Limits) (*Index, error) {
	scan, err := NewScan(ctx, db, name, table, unitCol, Expr{}, []Expr{{E: keyExpr, Where: "index key"}}, lim)
	if err != nil {
		return nil, err
	}
	// The rows are grouped by a rowGrouper (indexbuild.go): the pairs,
	// counts and first rows a setunion.Builder and a map of first rows
	// would give, without a map per pair.
	grp, err := groupRowsParallel(ctx, scan, func(g *rowGrouper, row *Row) {
		v, ok := row.Key(0)
		if !ok {
			return // never for a column; as the release's scan does
		}
		var text []byte
		if v != nil {
			text, _ = row.KeyText(0)
		}
		g.item = keyItem(g.item[:0], v, text)
		g.add(row.Unit(), g.item, v == nil)
	})
	if err != nil {
		return nil, err
	}
	occ := int64(len(grp.us))
	x := &Index{occ: occ, null: -1, nullOcc: grp.nullOcc}
	nnOrder := grp.nnOrder
	x.users, x.items, x.offs, x.ents, x.first = grp.group()
	if x.nullOcc > 0 {
		x.nnOrder = nnOrder
		for i, it := range x.items {
			if it == "\x00" {
				x.null = i
			}
		}
	}
	x.bytes = int64(len(x.ents))*12 + int64(len(x.offs))*4 + int64(len(x.first))*4 + int64(len(x.nnOrder))*4
	for _, s := range x.users {
		x.bytes += int64(len(s)) + 16
	}
	for _, s := range x.items {
		x.bytes += int64(len(s)) + 16
	}
	x.views[DistinctView] = setunion.Grouped{Users: x.users, Items: x.items, Lists: x.lists(), Occurrences: x.occ}
	x.bytes += int64(len(x.users)) * 24
	same := x.null < 0 && !x.tagged()
	if same {
		x.views[ValueView] = x.views[DistinctView]
	} else {
		var vb int64
		x.views[ValueView], vb = x.valueView()
		x.bytes += vb
	}
	// Prepared once for every release (setunion.NewPreparedBuilder): 4 B
	// a pair, 12 B an item and 8 B a user more per distinct view.
	for v := range x.views {
		if v == ValueView && same {
			x.prepared[v] = x.prepared[DistinctView]
			continue
		}
		p, err := setunion.Prepare(x.views[v])
		if err != nil {
			return nil, err
		}
		x.prepared[v] = p
		g := x.views[v]
		var pairs int
		for _, l := range g.Lists {
			pairs += len(l)
		}
		x.bytes += 4*int64(pairs) + 12*int64(len(g.Items)) + 8*int64(len(g.Users))
	}
	return x, nil
}

// View names: what a release makes of the index's values.
const (
	// DistinctView names items by the planner's encoding of a single key,
	// NULL included (SELECT DISTINCT, GROUP BY).
	DistinctView = iota
	// ValueView names items by their text and leaves NULL out
	// (DP_SET_UNION).
	ValueView
)

// Prepared returns Grouped(view) prepared for releases
// (setunion.NewPreparedBuilder): read-only, shared by every release.
func (x *Index) Prepared(view int) *setunion.Prepared { return x.prepared[view] }

// Grouped returns the index's pairs as a release of kind view
// (DistinctView or ValueView) adds them (see Prepared):
// read-only, shared by every release.
func (x *Index) Grouped(view int) setunion.Grouped { return x.views[view] }

// tagged reports whether some item is not its own text (a non-string or
// NULL value, or a string starting with a byte ≤ 0x01).
func (x *Index) tagged() bool {
	for _, it := range x.items {
		if len(it) > 0 && it[0] <= 1 {
			return true
		}
	}
	return false
}

// lists returns one slice of ents per user (read-only).
func (x *Index) lists() [][]uint64 {
	out := make([][]uint64, len(x.users))
	for u := range out {
		out[u] = x.ents[x.offs[u]:x.offs[u+1]:x.offs[u+1]]
	}
	return out
}

// valueView makes the ValueView: items by text, NULL left out (item ids
// above it shift down by one, keeping their order), users in order of
// their first non-NULL value, and users holding only NULL left out.
func (x *Index) valueView() (setunion.Grouped, int64) {
	g := setunion.Grouped{Occurrences: x.occ - x.nullOcc}
	var bytes int64
	for i, it := range x.items {
		if i == x.null {
			continue
		}
		t, _ := itemText(it)
		g.Items = append(g.Items, t)
		bytes += 16
	}
	order := x.nnOrder
	if x.null < 0 {
		order = make([]uint32, len(x.users))
		for u := range order {
			order[u] = uint32(u)
		}
	}
	null := uint64(x.null)
	for _, u := range order {
		src := x.ents[x.offs[u]:x.offs[u+1]]
		l := make([]uint64, 0, len(src))
		for _, e := range src {
			switch {
			case x.null >= 0 && e>>32 == null:
				continue
			case x.null >= 0 && e>>32 > null:
				e -= 1 << 32
			}
			l = append(l, e)
		}
		if len(l) == 0 {
			continue
		}
		g.Users = append(g.Users, x.users[u])
		g.Lists = append(g.Lists, l)
		bytes += 16 + 24 + int64(len(l))*8
	}
	return g, bytes
}
