package release

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
)

// # GROUP BY from the release index
//
// A private GROUP BY with DP aggregates over one plain column k, whose
// aggregates read nothing but k (COUNT(*), COUNT(DISTINCT unit), and
// COUNT, SUM, AVG, VARIANCE, STDDEV of k or of a deterministic expression
// of k such as LENGTH(k)), needs from the table only, per (user, value of
// k), the number of rows: every row of a value has the same aggregate
// arguments. The index of column k keeps exactly those counts, so the
// release reads them (IndexedGroups) instead of scanning the table.
//
// Why the output is the same. The scan evaluates its keys' program (the
// unit, k and the aggregates' arguments) on every row and skips a row
// when the program exceeds its work bound or panics, or when the planner's
// sink skips it (a failed argument, a failed conversion). With every
// expression reading k alone (and the unit only as a plain column, which
// no operator reads), the program's values, work, failures and panics on
// a row are functions of the row's value of k: IndexedGroups evaluates the
// same program, in the analyst's session, once per distinct value — on a
// row holding that value — and hands it to the same sink, which keeps or
// drops the value's rows together. A filter on the unit alone keeps or
// drops a user's rows together (keepUsers, as for DISTINCT). The kept
// pairs are then exactly the pairs of the rows the scan keeps, with the
// same row counts, and IndexedGroups numbers users and values by their
// first kept row (the index records each pair's first row), the order in
// which the scan's sink meets them; dpagg.Pipeline.AddGrouped reaches
// from them the state Add reaches from those rows (its proof), and the
// release runs the same mechanism on the same state with the same
// randomness. The planner's tests compare both paths on random tables for
// fixed seeds.
//
// No data-dependent choice of path. Whether a GROUP BY reads the index is
// decided from the statement (one group key, a plain column of a TEXT or
// BIGINT type; every aggregate argument reads that column alone and is
// deterministic; no filter or one on the unit alone; no public lookup;
// every aggregate of a kind whose per-pair state is a function of the
// pair's row count and the key: groupIndexableKind in the planner), the
// table's version, and whether the server's own index of the column is
// built and kept — the branches of "No data-dependent choice of path"
// (paths.go). Once chosen, the index path reads the index to the end: it
// gives up only when the statement ends (the scan then reports it).
//
// Memory. The path keeps nothing: it reads the column's index (already
// counted in release_index_bytes) and makes, for the release only, the
// pairs' lists the scan's pipeline would have made, with no more entries
// (one per kept pair).

// GroupPairs is what a GROUP BY release reads from the release index: the
// (user, key) pairs of the rows the scan would keep, with their row
// counts, numbered as the scan meets them.
type GroupPairs struct {
	Users []string // privacy units' texts, in order of their first kept row
	// Keys are the keys' items (the planner's encoding of a single key,
	// keyItem), in order of their first kept row.
	Keys []string
	// Lists holds per user its keys' setunion.GroupedEntry(key, rows),
	// ascending key.
	Lists [][]uint64
	// From gives, per key, the index's number of its value: the item
	// number IndexedGroups passed to keep for it.
	From []uint32
	Rows int64 // kept rows
}

// IndexedGroups returns the pairs of a GROUP BY release on key 0 of the
// scan from the release index (see "GROUP BY from the release index"),
// when the statement's shape allows it and the index of the column is
// built: keep is called once per distinct value of key 0, in the index's
// order, with item its number and row the scan's keys evaluated on a row
// holding that value (valid during the call); it reports whether the
// scan's sink would keep such a row. ok is false when the release must
// scan, or when ctx ended (the scan then reports it).
func (s *Scan) IndexedGroups(ctx *sql.Context, ix *Indexes, keep func(item int, row *Row) bool) (_ *GroupPairs, ok bool) {
	if ix == nil {
		return nil, false
	}
	g, ok := s.indexedGroups(ctx, ix, keep)
	ix.countGroup(ok)
	return g, ok
}

func (s *Scan) indexedGroups(ctx *sql.Context, ix *Indexes, keep func(item int, row *Row) bool) (*GroupPairs, bool) {
	keyAt, ok := s.groupShape()
	if !ok {
		return nil, false
	}
	x, ok := s.columnIndex(ctx, ix, 0)
	if !ok {
		return nil, false
	}
	keepItem, ok := s.keepItems(ctx, x, keyAt, keep)
	if !ok {
		return nil, false
	}
	var keepUser []bool
	if s.filter >= 0 {
		if keepUser, ok = s.keepUsers(ctx, x); !ok {
			return nil, false
		}
	}
	return x.groups(keepUser, keepItem), true
}

// groupShape reports whether the statement may read a GROUP BY's pairs
// from the index of key 0: the unit's and key 0's types give back their
// values from their texts (unitValueType), every other key reads key 0's
// column alone and is deterministic, and the filter, if any, reads the
// unit alone. keyAt is key 0's column in the scan's rows. It reads no row.
func (s *Scan) groupShape() (keyAt int, ok bool) {
	if len(s.plain) == 0 || s.plain[0] == "" || (s.filter >= 0 && s.unitFilter == nil) {
		return 0, false
	}
	full := s.src.Schema()
	ki := full.IndexOfColName(s.plain[0])
	if ki < 0 || !unitValueType(full[ki].Type) {
		return 0, false
	}
	for _, e := range s.keyExprs[1:] {
		if !readsOnly(e, ki) {
			return 0, false
		}
	}
	keyAt = s.table.Schema().IndexOfColName(s.plain[0])
	return keyAt, keyAt >= 0
}

// columnIndex returns the index of key i's column (a plain column), when
// the release may read it (Indexes.column).
func (s *Scan) columnIndex(ctx *sql.Context, ix *Indexes, i int) (*Index, bool) {
	v, isVersioned := s.src.(versioned)
	if !isVersioned {
		return nil, false
	}
	key := indexKey{"", strings.ToLower(s.db), strings.ToLower(s.name), strings.ToLower(s.unitCol), strings.ToLower(s.plain[i])}
	val, ok := ix.column(ctx, key, v.Version(), s.src, s.db, s.name, s.unitCol, s.plain[i])
	if !ok {
		return nil, false
	}
	return val.(*Index), true
}

// keepItems evaluates the scan's keys' program once per value of x (on a
// row holding the value at keyAt, nothing else: the program reads no
// other column but the unit as a plain column) and asks keep, as Scan.Run
// asks its sink: a value whose evaluation exceeds the work bound or
// panics is dropped. ok is false only when ctx ended.
func (s *Scan) keepItems(ctx *sql.Context, x *Index, keyAt int, keep func(int, *Row) bool) (_ []bool, ok bool) {
	ev := s.prog.NewEvaluator(ctx)
	r := &Row{ev: ev, s: s, texters: make([]*Texter, len(s.keys))}
	for i, k := range s.keys {
		r.texters[i] = NewTexter(s.prog.Type(k))
	}
	typ := s.src.Schema()[s.src.Schema().IndexOfColName(s.plain[0])].Type
	row := make(sql.Row, len(s.table.Schema()))
	kept := make([]bool, len(x.items))
	for i, it := range x.items {
		if i%checkRows == 0 && ctx.Err() != nil {
			return nil, false // the scan reports the cancellation
		}
		kept[i] = func() (k bool) {
			defer func() {
				if recover() != nil {
					k = false // as Scan.Run skips a row that panics
				}
			}()
			var v any
			if text, null := itemText(it); !null {
				// The stored value, given back from its text (TEXT or
				// BIGINT, groupShape): it always parses.
				var ok bool
				if v, ok = unitValue(typ, text); !ok {
					panic("release index: a value's text does not parse")
				}
			}
			row[keyAt] = v
			return ev.Row(row) && keep(i, r)
		}()
	}
	return kept, true
}

// groups makes the pairs of the kept users (all with keepUser nil) and
// kept items, numbered by their first kept row: the order in which a
// scan that keeps those rows meets them.
func (x *Index) groups(keepUser, keepItem []bool) *GroupPairs {
	minItem := make([]uint32, len(x.items))
	for i := range minItem {
		minItem[i] = math.MaxUint32
	}
	minUser := make([]uint32, len(x.users))
	for u := range x.users {
		minUser[u] = math.MaxUint32
		if keepUser != nil && !keepUser[u] {
			continue
		}
		for j := x.offs[u]; j < x.offs[u+1]; j++ {
			if it := x.ents[j] >> 32; keepItem[it] {
				minItem[it] = min(minItem[it], x.first[j])
				minUser[u] = min(minUser[u], x.first[j])
			}
		}
	}
	items := firstOrder(minItem)
	users := firstOrder(minUser)
	g := &GroupPairs{Keys: make([]string, len(items)), From: items, Users: make([]string, len(users)), Lists: make([][]uint64, len(users))}
	newID := make([]uint32, len(x.items))
	same := len(items) == len(x.items) // every item kept, in the index's order
	for n, i := range items {
		newID[i] = uint32(n)
		g.Keys[n] = x.items[i]
		same = same && int(i) == n
	}
	for n, u := range users {
		g.Users[n] = x.users[u]
		src := x.ents[x.offs[u]:x.offs[u+1]]
		if same {
			g.Lists[n] = src[:len(src):len(src)] // read-only
			for _, e := range src {
				g.Rows += int64(e & 0xffffffff)
			}
			continue
		}
		l := make([]uint64, 0, len(src))
		for _, e := range src {
			if keepItem[e>>32] {
				l = append(l, uint64(newID[e>>32])<<32|e&0xffffffff)
				g.Rows += int64(e & 0xffffffff)
			}
		}
		slices.Sort(l)
		g.Lists[n] = l
	}
	return g
}

// firstOrder returns the indexes whose first row is not MaxUint32, in
// order of their first rows (distinct: a row records one pair).
func firstOrder(first []uint32) []uint32 {
	var ids []uint32
	sorted := true
	for i, f := range first {
		if f == math.MaxUint32 {
			continue
		}
		if n := len(ids); n > 0 && first[ids[n-1]] > f {
			sorted = false
		}
		ids = append(ids, uint32(i))
	}
	if !sorted {
		slices.SortFunc(ids, func(a, b uint32) int { return cmp.Compare(first[a], first[b]) })
	}
	return ids
}

// countGroup records the path of a GROUP BY release that looked for an
// index.
func (ix *Indexes) countGroup(indexed bool) {
	if ix == nil {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if indexed {
		ix.paths.Group++
	} else {
		ix.paths.Scan++
	}
}
