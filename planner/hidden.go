package planner

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/dpsql/dpsql/release"
)

// hiddenKey keys the statement's *hiddenColumns in the rewrite's context.
type hiddenKey struct{}

// hiddenColumns are the raw columns a GROUP BY by expressions carries for
// the nodes above it (projectedGroupBy): go-mysql-server plans SELECT
// LOWER(w) AS k, COUNT(*) … GROUP BY k HAVING … as a Project that
// recomputes LOWER(w) over Having over a Project that carries w. A release
// outputs such a column as NULL: it never holds data. resolve replaces the
// recomputed key expressions above the release by references to the
// released keys, and refuses a query that still shows or uses a hidden
// column (SELECT LOWER(w) AS k, w … GROUP BY k), which would otherwise
// silently read NULL.
type hiddenColumns struct {
	ids  map[sql.ColumnId]string // hidden column id → db.table
	keys []hiddenKeyRef
}

// hiddenKeyRef is a group key a release outputs: its expression (as text)
// and the reference to its output column.
type hiddenKeyRef struct {
	expr string
	ref  sql.Expression
}

func (h *hiddenColumns) resolve(n sql.Node) (sql.Node, error) {
	refersHidden := func(e sql.Expression) bool {
		found := false
		sql.Inspect(e, func(e sql.Expression) bool {
			if gf, ok := e.(*expression.GetField); ok && h.ids[gf.Id()] != "" {
				found = true
			}
			return !found
		})
		return found
	}
	var fix func(n sql.Node) (sql.Node, transform.TreeIdentity, error)
	fixExpr := func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		switch x := e.(type) {
		case *plan.Subquery:
			return intoSubquery(x, fix)
		case *expression.GetField, *expression.Alias:
			return e, transform.SameTree, nil
		}
		if !refersHidden(e) {
			return e, transform.SameTree, nil
		}
		for _, k := range h.keys {
			if e.String() == k.expr {
				return k.ref, transform.NewTree, nil
			}
		}
		return e, transform.SameTree, nil
	}
	fix = func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		switch x := n.(type) {
		case *Release:
			return n, transform.SameTree, nil
		case *plan.Project:
			if _, ok := x.Child.(*Release); ok {
				return n, transform.SameTree, nil
			}
		}
		return transform.OneNodeExpressions(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			return transform.Expr(e, fixExpr)
		})
	}
	out, _, err := transform.NodeWithOpaque(n, fix)
	if err != nil {
		return nil, err
	}
	// What still refers to a hidden column is refused: a node's
	// expressions (outside the releases' own Projects), or the query's
	// result itself when a release's Project is what it shows.
	var refuse error
	refuseAt := func(gf *expression.GetField) {
		if refuse == nil {
			db, name, _ := strings.Cut(h.ids[gf.Id()], ".")
			refuse = release.ErrAccess(db, name, fmt.Sprintf(
				"%s is neither a group key nor an aggregate; a private GROUP BY shows only its keys and noisy aggregates: add it to GROUP BY, or use it inside COUNT, SUM, AVG, VARIANCE or STDDEV", gf.Name()))
		}
	}
	var inspectNode func(n sql.Node) bool
	inspectExpr := func(e sql.Expression) bool {
		switch x := e.(type) {
		case *expression.GetField:
			if h.ids[x.Id()] != "" {
				refuseAt(x)
			}
		case *plan.Subquery:
			if x.Query != nil {
				transform.Inspect(x.Query, inspectNode)
			}
		}
		return refuse == nil
	}
	inspectNode = func(n sql.Node) bool {
		switch x := n.(type) {
		case *Release:
			return false
		case *plan.Project:
			if _, ok := x.Child.(*Release); ok {
				return false
			}
		}
		if ex, ok := n.(sql.Expressioner); ok {
			for _, e := range ex.Expressions() {
				sql.Inspect(e, inspectExpr)
			}
		}
		return refuse == nil
	}
	transform.Inspect(out, inspectNode)
	for top := out; refuse == nil; {
		switch x := top.(type) {
		case *plan.Sort, *plan.Limit, *plan.Offset, *plan.Having, *plan.Filter, *plan.Distinct, *plan.TopN, *plan.SubqueryAlias:
			top = x.Children()[0]
			continue
		case *plan.Project:
			if _, ok := x.Child.(*Release); ok {
				for _, e := range x.Projections {
					sql.Inspect(e, inspectExpr)
				}
			}
		}
		break
	}
	return out, refuse
}
