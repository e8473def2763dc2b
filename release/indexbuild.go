package release

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// rowGrouper groups an index's rows without a map per pair: it interns
// units and items in order of first row (as setunion.Builder numbers them),
// keeps per row its (unit, item) ids, and groups them at the end by a
// counting sort on the unit and a sort of each unit's (item, row) words on
// all cores (group). A pair's first row is then the first of its run, and
// its count the run's length: the state a Builder reaches from the same
// pairs, with the first rows that filtered and groups need.
type rowGrouper struct {
	users, items setunion.Interner
	us, is       []uint32 // per recorded row, its unit's and its item's ids
	last         []byte   // the last row's unit, and its id
	lastID       uint32
	lastOK       bool
	nullOcc      int64
	nnSeen       []bool
	nnOrder      []uint32 // units in order of their first non-NULL value
	item         []byte   // the caller's buffer for the row's item
	err          error
}

var errTooManyRows = errors.New("more rows than an index holds")

// add records one row: its unit's text, its item, and whether its value is
// NULL.
func (g *rowGrouper) add(unit, item []byte, null bool) {
	if len(g.us) >= math.MaxUint32-1 {
		g.err = errTooManyRows
		return
	}
	// A user's rows are mostly stored together: comparing with the last
	// unit costs less than interning it again.
	if !g.lastOK || !bytes.Equal(unit, g.last) {
		g.lastID, _ = g.users.ID(unit)
		g.last, g.lastOK = append(g.last[:0], unit...), true
	}
	u := g.lastID
	if int(u) >= len(g.nnSeen) {
		g.nnSeen = append(g.nnSeen, false)
	}
	if null {
		g.nullOcc++
	} else if !g.nnSeen[u] {
		g.nnSeen[u] = true
		g.nnOrder = append(g.nnOrder, u)
	}
	i, _ := g.items.ID(item)
	g.us = append(g.us, u)
	g.is = append(g.is, i)
}

// group returns the grouping of the recorded rows: a counting sort of
// the rows by unit, each unit's rows in row order, then groupWords.
func (g *rowGrouper) group() *grouping {
	nu := g.users.Len()
	out := &grouping{users: g.users.Strings(), items: g.items.Strings(), occ: int64(len(g.us)), nullOcc: g.nullOcc, nnOrder: g.nnOrder}
	start := make([]uint32, nu+1)
	for _, u := range g.us {
		start[u+1]++
	}
	for u := range nu {
		start[u+1] += start[u]
	}
	words := make([]uint64, len(g.us))
	pos := slices.Clone(start[:nu])
	for r, u := range g.us {
		words[pos[u]] = uint64(g.is[r])<<32 | uint64(r)
		pos[u]++
	}
	g.us, g.is, pos = nil, nil, nil
	out.offs, out.ents, out.first = groupWords(start, words, len(out.items))
	return out
}

// groupRowsParallel reads the table of scan (which has no filter) as
// Scan.Run does — a row is skipped when its program fails or panics, or
// its unit is NULL or has an empty text — on all cores: each worker reads
// a contiguous range of the table's partitions into a rowGrouper of its
// own, calling add for every row it keeps, and the workers' groupers are
// merged in the order of their ranges (merge), so the result is the
// grouper add would fill reading the rows one after the other.
func groupRowsParallel(ctx *sql.Context, s *Scan, add func(*rowGrouper, *Row)) (*rowGrouper, error) {
	if s.fprog != nil {
		return nil, errors.New("internal error: an index build with a filter")
	}
	rctx := Context(ctx)
	parts, err := partitionsOf(rctx, s.table)
	if err != nil {
		return nil, err
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), len(parts)))
	groupers := make([]*rowGrouper, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := len(parts)*w/workers, len(parts)*(w+1)/workers
		groupers[w] = &rowGrouper{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = s.readParts(rctx, parts[lo:hi], func(r *Row) { add(groupers[w], r) })
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	g := merge(groupers)
	return g, g.err
}

// partitionsOf returns every partition of table.
func partitionsOf(ctx *sql.Context, table sql.Table) ([]sql.Partition, error) {
	it, err := table.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	defer it.Close(ctx)
	var parts []sql.Partition
	for {
		p, err := it.Next(ctx)
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
}

// readParts reads the rows of parts in order, with an evaluator of its
// own, and calls sink with every row Scan.Run (without a filter) keeps.
func (s *Scan) readParts(ctx *sql.Context, parts []sql.Partition, sink func(*Row)) error {
	each := s.visitor(ctx, nil, sink)
	n := 0
	for _, p := range parts {
		if err := scanPartition(ctx, s.table, p, &n, each); err != nil {
			return err
		}
	}
	return nil
}

// merge joins the groupers of consecutive ranges of rows into the one a
// single grouper reading them in order would be: each grouper's units and
// items, numbered in order of their first row within it, are interned in
// that order (so in order of their first row overall), and its rows'
// ids renumbered.
func merge(parts []*rowGrouper) *rowGrouper {
	if len(parts) == 1 {
		return parts[0]
	}
	g := &rowGrouper{}
	total := 0
	for _, p := range parts {
		total += len(p.us)
		if p.err != nil && g.err == nil {
			g.err = p.err
		}
	}
	if total >= math.MaxUint32-1 {
		g.err = errTooManyRows
		return g
	}
	g.us, g.is = make([]uint32, 0, total), make([]uint32, 0, total)
	for _, p := range parts {
		mu := make([]uint32, p.users.Len())
		for i := range mu {
			mu[i], _ = g.users.ID(p.users.Bytes(uint32(i)))
		}
		mi := make([]uint32, p.items.Len())
		for i := range mi {
			mi[i], _ = g.items.ID(p.items.Bytes(uint32(i)))
		}
		for int(g.users.Len()) > len(g.nnSeen) {
			g.nnSeen = append(g.nnSeen, false)
		}
		for _, u := range p.nnOrder {
			if gu := mu[u]; !g.nnSeen[gu] {
				g.nnSeen[gu] = true
				g.nnOrder = append(g.nnOrder, gu)
			}
		}
		g.nullOcc += p.nullOcc
		for r, u := range p.us {
			g.us = append(g.us, mu[u])
			g.is = append(g.is, mi[p.is[r]])
		}
		*p = rowGrouper{} // let its memory go
	}
	return g
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

// buildIndex reads table once, as a release's scan with the one key
// keyExpr (a column, or an expression evaluated under ctx's session and
// lim) and no filter, and groups its pairs: from the columns' codes when
// the key is a plain column of a table that gives them (groupCoded),
// otherwise by reading the rows on all cores (groupRows).
func buildIndex(ctx *sql.Context, table sql.Table, db, name, unitCol string, keyExpr sql.Expression, lim sealed.Limits) (*Index, error) {
	scan, err := NewScan(ctx, db, name, table, unitCol, Expr{}, []Expr{{E: keyExpr, Where: "index key"}}, lim)
	if err != nil {
		return nil, err
	}
	g, ok, err := scan.groupCoded(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		if g, err = scan.groupRows(ctx); err != nil {
			return nil, err
		}
	}
	return newIndex(g)
}

// groupRows reads the rows of the scan (one key, no filter) on all cores
// as Scan.Run does and groups the pairs they give (rowGrouper): the
// pairs, counts and first rows a setunion.Builder and a map of first rows
// would give, without a map per pair.
func (s *Scan) groupRows(ctx *sql.Context) (*grouping, error) {
	grp, err := groupRowsParallel(ctx, s, func(g *rowGrouper, row *Row) {
		v, ok := row.Key(0)
		if !ok {
			return // never for a column; as the release's scan does
		}
		if str, isStr := v.(string); isStr && !row.texters[0].byType {
			// A string's text is the string itself (Texter.Text): no copy.
			g.item = keyItem(g.item[:0], v, str)
		} else {
			var text []byte
			if v != nil {
				text, _ = row.KeyText(0)
			}
			g.item = keyItem(g.item[:0], v, text)
		}
		g.add(row.Unit(), g.item, v == nil)
	})
	if err != nil {
		return nil, err
	}
	return grp.group(), nil
}

// newIndex makes the index of a build's grouping, its views and their
// preparations for releases, and counts the memory it holds.
func newIndex(g *grouping) (*Index, error) {
	x := &Index{users: g.users, items: g.items, offs: g.offs, ents: g.ents, first: g.first, occ: g.occ, null: -1, nullOcc: g.nullOcc}
	if x.nullOcc > 0 {
		x.nnOrder = g.nnOrder
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
