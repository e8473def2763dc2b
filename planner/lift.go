package planner

import (
	"strings"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/functions"
)

// LiftSetUnion is the pre-analyzer rule that plans DP_SET_UNION as an
// aggregate. The planbuilder leaves it as a scalar inside a Project; for
// every such Project the rule
//
//   - binds the call's options (options argument + dp_* session variables),
//     so that bad options fail before any row is read;
//   - moves the call into the Project's GroupBy — the one the planbuilder made
//     for other aggregates of the query, or a new keyless GroupBy over the
//     Project's child — under a fresh column id;
//   - puts a reference to that column where the call was, so aliases,
//     JSON_LENGTH(DP_SET_UNION(…)) and derived tables keep working.
//
// It descends into derived tables, unions, CTEs and expression subqueries.
// It refuses, with a MySQL error that says what to write instead: GROUP BY
// (not supported in this version; SELECT DISTINCT g, item is the
// differentially private way to get per-group items), HAVING, other columns
// of the SELECT list that are not aggregated, aggregates or DP_SET_UNION
// inside the arguments, and DP_SET_UNION anywhere but the SELECT list.
func LiftSetUnion(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return lift(ctx, n)
}

func lift(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	if !containsCall(n, isSetUnion) {
		return n, transform.SameTree, nil
	}
	if err := checkHaving(n); err != nil {
		return nil, transform.SameTree, err
	}
	n, _, err := transform.NodeWithOpaque(n, dropOrderBy)
	if err != nil {
		return nil, transform.SameTree, err
	}
	out, same, err := transform.NodeWithOpaque(n, func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		n, same, err := liftSubqueries(ctx, n)
		if err != nil {
			return nil, transform.SameTree, err
		}
		p, ok := n.(*plan.Project)
		if !ok || !exprsHaveCall(p.Projections, isSetUnion) {
			return n, same, nil
		}
		np, err := liftProject(ctx, p)
		if err != nil {
			return nil, transform.SameTree, err
		}
		return np, transform.NewTree, nil
	})
	if err != nil {
		return nil, transform.SameTree, err
	}
	if err := checkPlacement(out); err != nil {
		return nil, transform.SameTree, err
	}
	return out, same, nil
}

// dropOrderBy removes ORDER BY from a query block that DP_SET_UNION makes
// an aggregate without GROUP BY: its result is at most one row, so the
// order is moot. The planbuilder plans ORDER BY over a SELECT-list alias as
// Project(Sort(Project(pass-through columns + aliases, child))), with the
// outer Project restating every expression of the inner one; the rule
// keeps the outer Project directly over the child. (With GROUP BY the
// block is refused anyway.)
func dropOrderBy(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	p, ok := n.(*plan.Project)
	if !ok {
		return n, transform.SameTree, nil
	}
	s, ok := p.Child.(*plan.Sort)
	if !ok {
		return n, transform.SameTree, nil
	}
	child := s.Child
	inner, hasInner := child.(*plan.Project)
	if !exprsHaveCall(p.Projections, isSetUnion) && !(hasInner && exprsHaveCall(inner.Projections, isSetUnion)) {
		return n, transform.SameTree, nil
	}
	if hasInner {
		// The outer projections must not refer to columns only the inner
		// Project makes (its aliases); restated expressions are fine.
		made := map[sql.ColumnId]bool{}
		for _, e := range inner.Projections {
			if a, ok := e.(*expression.Alias); ok {
				made[a.Id()] = true
			}
		}
		for _, e := range p.Projections {
			if transform.InspectExpr(e, func(e sql.Expression) bool {
				gf, ok := e.(*expression.GetField)
				return ok && made[gf.Id()]
			}) {
				return nil, transform.SameTree, errOrderBy()
			}
		}
		child = inner.Child
	}
	np, err := p.WithChildren(child)
	if err != nil {
		return nil, transform.SameTree, err
	}
	return np, transform.NewTree, nil
}

// liftSubqueries applies the rule to the plans of n's expression subqueries
// (IN (SELECT …), scalar subqueries), which are not children of n.
func liftSubqueries(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	if _, ok := n.(sql.Expressioner); !ok {
		return n, transform.SameTree, nil
	}
	return transform.OneNodeExpressions(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		sq, ok := e.(*plan.Subquery)
		if !ok || sq.Query == nil {
			return e, transform.SameTree, nil
		}
		q, same, err := lift(ctx, sq.Query)
		if err != nil || same {
			return e, transform.SameTree, err
		}
		return sq.WithQuery(q), transform.NewTree, nil
	})
}

// liftIDBase is the first column id given to lifted aggregates. Planbuilder
// ids are small and sequential per query, so ids from here up do not
// collide with them; ids cycle through [liftIDBase, 65535] (ColumnId is a
// uint16), unique within any query with fewer than 5,536 DP_SET_UNION calls.
const liftIDBase = 60000

var nextLiftID atomic.Uint32

func freshID() sql.ColumnId {
	return sql.ColumnId(liftIDBase + nextLiftID.Add(1)%(1<<16-liftIDBase))
}

// liftProject moves the DP_SET_UNION calls of p's projections into a GroupBy.
func liftProject(ctx *sql.Context, p *plan.Project) (sql.Node, error) {
	for _, e := range p.Projections {
		var err error
		transform.InspectExpr(e, func(e sql.Expression) bool {
			if su, ok := e.(*functions.SetUnion); ok {
				err = checkArguments(su)
			}
			return err != nil
		})
		if err != nil {
			return nil, err
		}
	}
	var lifted []sql.Expression
	projections := make([]sql.Expression, len(p.Projections))
	for i, e := range p.Projections {
		ne, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			su, ok := e.(*functions.SetUnion)
			if !ok {
				return e, transform.SameTree, nil
			}
			bound, err := su.Bind(ctx)
			if err != nil {
				return nil, transform.SameTree, err
			}
			id := freshID()
			lifted = append(lifted, bound.WithId(id))
			return expression.NewGetFieldWithTable(int(id), 0, types.JSON, "", "", su.String(), false), transform.NewTree, nil
		})
		if err != nil {
			return nil, err
		}
		projections[i] = ne
	}

	var child sql.Node
	switch c := p.Child.(type) {
	case *plan.Having:
		return nil, errHaving()
	case *plan.GroupBy:
		g, err := addToGroupBy(c, lifted)
		if err != nil {
			return nil, err
		}
		child = g
	case *plan.Project:
		// The planbuilder puts a Project of aliases between the GroupBy and
		// the final projection when the SELECT list has aliases of
		// aggregates; pass the lifted columns through it.
		g, ok := c.Child.(*plan.GroupBy)
		if !ok {
			if hasGroupBy(c) {
				return nil, errOtherAggregates()
			}
			if err := checkNonAggregated(projections, c); err != nil {
				return nil, err
			}
			child = plan.NewGroupBy(lifted, nil, c)
			break
		}
		ng, err := addToGroupBy(g, lifted)
		if err != nil {
			return nil, err
		}
		exprs := append(append([]sql.Expression(nil), c.Projections...), refs(lifted)...)
		inner, err := c.WithExpressions(exprs...)
		if err != nil {
			return nil, err
		}
		if child, err = inner.WithChildren(ng); err != nil {
			return nil, err
		}
	default:
		if hasGroupBy(c) {
			return nil, errOtherAggregates()
		}
		if err := checkNonAggregated(projections, c); err != nil {
			return nil, err
		}
		child = plan.NewGroupBy(lifted, nil, c)
	}
	np, err := p.WithExpressions(projections...)
	if err != nil {
		return nil, err
	}
	return np.WithChildren(child)
}

// addToGroupBy appends lifted aggregates to the planbuilder's GroupBy of
// the query's other aggregates; with grouping keys it refuses.
func addToGroupBy(g *plan.GroupBy, lifted []sql.Expression) (*plan.GroupBy, error) {
	if len(g.GroupByExprs) > 0 {
		return nil, errGroupBy()
	}
	// The arguments of the lifted calls are evaluated on the GroupBy's input
	// rows, so they must not refer to the GroupBy's own aggregates.
	outputs := map[sql.ColumnId]bool{}
	for _, e := range g.SelectedExprs {
		if _, ok := e.(*expression.GetField); ok {
			continue
		}
		if ie, ok := e.(sql.IdExpression); ok {
			outputs[ie.Id()] = true
		}
	}
	for _, l := range lifted {
		for _, arg := range l.Children() {
			bad := transform.InspectExpr(arg, func(e sql.Expression) bool {
				gf, ok := e.(*expression.GetField)
				return ok && outputs[gf.Id()]
			})
			if bad {
				return nil, errAggregateArgument()
			}
		}
	}
	selected := append(append([]sql.Expression(nil), g.SelectedExprs...), lifted...)
	return plan.NewGroupBy(selected, nil, g.Child), nil
}

func refs(lifted []sql.Expression) []sql.Expression {
	out := make([]sql.Expression, len(lifted))
	for i, l := range lifted {
		out[i] = expression.NewGetFieldWithTable(int(l.(sql.IdExpression).Id()), 0, types.JSON, "", "", l.String(), false)
	}
	return out
}

// checkArguments refuses aggregates (DP_SET_UNION included) inside the
// arguments of a DP_SET_UNION call.
func checkArguments(su *functions.SetUnion) error {
	for _, arg := range su.Children() {
		if transform.InspectExpr(arg, func(e sql.Expression) bool {
			_, ok := e.(sql.Aggregation)
			return ok
		}) {
			return errAggregateArgument()
		}
	}
	return nil
}

// checkNonAggregated refuses SELECT-list columns outside any aggregate when
// DP_SET_UNION makes the query an aggregation (MySQL's ONLY_FULL_GROUP_BY).
func checkNonAggregated(projections []sql.Expression, child sql.Node) error {
	cols := map[string]bool{}
	for _, c := range child.Schema() {
		cols[strings.ToLower(c.Source)+"."+strings.ToLower(c.Name)] = true
	}
	for i, e := range projections {
		var bad *expression.GetField
		transform.InspectExpr(e, func(e sql.Expression) bool {
			if gf, ok := e.(*expression.GetField); ok && cols[strings.ToLower(gf.Table())+"."+strings.ToLower(gf.Name())] {
				bad = gf
				return true
			}
			return false
		})
		if bad != nil {
			return mysql.NewSQLError(mysql.ERMixOfGroupFuncAndFields, mysql.SSClientError,
				"In aggregated query without GROUP BY, expression #%d of SELECT list contains nonaggregated column '%s'; DP_SET_UNION makes the query an aggregate, so every other column of the SELECT list must be inside an aggregate",
				i+1, bad.String())
		}
	}
	return nil
}

// hasGroupBy reports whether n's subtree in the same query block (not
// crossing derived tables, unions or subqueries) has a GroupBy.
func hasGroupBy(n sql.Node) bool {
	found := false
	transform.Inspect(n, func(n sql.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *plan.GroupBy:
			found = true
			return false
		case sql.OpaqueNode:
			return !n.Opaque()
		}
		return true
	})
	return found
}

// checkHaving refuses DP_SET_UNION in a query with HAVING: the planbuilder
// plans HAVING over a scalar call before the rule can lift it.
func checkHaving(n sql.Node) error {
	var err error
	transform.Inspect(n, func(n sql.Node) bool {
		if err != nil {
			return false
		}
		if h, ok := n.(*plan.Having); ok && blockContainsSetUnion(h) {
			err = errHaving()
			return false
		}
		return true
	})
	return err
}

// blockContainsSetUnion reports whether a DP_SET_UNION call is in n or its
// descendants of the same query block.
func blockContainsSetUnion(n sql.Node) bool {
	found := false
	transform.Inspect(n, func(n sql.Node) bool {
		if found {
			return false
		}
		if o, ok := n.(sql.OpaqueNode); ok && o.Opaque() {
			return false
		}
		if e, ok := n.(sql.Expressioner); ok && exprsHaveCall(e.Expressions(), isSetUnion) {
			found = true
		}
		return !found
	})
	return found
}

// checkPlacement verifies that after lifting every DP_SET_UNION call is a
// bound aggregate of a GroupBy, and refuses any other place (WHERE, ORDER
// BY, GROUP BY keys, JOIN conditions, window queries).
func checkPlacement(n sql.Node) error {
	var err error
	var visit func(n sql.Node) bool
	visit = func(n sql.Node) bool {
		if err != nil {
			return false
		}
		e, ok := n.(sql.Expressioner)
		if !ok {
			return true
		}
		exprs := e.Expressions()
		if g, ok := n.(*plan.GroupBy); ok {
			for _, x := range g.SelectedExprs {
				if su, ok := x.(*functions.SetUnion); ok && su.Options() != nil {
					for _, c := range su.Children() {
						if exprHasCall(c, isSetUnion, false) {
							err = errAggregateArgument()
							return false
						}
					}
				} else if exprHasCall(x, isSetUnion, false) {
					err = errPlacement()
					return false
				}
			}
			exprs = g.GroupByExprs
		}
		for _, x := range exprs {
			transform.InspectExpr(x, func(x sql.Expression) bool {
				switch x := x.(type) {
				case *functions.SetUnion:
					err = errPlacement()
				case *plan.Subquery:
					if x.Query != nil {
						transform.Inspect(x.Query, visit)
					}
				}
				return err != nil
			})
			if err != nil {
				return false
			}
		}
		return true
	}
	transform.Inspect(n, visit)
	return err
}

func errGroupBy() error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, mysql.SSClientError,
		"DP_SET_UNION cannot be used with GROUP BY yet: to release the (group, item) pairs under differential privacy, write SELECT DISTINCT g, item FROM … instead")
}

func errHaving() error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, mysql.SSClientError,
		"DP_SET_UNION cannot be used with HAVING: filter in an outer query instead, e.g. SELECT j FROM (SELECT DP_SET_UNION(item, user_id) AS j FROM t) s WHERE JSON_LENGTH(j) > 0")
}

func errOrderBy() error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, mysql.SSClientError,
		"DP_SET_UNION cannot be used with this ORDER BY: the query returns one row, so drop the ORDER BY")
}

func errOtherAggregates() error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, mysql.SSClientError,
		"DP_SET_UNION cannot be combined with the other aggregates of this query: compute them in a separate query")
}

func errAggregateArgument() error {
	return mysql.NewSQLError(mysql.ERInvalidGroupFuncUse, mysql.SSUnknownSQLState,
		"Invalid use of group function: the arguments of DP_SET_UNION cannot contain aggregates (DP_SET_UNION included)")
}

func errPlacement() error {
	return mysql.NewSQLError(mysql.ERInvalidGroupFuncUse, mysql.SSUnknownSQLState,
		"Invalid use of group function: DP_SET_UNION can only be used in the SELECT list (not in WHERE, ORDER BY, GROUP BY, JOIN conditions or next to window functions)")
}
