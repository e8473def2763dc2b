package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/release"
)

// Refusals that say what to write instead.

// WindowCheck refuses a SELECT that has both an aggregate (COUNT(*),
// SUM(x) …, outside the window's own arguments) and a window function
// (… OVER (…)) in its own select list, HAVING or ORDER BY: go-mysql-server v0.20.0 cannot plan it and fails
// with error 1140 and a broken message ("expression #%!d(MISSING)"). The
// refusal keeps MySQL's number, 1140, and says how to write it: the
// aggregates in a derived table, the window function over its rows —
// which also works over a private GROUP BY, since the window then only
// post-processes released rows.
func WindowCheck(stmt ast.Statement, _ string, _ error) error {
	if stmt == nil {
		return nil
	}
	var refusal error
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		if s, ok := n.(*ast.Select); ok && refusal == nil {
			refusal = windowWithAggregate(s)
		}
		return refusal == nil, nil
	}, stmt)
	return refusal
}

// windowWithAggregate checks one SELECT's own expressions (not its
// subqueries').
func windowWithAggregate(s *ast.Select) error {
	var agg, win string
	visit := func(n ast.SQLNode) (bool, error) {
		switch x := n.(type) {
		case *ast.Subquery:
			return false, nil
		case *ast.FuncExpr:
			name := x.Name.Lowered()
			switch {
			case x.Over != nil:
				if win == "" {
					win = strings.ToUpper(name) + "(…) OVER (…)"
				}
				return false, nil // an aggregate inside a window's arguments plans
			case builtinAggregates[name] && agg == "":
				agg = strings.ToUpper(name) + "(…)"
			}
		}
		return true, nil
	}
	for _, e := range s.SelectExprs {
		_ = ast.Walk(visit, e)
	}
	if s.Having != nil {
		_ = ast.Walk(visit, s.Having)
	}
	_ = ast.Walk(visit, s.OrderBy)
	if agg == "" || win == "" {
		return nil
	}
	return mysql.NewSQLError(mysql.ERMixOfGroupFuncAndFields, "42000",
		"the window function %s and the aggregate %s cannot be in the same SELECT; compute the aggregates in a derived table and apply the window function to its rows: "+
			"SELECT k, n, RANK() OVER (ORDER BY n DESC) FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) AS r", win, agg)
}

// refusal returns a refusal, more precise than the guard's generic one, of
// the first node of n that reads protected tables in a form a release does
// not take: a join of two protected tables (naming both), a join of a
// protected table with one the configuration does not declare public, a
// window function over protected rows. nil when none applies.
func (p *policy) refusal(n sql.Node) error {
	if err := p.plainReadRefusal(n); err != nil {
		return err
	}
	var err error
	transform.Inspect(n, func(n sql.Node) bool {
		if err != nil {
			return false
		}
		switch x := n.(type) {
		case *Release:
			return false
		case *plan.JoinNode:
			err = p.joinRefusal(x)
		case *plan.Window, *plan.GroupBy, *plan.Project:
			if !hasWindow(x) {
				switch y := x.(type) {
				case *plan.GroupBy:
					err = p.groupByRefusal(y)
				}
				break
			}
			if prot := p.protectedUnder(x); len(prot) > 0 {
				db, name, _ := strings.Cut(prot[0], ".")
				err = release.ErrAccess(db, name, "a window function (… OVER (…)) over its rows is not a private release; apply it to a release's rows instead: "+
					"SELECT k, n, RANK() OVER (ORDER BY n DESC) FROM (SELECT k, COUNT(*) AS n FROM "+name+" GROUP BY k) AS r")
			}
		}
		return err == nil
	})
	return err
}

// groupByRefusal names the column of an aggregation over a protected
// table that is neither a GROUP BY key nor inside an aggregate (from the
// SELECT list, HAVING or ORDER BY), and says what to write.
func (p *policy) groupByRefusal(g *plan.GroupBy) error {
	src, ok := p.protectedSource(g.Child)
	if !ok || hasWindow(g) {
		return nil
	}
	keys := make([]sql.Expression, len(g.GroupByExprs))
	for i, k := range g.GroupByExprs {
		keys[i] = unalias(k)
	}
	isKey := func(e sql.Expression) bool {
		return slices.ContainsFunc(keys, func(k sql.Expression) bool { return sameExpr(e, k) })
	}
	var bad *expression.GetField
	for _, e := range g.SelectedExprs {
		transform.InspectExpr(unalias(e), func(e sql.Expression) bool {
			switch x := e.(type) {
			case sql.Aggregation:
				return false // inside an aggregate
			case *expression.GetField:
				if !isKey(x) && bad == nil {
					bad = x
				}
			}
			if isKey(e) {
				return false
			}
			return bad != nil
		})
	}
	if bad == nil {
		return nil
	}
	if len(keys) == 0 {
		return release.ErrAccess(src.db, src.name, fmt.Sprintf(
			"%s is outside every aggregate: without GROUP BY a private release is one row of aggregates (COUNT(*), SUM(x), AVG(x) …); add GROUP BY %s for a row per key (keys selected privately), or drop it", bad.Name(), bad.Name()))
	}
	return release.ErrAccess(src.db, src.name, fmt.Sprintf(
		"%s is neither a GROUP BY key nor inside an aggregate (in the SELECT list, HAVING or ORDER BY); add it to GROUP BY, or use it inside COUNT, SUM, AVG, VARIANCE or STDDEV", bad.Name()))
}

// plainReadRefusal explains a plain SELECT of a protected table's rows
// (under WHERE, ORDER BY and LIMIT, which do not make it a release): the
// statement's root reads the table through nothing else.
func (p *policy) plainReadRefusal(root sql.Node) error {
	n := root
	for {
		switch x := n.(type) {
		case *plan.Project, *plan.Sort, *plan.Limit, *plan.Offset, *plan.TopN:
			n = x.Children()[0]
			continue
		}
		break
	}
	src, ok := p.protectedSource(n)
	if !ok {
		return nil
	}
	if src.join != nil {
		return nil // the join's own refusal says more
	}
	var cols []string
	for _, c := range root.Schema() {
		if !strings.EqualFold(c.Name, src.unit) { // the privacy unit is never a useful key
			cols = append(cols, c.Name)
		}
	}
	if len(cols) == 0 {
		cols = []string{"c"}
	}
	list := strings.Join(cols, ", ")
	return release.ErrAccess(src.db, src.name, fmt.Sprintf(
		"a plain SELECT returns its rows themselves, which no analyst may see; for the values that many users share write SELECT DISTINCT %s FROM %s, for counts SELECT %s, COUNT(*) FROM %s GROUP BY %s (ORDER BY and LIMIT apply to the released rows)",
		list, src.name, list, src.name, list))
}

// hasWindow reports whether n is a Window node or has a window function
// among its own expressions.
func hasWindow(n sql.Node) bool {
	if _, ok := n.(*plan.Window); ok {
		return true
	}
	ex, ok := n.(sql.Expressioner)
	if !ok {
		return false
	}
	found := false
	for _, e := range ex.Expressions() {
		transform.InspectExpr(e, func(e sql.Expression) bool {
			switch x := e.(type) {
			case sql.WindowAdaptableExpression:
				found = x.Window() != nil
			case *expression.GetField:
				// After analysis a window function's result is a column
				// named after it ("count(1) over (…)").
				found = strings.Contains(strings.ToLower(x.Name()), " over (")
			}
			return found
		})
	}
	return found
}

// joinRefusal explains why a join that reads a protected table is not a
// release.
func (p *policy) joinRefusal(j *plan.JoinNode) error {
	prot := p.protectedUnder(j)
	if len(prot) == 0 {
		return nil
	}
	db, name, _ := strings.Cut(prot[0], ".")
	if len(prot) > 1 && prot[0] == prot[1] {
		return release.ErrAccess(db, name, fmt.Sprintf(
			"this query joins the protected table %s with itself; a private release reads each protected row once, through one release: compute what you need in one GROUP BY over %s, or join two releases in derived tables on their keys", prot[0], name))
	}
	if len(prot) > 1 {
		prot = slices.Compact(prot)
		return release.ErrAccess(db, name, fmt.Sprintf(
			"this query joins the protected tables %s; a private release reads one protected table, so join two only after releasing each (e.g. join two GROUP BY releases in derived tables on their keys), or join one protected table with one table the server's configuration declares public (%s JOIN public_table ON public_table.c = %s.col)",
			strings.Join(prot, " and "), name, name))
	}
	var others []string
	transform.Inspect(j, func(n sql.Node) bool {
		if _, ok := n.(*Release); ok {
			return false
		}
		if t, ok := n.(sql.TableNode); ok && t.Database() != nil {
			tdb, tname := t.Database().Name(), t.UnderlyingTable().Name()
			if _, prot := p.gov.PrivacyUnit(tdb, tname); !prot && !p.isPublic(tdb, tname) {
				others = append(others, tdb+"."+tname)
			}
		}
		return true
	})
	if len(others) > 0 {
		return release.ErrAccess(db, name, fmt.Sprintf(
			"it is joined with %s, which the server's configuration does not declare public; a private release may join its protected table only with a table declared public (an administrator adds public: true to its dataset)", strings.Join(others, ", ")))
	}
	return release.ErrAccess(db, name, "this join is not one a private release takes; "+joinForm+
		"; or public_table LEFT JOIN "+name+" ON … GROUP BY public_table columns, for a row per public key (no comma joins, no joins of more than two tables)")
}

// protectedUnder lists the protected tables n reads outside releases,
// sorted, a table read twice (a self-join) twice.
func (p *policy) protectedUnder(n sql.Node) []string {
	var out []string
	transform.Inspect(n, func(n sql.Node) bool {
		if _, ok := n.(*Release); ok {
			return false
		}
		if t, ok := n.(sql.TableNode); ok && t.Database() != nil {
			db, name := t.Database().Name(), t.UnderlyingTable().Name()
			if _, prot := p.gov.PrivacyUnit(db, name); prot {
				out = append(out, db+"."+name)
			}
		}
		return true
	})
	slices.Sort(out)
	return out
}

// afterRewrite runs on the rewritten statement: it labels the releases'
// outputs after the SELECT lists that show them (for DP_EXPLAIN) and notes
// an EXPLAIN of private releases.
func afterRewrite(ctx *sql.Context, in, out sql.Node) {
	labelOutputs(out)
	noteExplain(ctx, in, out)
}

// noteExplain adds, to an EXPLAIN of a statement that makes private
// releases, a Note pointing to DP_EXPLAIN: EXPLAIN shows how the statement
// runs, not the releases' noise and cost. A function of the plan only.
func noteExplain(ctx *sql.Context, in, out sql.Node) {
	_, describe := in.(*plan.DescribeQuery)
	// go-mysql-server's analyzer runs the rules on EXPLAIN's query alone:
	// tell EXPLAIN by the statement's first word.
	if f := strings.Fields(strings.ToLower(ctx.Query())); len(f) > 0 && (f[0] == "explain" || f[0] == "describe" || f[0] == "desc") {
		describe = true
	}
	if !describe {
		return
	}
	found := false
	transform.Inspect(out, func(n sql.Node) bool {
		if _, ok := n.(*Release); ok {
			found = true
		}
		return !found
	})
	if !found {
		return
	}
	for _, w := range ctx.Session.Warnings() {
		if w.Message == explainNote {
			return // the rule runs again for subqueries
		}
	}
	ctx.Session.Warn(&sql.Warning{Level: "Note", Code: mysql.ERUnknownError, Message: explainNote})
}

// explainNote is the Note of an EXPLAIN of private releases.
const explainNote = "EXPLAIN shows how the statement runs, not what it releases: " +
	"SELECT * FROM DP_EXPLAIN('<the query>') lists each private release's mechanism, noise, 95% intervals and the budget it would be charged, without running it or charging anything"
