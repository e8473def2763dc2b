package release

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

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
