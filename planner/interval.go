package planner

import (
	"math"
	"slices"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// DP_INTERVAL_LOW(agg) and DP_INTERVAL_HIGH(agg) in the SELECT list of a
// private GROUP BY or global release: the ends of the 95 % interval of a DP
// aggregate of the same release, next to it in the same row (as
// Snowflake's DP_INTERVAL_LOW/HIGH). go-mysql-server plans them as
// scalar functions over the aggregate (a Project above the GroupBy, docs/gms.md §1.3),
// which the rewrite of projectedGroupBy folds back into the GroupBy's
// select list; here the call is recognised, its argument released as an
// ordinary aggregate (once, even when the value and both ends are asked
// for), and the output column marked. The release computes every
// aggregate's interval (sqlext/dpagg/interval.go) from its noisy totals and
// public calibration, and keeps them with the values (withIntervals), so a
// reused release answers the same intervals.

// intervalArg returns the expression e stands for as an aggregate: the
// argument of DP_INTERVAL_LOW/HIGH, recording the side of output i in
// *sides, or e itself (unaliased).
func intervalArg(e sql.Expression, i int, sides *[]int8) sql.Expression {
	e = unalias(e)
	iv, ok := e.(*functions.Interval)
	if !ok {
		return e
	}
	for len(*sides) <= i {
		*sides = append(*sides, 0)
	}
	(*sides)[i] = -1
	if iv.High {
		(*sides)[i] = 1
	}
	return unalias(iv.Child())
}

// withIntervals lays out a released row's values for the release's core
// form: the n values, then the n lower ends, then the n upper ends.
func withIntervals(rr dpagg.Row) []float64 {
	out := make([]float64, 0, 3*len(rr.Values))
	out = append(out, rr.Values...)
	out = append(out, rr.Low...)
	return append(out, rr.High...)
}

// isInterval reports whether output column i is an interval end.
func (r *Release) isInterval(i int) bool { return i < len(r.intervals) && r.intervals[i] != 0 }

// intervalValue is output column i, an end of aggregate j's interval, from
// the row's stored values (NULL when the aggregate has no interval, or
// for a release stored before intervals were kept).
func (r *Release) intervalValue(i, j int, values []float64) any {
	n := len(r.aggOpts.Aggregates)
	k := n + j
	if r.intervals[i] > 0 {
		k += n
	}
	if len(values) != 3*n || math.IsNaN(values[k]) {
		return nil
	}
	return values[k]
}

// intervalSet holds the column ids selected by GroupBys whose Project
// above calls DP_INTERVAL_LOW/HIGH: go-mysql-server plans the call as a
// scalar over the GroupBy's aggregate column, so the rewrite releases such
// a GroupBy together with its Project (intervalGroupBy), not alone.
type intervalSet map[sql.ColumnId]bool

// intervalGroupBys finds, in the whole plan, the GroupBys below a Project
// with an interval call.
func intervalGroupBys(n sql.Node) intervalSet {
	set := intervalSet{}
	transform.Inspect(n, func(n sql.Node) bool {
		proj, ok := n.(*plan.Project)
		if !ok || !hasInterval(proj.Projections) {
			return true
		}
		if g, ok := proj.Child.(*plan.GroupBy); ok {
			for _, e := range g.SelectedExprs {
				if ie, ok := e.(sql.IdExpression); ok && ie.Id() != 0 {
					set[ie.Id()] = true
				}
			}
		}
		return true
	})
	return set
}

// has reports whether g is one of the set's GroupBys.
func (s intervalSet) has(g *plan.GroupBy) bool {
	for _, e := range g.SelectedExprs {
		if ie, ok := e.(sql.IdExpression); ok && s[ie.Id()] {
			return true
		}
	}
	return false
}

// above reports whether proj is the Project of one of the set's GroupBys.
func (s intervalSet) above(proj *plan.Project) bool {
	g, ok := proj.Child.(*plan.GroupBy)
	return ok && len(s) > 0 && s.has(g)
}

// hasInterval reports whether an expression calls DP_INTERVAL_LOW/HIGH.
func hasInterval(exprs []sql.Expression) bool {
	for _, e := range exprs {
		if transform.InspectExpr(e, func(e sql.Expression) bool {
			_, ok := e.(*functions.Interval)
			return ok
		}) {
			return true
		}
	}
	return false
}

// intervalGroupBy releases Project(GroupBy) when the projection calls
// DP_INTERVAL_LOW/HIGH: references to the GroupBy's columns are replaced by
// what they select (as projectedGroupBy does), and the projection must then
// consist of group keys, DP aggregates and interval calls on DP aggregates.
func (p *policy) intervalGroupBy(ctx *sql.Context, proj *plan.Project) (*Release, error) {
	g := proj.Child.(*plan.GroupBy)
	if _, ok := p.protectedSource(g.Child); !ok {
		return nil, nil
	}
	exprs, err := substituteSelected(g, proj.Projections, true) // groupby.go
	if err != nil {
		return nil, err
	}
	return p.groupByAs(ctx, plan.NewGroupBy(exprs, g.GroupByExprs, g.Child), proj.Schema(), proj.Projections, false)
}

// hoistIntervalSorts rewrites the two plans go-mysql-server builds for
// DP_INTERVAL_LOW/HIGH calls under an ORDER BY, so that the calls sit in a
// Project directly over the GroupBy, as intervalGroupBys expects:
//
//   - ORDER BY a column of the GroupBy (a key, or an aggregate written
//     again): Project(P, Sort(S, GroupBy)) becomes Sort(S', Project(P,
//     GroupBy)), S' naming the same columns among P's outputs; a Project
//     computes row by row, so sorting before or after it is the same.
//   - ORDER BY an alias: Project(P, Sort(S, Project(P', GroupBy))), where
//     P' already computes every column of P; P's interval calls (which
//     would otherwise be evaluated again, as scalars, above the release)
//     become references to P”s columns of the same id.
//
// A plan that does not fit (a sort key that is not an output) is left as
// it is, and the interval call is refused as before.
func hoistIntervalSorts(n sql.Node) sql.Node {
	out, _, err := transform.Node(n, func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		proj, ok := n.(*plan.Project)
		if !ok || !hasInterval(proj.Projections) {
			return n, transform.SameTree, nil
		}
		s, ok := proj.Child.(*plan.Sort)
		if !ok {
			return n, transform.SameTree, nil
		}
		switch c := s.Child.(type) {
		case *plan.GroupBy:
			return sortOverProjection(proj, s, c)
		case *plan.Project:
			if _, ok := c.Child.(*plan.GroupBy); ok && hasInterval(c.Projections) {
				return projectionOfInner(proj, c)
			}
		}
		return n, transform.SameTree, nil
	})
	if err != nil {
		return n
	}
	return out
}

// sortOverProjection returns Sort(S', Project(P, g)) for Project(P,
// Sort(S, g)), or proj unchanged when a sort key is not one of P's
// outputs.
func sortOverProjection(proj *plan.Project, s *plan.Sort, g *plan.GroupBy) (sql.Node, transform.TreeIdentity, error) {
	inner := plan.NewProject(proj.Projections, g)
	schema := inner.Schema()
	fields := make(sql.SortFields, len(s.SortFields))
	for k, f := range s.SortFields {
		i := outputOf(proj.Projections, f.Column)
		if i < 0 {
			return proj, transform.SameTree, nil
		}
		fields[k] = sql.SortField{Column: columnRef(i, exprID(proj.Projections[i]), schema[i]), Order: f.Order, NullOrdering: f.NullOrdering}
	}
	return plan.NewSort(fields, inner), transform.NewTree, nil
}

// projectionOfInner replaces proj's expressions that call an interval
// function by references to inner's column of the same id (proj unchanged
// when one has none).
func projectionOfInner(proj, inner *plan.Project) (sql.Node, transform.TreeIdentity, error) {
	schema := inner.Schema()
	exprs := slices.Clone(proj.Projections)
	for i, e := range exprs {
		if !hasInterval([]sql.Expression{e}) {
			continue
		}
		k := slices.IndexFunc(inner.Projections, func(x sql.Expression) bool {
			return exprID(x) != 0 && exprID(x) == exprID(e)
		})
		if k < 0 {
			return proj, transform.SameTree, nil
		}
		exprs[i] = columnRef(k, exprID(e), schema[k])
	}
	return plan.NewProject(exprs, proj.Child), transform.NewTree, nil
}

// outputOf returns the index of the projection that outputs col (a column
// reference of the same id, or the same expression), or -1.
func outputOf(projections []sql.Expression, col sql.Expression) int {
	for i, p := range projections {
		if id := exprID(col); id != 0 && (id == exprID(p) || id == exprID(unalias(p))) {
			return i
		}
		if sameExpr(unalias(p), unalias(col)) {
			return i
		}
	}
	return -1
}

// exprID is e's column id, 0 when it has none.
func exprID(e sql.Expression) sql.ColumnId {
	if ie, ok := e.(sql.IdExpression); ok {
		return ie.Id()
	}
	return 0
}
