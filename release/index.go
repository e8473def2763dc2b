package release

import (
	"encoding/binary"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

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
// per million pairs on git_python_ecosystem's words). Building a column's
// index over a table that stores its columns as codes reads the codes,
// not the rows ("Building a column's index from codes", indexcodes.go:
// about half a plain SELECT DISTINCT's CPU on git_python_ecosystem); an
// expression's index reads the rows on all cores, as one scan, with about
// 20 bytes per row more for the time of the build.
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

// indexSummary is the operator's log line of a built index.
func indexSummary(idx *Index) string {
	return fmt.Sprintf("%d users, %d values, %d pairs, %.1f MiB (%.1f MiB per million pairs)",
		len(idx.users), len(idx.items), len(idx.ents), float64(idx.bytes)/(1<<20),
		float64(idx.bytes)/(1<<20)/max(float64(len(idx.ents))/1e6, 1e-6))
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
func keyItem[T string | []byte](dst []byte, v any, text T) []byte {
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
