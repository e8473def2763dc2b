package planner

import (
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// groupIndexableKind reports whether an aggregate of kind k can be made
// from a (user, key) pair's row count and the one value all its rows share
// (dpagg.Pipeline.AddGrouped): every kind whose per-pair state is a sum
// over the pair's rows. A new kind (MEDIAN and the quantiles) scans until
// its per-pair state is made from (rows, value) in AddGrouped and it is
// listed here; the release index tests then compare it with the scan.
func groupIndexableKind(k dpagg.Kind) bool {
	switch k {
	case dpagg.CountRows, dpagg.CountUnits, dpagg.CountValues, dpagg.Sum, dpagg.Avg,
		dpagg.VarPop, dpagg.VarSamp, dpagg.StdDevPop, dpagg.StdDevSamp:
		return true
	}
	return false
}

// groupIndexable reports, from the statement alone, whether the release
// may read its pairs from the release index (release.Scan.IndexedGroups
// checks the rest of the shape: a plain group key, arguments that read it
// alone, a filter on the unit alone): a GROUP BY of one key, with no
// public lookup, whose aggregates are all of indexable kinds.
func (r *Release) groupIndexable() bool {
	if r.indexes == nil || r.mode != aggregateRows || r.groupKeys != 1 || len(r.publics) > 0 || r.aggPlan == nil || r.aggPlan.Global {
		return false
	}
	for _, a := range r.aggOpts.Aggregates {
		if !groupIndexableKind(a.Kind) {
			return false
		}
	}
	return true
}

// groupsFromIndex reads the release's grouped rows from the release index
// (see release "GROUP BY from the release index"): the aggregates' values
// are computed once per key, by the scan's own code (rowValues) on the
// scan's keys evaluated for that key, and every row of the key shares
// them. ok is false when the release scans instead.
func (r *Release) groupsFromIndex(ctx *sql.Context) (_ dpagg.Grouped, ok bool) {
	if !r.groupIndexable() {
		return dpagg.Grouped{}, false
	}
	n := len(r.aggValue)
	var vals []dpagg.Value // n per index item
	g, ok := r.scan.IndexedGroups(ctx, r.indexes, func(item int, row *release.Row) bool {
		if need := (item + 1) * n; len(vals) < need {
			vals = append(vals, make([]dpagg.Value, need-len(vals))...)
		}
		return r.rowValues(row, vals[item*n:(item+1)*n])
	})
	if !ok {
		return dpagg.Grouped{}, false
	}
	return dpagg.Grouped{
		Users: g.Users,
		Keys:  g.Keys,
		Lists: g.Lists,
		Values: func(k uint32) []dpagg.Value {
			i := int(g.From[k])
			return vals[i*n : (i+1)*n]
		},
	}, true
}
