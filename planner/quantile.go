package planner

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// LiftQuantiles is the pre-analyzer rule that plans MEDIAN(x) and
// PERCENTILE_CONT(x, p) as aggregates, as LiftSetUnion does for
// DP_SET_UNION (docs/gms.md §1.3): the planbuilder leaves them as scalars
// in the SELECT list (and restated in ORDER BY, HAVING and the Projects
// between them). For every query block whose SELECT list holds one, the
// rule
//
//   - binds the level p (a constant from 0 to 1), so that a bad level fails
//     before any row is read;
//   - adds each distinct call, under a fresh column id, to the block's
//     GroupBy — the planbuilder's, with or without GROUP BY keys, or a new
//     keyless one over the block's rows — and passes the new column through
//     the Projects between the GroupBy and the SELECT list;
//   - puts a reference to that column wherever the call was written in the
//     block (SELECT list, ORDER BY, HAVING), so aliases, ORDER BY and
//     derived tables work;
//   - drops the raw columns the planbuilder passed up for the calls'
//     arguments, which nothing reads any more (a private GROUP BY selects
//     only keys and aggregates).
//
// Over a protected table the GroupBy then becomes a private release of the
// statement's aggregates, the quantiles included (groupby.go, aggregateOf);
// over public rows the quantiles are exact. Calls anywhere else (WHERE,
// GROUP BY keys, JOIN conditions, arguments of other aggregates) are
// refused with an error saying where they may be written.
func LiftQuantiles(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	if !containsCall(n, isQuantile) {
		return n, transform.SameTree, nil
	}
	out, err := liftQuantileNode(ctx, n)
	if err != nil {
		return nil, transform.SameTree, err
	}
	if err := checkQuantilePlacement(out); err != nil {
		return nil, transform.SameTree, err
	}
	return out, transform.NewTree, nil
}

// liftQuantileNode lifts the blocks of n, top-down, and of the plans of its
// expression subqueries.
func liftQuantileNode(ctx *sql.Context, n sql.Node) (sql.Node, error) {
	n, err := liftQuantileSubqueries(ctx, n)
	if err != nil {
		return nil, err
	}
	if p, ok := n.(*plan.Project); ok && blockHasQuantile(p) {
		return liftQuantileBlock(ctx, p)
	}
	children := n.Children()
	if len(children) == 0 {
		return n, nil
	}
	nc := make([]sql.Node, len(children))
	changed := false
	for i, c := range children {
		x, err := liftQuantileNode(ctx, c)
		if err != nil {
			return nil, err
		}
		nc[i] = x
		changed = changed || x != c
	}
	if !changed {
		return n, nil
	}
	return n.WithChildren(nc...)
}

// liftQuantileSubqueries lifts the plans of n's expression subqueries.
func liftQuantileSubqueries(ctx *sql.Context, n sql.Node) (sql.Node, error) {
	if _, ok := n.(sql.Expressioner); !ok {
		return n, nil
	}
	return mapExprs(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		sq, ok := e.(*plan.Subquery)
		if !ok || sq.Query == nil || !containsCall(sq.Query, isQuantile) {
			return e, transform.SameTree, nil
		}
		q, err := liftQuantileNode(ctx, sq.Query)
		if err != nil {
			return nil, transform.SameTree, err
		}
		return sq.WithQuery(q), transform.NewTree, nil
	})
}

// mapExprs applies f bottom-up to every expression of n, keeping the
// column ids of the Aliases it rebuilds (transform.Expr gives a rebuilt
// Alias a new id, and the nodes above refer to the old one).
func mapExprs(n sql.Node, f transform.ExprFunc) (sql.Node, error) {
	en, ok := n.(sql.Expressioner)
	if !ok {
		return n, nil
	}
	exprs := en.Expressions()
	out := make([]sql.Expression, len(exprs))
	changed := false
	for i, e := range exprs {
		x, same, err := transform.Expr(e, f)
		if err != nil {
			return nil, err
		}
		if a, ok := e.(*expression.Alias); ok && same == transform.NewTree {
			if na, ok := x.(*expression.Alias); ok {
				x = na.WithId(a.Id()).(*expression.Alias)
			}
		}
		out[i], changed = x, changed || same == transform.NewTree
	}
	if !changed {
		return n, nil
	}
	return en.WithExpressions(out...)
}

// blockChain returns the nodes between a block's top Project and its
// GroupBy (Sort, Having, Limit and inner Projects), and the node below
// them: the GroupBy, or the block's source when it has none.
func blockChain(p *plan.Project) (chain []sql.Node, bottom sql.Node) {
	n := p.Child
	for {
		switch c := n.(type) {
		case *plan.Sort:
			chain, n = append(chain, c), c.Child
		case *plan.Having:
			chain, n = append(chain, c), c.Child
		case *plan.Limit:
			chain, n = append(chain, c), c.Child
		case *plan.Project:
			chain, n = append(chain, c), c.Child
		default:
			return chain, n
		}
	}
}

// blockHasQuantile reports whether the block of p holds a quantile call
// outside its GroupBy.
func blockHasQuantile(p *plan.Project) bool {
	if exprsHaveCall(p.Projections, isQuantile) {
		return true
	}
	chain, _ := blockChain(p)
	for _, c := range chain {
		if e, ok := c.(sql.Expressioner); ok && exprsHaveCall(e.Expressions(), isQuantile) {
			return true
		}
	}
	return false
}

// liftQuantileBlock lifts the quantile calls of p's block (see
// LiftQuantiles), then descends into the block's source.
func liftQuantileBlock(ctx *sql.Context, p *plan.Project) (sql.Node, error) {
	chain, bottom := blockChain(p)
	nodes := append([]sql.Node{p}, chain...)
	lifted, order, argIDs, err := collectQuantiles(ctx, nodes)
	if err != nil {
		return nil, err
	}
	newBottom, keyIDs, err := quantileBottom(ctx, p, bottom, order, argIDs)
	if err != nil {
		return nil, err
	}
	cur, err := rebuildQuantileChain(nodes, newBottom, lifted, order)
	if err != nil {
		return nil, err
	}
	return pruneQuantileArgs(cur, argIDs, keyIDs)
}

// collectQuantiles returns the distinct quantile calls of the block's
// nodes, bound, each with a fresh id (by text, and in order), and the ids
// of the columns their arguments read.
func collectQuantiles(ctx *sql.Context, nodes []sql.Node) (lifted map[string]sql.Expression, order []sql.Expression, argIDs map[sql.ColumnId]bool, err error) {
	lifted = map[string]sql.Expression{}
	argIDs = map[sql.ColumnId]bool{}
	for _, n := range nodes {
		en, ok := n.(sql.Expressioner)
		if !ok {
			continue
		}
		for _, e := range en.Expressions() {
			transform.InspectExpr(e, func(e sql.Expression) bool {
				q, ok := e.(*functions.Quantile)
				if !ok || err != nil {
					return err != nil
				}
				if _, seen := lifted[q.String()]; seen {
					return false
				}
				if transform.InspectExpr(q.Value(), func(e sql.Expression) bool { _, agg := e.(sql.Aggregation); return agg }) {
					err = errQuantileArgument()
					return true
				}
				b, berr := q.Bind(ctx)
				if berr != nil {
					err = berr
					return true
				}
				l := b.WithId(freshID()).(sql.Expression)
				lifted[q.String()] = l
				order = append(order, l)
				transform.InspectExpr(q.Value(), func(e sql.Expression) bool {
					if gf, ok := e.(*expression.GetField); ok {
						argIDs[gf.Id()] = true
					}
					return false
				})
				return false
			})
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	return lifted, order, argIDs, nil
}

// quantileRef is a reference to the lifted call l's column.
func quantileRef(l sql.Expression) *expression.GetField {
	id := l.(sql.IdExpression).Id()
	return expression.NewGetFieldWithTable(int(id), 0, types.Float64, "", "", l.String(), true).WithId(id).(*expression.GetField)
}

// quantileBottom returns the block's new bottom — its GroupBy with the
// calls added, or a new keyless GroupBy of the calls — and the ids of the
// GroupBy's key columns.
func quantileBottom(ctx *sql.Context, p *plan.Project, bottom sql.Node, order []sql.Expression, argIDs map[sql.ColumnId]bool) (newBottom sql.Node, keyIDs map[sql.ColumnId]bool, err error) {
	keyIDs = map[sql.ColumnId]bool{}
	if g, ok := bottom.(*plan.GroupBy); ok {
		// The calls' arguments are evaluated on the GroupBy's input rows,
		// so they must not read its aggregates (MEDIAN(COUNT(x))).
		for _, e := range g.SelectedExprs {
			if _, raw := e.(*expression.GetField); raw {
				continue
			}
			if ie, ok := e.(sql.IdExpression); ok && argIDs[ie.Id()] {
				return nil, nil, errQuantileArgument()
			}
		}
		for _, k := range g.GroupByExprs {
			transform.InspectExpr(k, func(e sql.Expression) bool {
				if gf, ok := e.(*expression.GetField); ok {
					keyIDs[gf.Id()] = true
				}
				return false
			})
		}
		src, err := liftQuantileNode(ctx, g.Child)
		if err != nil {
			return nil, nil, err
		}
		return plan.NewGroupBy(append(append([]sql.Expression(nil), g.SelectedExprs...), order...), g.GroupByExprs, src), keyIDs, nil
	} else {
		if hasGroupBy(bottom) {
			return nil, nil, errQuantilePlacement()
		}
		src, err := liftQuantileNode(ctx, bottom)
		if err != nil {
			return nil, nil, err
		}
		var projections []sql.Expression
		for _, e := range p.Projections {
			x, _, _ := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
				if _, ok := e.(*functions.Quantile); ok {
					return expression.NewLiteral(nil, types.Null), transform.NewTree, nil
				}
				return e, transform.SameTree, nil
			})
			projections = append(projections, x)
		}
		if err := checkNonAggregatedQuantile(projections, src); err != nil {
			return nil, nil, err
		}
		return plan.NewGroupBy(order, nil, src), keyIDs, nil
	}
}

// rebuildQuantileChain rebuilds the block's chain bottom-up over bottom:
// the calls replaced by references to their lifted columns, which inner
// Projects pass through.
func rebuildQuantileChain(nodes []sql.Node, bottom sql.Node, lifted map[string]sql.Expression, order []sql.Expression) (sql.Node, error) {
	replace := func(n sql.Node) (sql.Node, error) {
		return mapExprs(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			if q, ok := e.(*functions.Quantile); ok {
				return quantileRef(lifted[q.String()]), transform.NewTree, nil
			}
			return e, transform.SameTree, nil
		})
	}
	// columns through inner Projects.
	cur := bottom
	for i := len(nodes) - 1; i >= 0; i-- {
		n, err := replace(nodes[i])
		if err != nil {
			return nil, err
		}
		if ip, ok := n.(*plan.Project); ok && i > 0 {
			exprs := append([]sql.Expression(nil), ip.Projections...)
			for _, l := range order {
				exprs = append(exprs, quantileRef(l))
			}
			n = plan.NewProject(exprs, ip.Child)
		}
		if cur, err = n.WithChildren(cur); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// pruneQuantileArgs drops, from the block's GroupBy and inner Projects, the
// raw columns the planbuilder passed up only for the calls' arguments: an
// argument column that is no key and that no expression of the block reads
// (other than passing it through).
func pruneQuantileArgs(top sql.Node, argIDs, keyIDs map[sql.ColumnId]bool) (sql.Node, error) {
	used := map[sql.ColumnId]bool{}
	var visit func(n sql.Node, isTop bool)
	visit = func(n sql.Node, isTop bool) {
		var exprs []sql.Expression
		passThrough := false
		switch x := n.(type) {
		case *plan.GroupBy:
			return // its expressions read its input, not its output
		case *plan.Project:
			exprs, passThrough = x.Projections, !isTop
		case sql.Expressioner:
			exprs = x.Expressions()
		}
		for _, e := range exprs {
			if _, bare := e.(*expression.GetField); bare && passThrough {
				continue
			}
			markUsed(e, used)
		}
		for _, c := range n.Children() {
			visit(c, false)
		}
	}
	visit(top, true)
	drop := func(e sql.Expression) bool {
		gf, ok := e.(*expression.GetField)
		return ok && argIDs[gf.Id()] && !keyIDs[gf.Id()] && !used[gf.Id()]
	}
	out, _, err := transform.Node(top, func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		switch x := n.(type) {
		case *plan.GroupBy:
			var keep []sql.Expression
			for _, e := range x.SelectedExprs {
				if !drop(e) {
					keep = append(keep, e)
				}
			}
			return plan.NewGroupBy(keep, x.GroupByExprs, x.Child), transform.NewTree, nil
		case *plan.Project:
			if n == top {
				return n, transform.SameTree, nil
			}
			var keep []sql.Expression
			for _, e := range x.Projections {
				if !drop(e) {
					keep = append(keep, e)
				}
			}
			return plan.NewProject(keep, x.Child), transform.NewTree, nil
		}
		return n, transform.SameTree, nil
	})
	return out, err
}

func markUsed(e sql.Expression, used map[sql.ColumnId]bool) {
	transform.InspectExpr(e, func(e sql.Expression) bool {
		if gf, ok := e.(*expression.GetField); ok {
			used[gf.Id()] = true
		}
		return false
	})
}

// checkNonAggregatedQuantile refuses SELECT-list columns outside any
// aggregate in a block a quantile makes an aggregation.
func checkNonAggregatedQuantile(projections []sql.Expression, child sql.Node) error {
	err := checkNonAggregated(projections, child)
	if me, ok := err.(*mysql.SQLError); ok {
		return mysql.NewSQLError(me.Num, me.State, "%s", replaceName(me.Message))
	}
	return err
}

func replaceName(msg string) string {
	return strings.Replace(msg, "DP_SET_UNION makes the query an aggregate", "MEDIAN and PERCENTILE_CONT make the query an aggregate", 1)
}

// checkQuantilePlacement verifies that after lifting every quantile call
// is a bound aggregate of a GroupBy.
func checkQuantilePlacement(n sql.Node) error {
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
				if q, ok := x.(*functions.Quantile); ok && q.Id() != 0 {
					for _, c := range q.Children() {
						if exprHasCall(c, isQuantile, false) {
							err = errQuantileArgument()
						}
					}
				} else if exprHasCall(x, isQuantile, false) {
					err = errQuantileArgument()
				}
			}
			exprs = g.GroupByExprs
		}
		for _, x := range exprs {
			transform.InspectExpr(x, func(x sql.Expression) bool {
				switch x := x.(type) {
				case *functions.Quantile:
					err = errQuantilePlacement()
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

func errQuantileArgument() error {
	return mysql.NewSQLError(mysql.ERInvalidGroupFuncUse, mysql.SSUnknownSQLState,
		"Invalid use of group function: the arguments of MEDIAN and PERCENTILE_CONT cannot contain aggregates")
}

func errQuantilePlacement() error {
	return mysql.NewSQLError(mysql.ERInvalidGroupFuncUse, mysql.SSUnknownSQLState,
		"Invalid use of group function: MEDIAN and PERCENTILE_CONT can only be used in the SELECT list (and, through its alias, in ORDER BY and HAVING), not in WHERE, GROUP BY, JOIN conditions or inside other aggregates")
}

// quantileOf maps a lifted MEDIAN or PERCENTILE_CONT call to the DP
// quantile aggregate (aggregateOf).
func quantileOf(src source, q *functions.Quantile) (aggregate, bool, error) {
	if q.Window() != nil {
		return aggregate{}, false, errQuantilePlacement()
	}
	return aggregate{kind: dpagg.Quantile, value: q.Value(), level: q.Level()}, true, nil
}

// setQuantileLevels copies the levels of the release's quantiles into its
// options (dpvars.AggregateOptions knows only the kinds).
func setQuantileLevels(o *dpagg.Options, aggs []aggregate) {
	for i, a := range aggs {
		if i < len(o.Aggregates) && a.kind == dpagg.Quantile {
			o.Aggregates[i].Quantile = dpagg.RoundQuantileLevel(a.level) // the level released: one option, one reuse key
		}
	}
}

// sameAggregate reports whether two aggregates of one release are the same
// (HAVING restating a SELECT-list aggregate), released once.
func sameAggregate(a, b aggregate) bool {
	return b.kind == a.kind && dpagg.RoundQuantileLevel(a.level) == dpagg.RoundQuantileLevel(b.level) && (a.value == nil) == (b.value == nil) && (a.value == nil || sameExpr(a.value, b.value))
}
