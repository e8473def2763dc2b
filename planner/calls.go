package planner

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/dpsql/dpsql/functions"
)

// The aggregates go-mysql-server does not plan as aggregates (docs/gms.md
// §1.3), which the planner lifts: DP_SET_UNION and the quantiles.
func isSetUnion(e sql.Expression) bool { _, ok := e.(*functions.SetUnion); return ok }
func isQuantile(e sql.Expression) bool { _, ok := e.(*functions.Quantile); return ok }

// containsCall reports whether a call that is reports is anywhere in n,
// including derived tables and expression subqueries.
func containsCall(n sql.Node, is func(sql.Expression) bool) bool {
	found := false
	transform.Inspect(n, func(n sql.Node) bool {
		if found {
			return false
		}
		if e, ok := n.(sql.Expressioner); ok {
			for _, x := range e.Expressions() {
				if exprHasCall(x, is, true) {
					found = true
					return false
				}
			}
		}
		return true
	})
	return found
}

// exprsHaveCall reports whether one of es holds such a call (not looking
// into subqueries).
func exprsHaveCall(es []sql.Expression, is func(sql.Expression) bool) bool {
	for _, e := range es {
		if exprHasCall(e, is, false) {
			return true
		}
	}
	return false
}

// exprHasCall reports whether e holds such a call, looking into the plans
// of subqueries when deep is set.
func exprHasCall(e sql.Expression, is func(sql.Expression) bool, deep bool) bool {
	return transform.InspectExpr(e, func(e sql.Expression) bool {
		if is(e) {
			return true
		}
		if sq, ok := e.(*plan.Subquery); ok {
			return deep && sq.Query != nil && containsCall(sq.Query, is)
		}
		return false
	})
}
