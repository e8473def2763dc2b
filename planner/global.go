package planner

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// hasSetUnion reports whether one of the expressions is a DP_SET_UNION call.
func hasSetUnion(exprs []sql.Expression) bool {
	for _, e := range exprs {
		if _, ok := unalias(e).(*functions.SetUnion); ok {
			return true
		}
	}
	return false
}

// globalAggregates rewrites GroupBy(aggregates, no keys, source): SELECT
// COUNT(*), SUM(x) … FROM t [WHERE …] without GROUP BY. Every selected
// expression must be a DP aggregate (aggregateOf); the release is one noisy
// row with no key selection (dpagg.Options.Global: the empty key set is
// public, and its one row is released even over no rows). Anything else
// (a bare column, a constant) is left to the guard, which refuses it.
func (p *policy) globalAggregates(ctx *sql.Context, src source, g *plan.GroupBy, schema sql.Schema, ids []sql.Expression) (*Release, error) {
	out := make([]int, len(g.SelectedExprs))
	var aggs []aggregate
	for i, e := range g.SelectedExprs {
		a, ok, err := aggregateOf(src, unalias(e))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
		out[i] = -1
		for j, b := range aggs {
			if b.kind == a.kind && (a.value == nil) == (b.value == nil) && (a.value == nil || sameExpr(a.value, b.value)) {
				out[i] = j
				break
			}
		}
		if out[i] < 0 {
			out[i] = len(aggs)
			aggs = append(aggs, a)
		}
	}
	if len(aggs) == 0 {
		return nil, nil
	}
	return p.newAggregateRelease(ctx, src, nil, aggs, out, schema, ids, globalRelease)
}

// globalRelease makes aggregate options global: one key, no selection,
// max_groups_contributed 1 whatever the session says (each user has the
// one key only).
func globalRelease(o *dpagg.Options) {
	o.Global = true
	o.MaxGroupsContributed = 1
}

// aggregateNames names an aggregate release for the ledger and EXPLAIN:
// its function and its key-selection mechanism ("none" without GROUP BY).
func (r *Release) aggregateNames() (function, mechanism string) {
	if r.aggPlan.Global {
		return "global aggregates", "none"
	}
	return "GROUP BY aggregates", string(r.aggPlan.Selection.Mechanism)
}
