package gmsfix

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// EmptyLimitZero is a pre-analyzer rule that replaces LIMIT 0 over an
// aggregation without grouping keys by an empty table of the same schema.
//
// go-mysql-server v0.20.0 crashes on such a query (SELECT COUNT(*) FROM t
// LIMIT 0, and equally DP_SET_UNION): LIMIT 0 closes the aggregation's
// iterator before its first Next, and groupByIter.Close disposes aggregation
// buffers that were never created (a nil-pointer panic, which the server
// turns into a dropped connection). BI tools send LIMIT 0 to learn a query's
// columns, so it must work; the empty table also spares a DP release whose
// result nobody would see.
func EmptyLimitZero(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return transform.NodeWithOpaque(n, func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		l, ok := n.(*plan.Limit)
		if !ok || !isZero(ctx, l.Limit) || !hasKeylessGroupBy(l.Child) {
			return n, transform.SameTree, nil
		}
		return plan.NewEmptyTableWithSchema(l.Schema()), transform.NewTree, nil
	})
}

func isZero(ctx *sql.Context, e sql.Expression) bool {
	lit, ok := e.(*expression.Literal)
	if !ok {
		return false
	}
	v, err := lit.Eval(ctx, nil)
	if err != nil || v == nil {
		return false
	}
	switch x := v.(type) {
	case int8:
		return x == 0
	case int16:
		return x == 0
	case int32:
		return x == 0
	case int64:
		return x == 0
	case int:
		return x == 0
	case uint8:
		return x == 0
	case uint16:
		return x == 0
	case uint32:
		return x == 0
	case uint64:
		return x == 0
	}
	return false
}

// hasKeylessGroupBy reports whether n's subtree, through derived tables,
// holds a GroupBy without grouping keys.
func hasKeylessGroupBy(n sql.Node) bool {
	found := false
	transform.Inspect(n, func(n sql.Node) bool {
		if g, ok := n.(*plan.GroupBy); ok && len(g.GroupByExprs) == 0 {
			found = true
		}
		return !found
	})
	return found
}
