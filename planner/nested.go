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

// Derived tables over one protected table (Metabase's nested question):
//
//	SELECT source.country, COUNT(*) AS count
//	FROM (SELECT searches.country AS country, searches.amount AS amount
//	      FROM searches WHERE …) AS source
//	[WHERE …] GROUP BY source.country ORDER BY count DESC
//
// is released as the query with the derived table merged into it (SQL's
// view merging): every reference to a column of the derived table is
// replaced by the expression the derived table selects for it, the outer
// WHERE is conjoined with the inner one, and the release reads the
// protected table itself:
//
//	SELECT searches.country, COUNT(*) … FROM searches WHERE … [AND …] GROUP BY searches.country
//
// Privacy. The merged query is one of the allowed top-level forms, so its
// release is that form's release: the filter, the keys and the aggregated
// values are still functions of one protected row (a composition of the
// inner and outer row expressions), the scan reads the table's rows, and
// contribution bounding (max_groups_contributed, max_rows_per_group,
// clamping) applies to each user's rows of the table as for the flat
// query. Merging is only done when the derived table is a projection and
// filter of one protected table's rows (Filter* and at most one public
// join under a Project of deterministic, non-aggregate row expressions
// with no subquery): nothing in it can change how many rows a user has or
// mix two users' rows. A derived table that groups, aggregates, takes
// DISTINCT (unless that is itself a private release, whose output the
// outer query then post-processes), sorts, limits, numbers rows (window
// functions), unions or joins protected rows is never merged, and is
// refused with an error naming the shape (derivedRefusal) instead of
// the guard's generic one.

// nested releases n when it is an allowed form (GROUP BY, global
// aggregates, SELECT DISTINCT, the projected GROUP BY of expressions)
// over derived tables that merge into one protected table. r is nil when n
// is not such a form. The node returned stands for n in the caller (a
// SELECT DISTINCT of all of a derived table's columns, which the
// planbuilder writes without a Project, gets one).
func (p *policy) nested(ctx *sql.Context, n sql.Node) (sql.Node, *Release, []outputOrder, error) {
	var child sql.Node
	switch x := n.(type) {
	case *plan.GroupBy:
		child = x.Child
	case *plan.Distinct:
		if _, ok := x.Child.(*plan.Project); !ok {
			if proj := projectAll(x.Child); proj != nil {
				n = plan.NewDistinct(proj)
			}
		}
		child = n.(*plan.Distinct).Child
	case *plan.Project:
		g, ok := x.Child.(*plan.GroupBy)
		if !ok {
			return n, nil, nil, nil
		}
		child = g.Child
	default:
		return n, nil, nil, nil
	}
	if !hasDerived(child) {
		return n, nil, nil, nil
	}
	m := &merger{p: p, subst: map[sql.ColumnId]sql.Expression{}, names: map[sql.ColumnId]string{}}
	merged, ok, err := m.node(n)
	if err != nil || !ok {
		return n, nil, nil, err
	}
	switch x := n.(type) {
	case *plan.GroupBy:
		// The release's outputs keep the original schema and column ids,
		// which the nodes above refer to.
		r, err := p.groupByAs(ctx, merged.(*plan.GroupBy), x.Schema(), x.SelectedExprs, false)
		return n, r, nil, err
	case *plan.Distinct:
		r, order, err := p.distinct(ctx, merged.(*plan.Distinct))
		return n, r, order, err
	default:
		h := ctx.Value(hiddenKey{}).(*hiddenColumns)
		before := len(h.keys)
		r, err := p.projectedGroupBy(ctx, merged.(*plan.Project))
		if err == nil && r != nil {
			// The nodes above recompute the keys from the derived table's
			// columns: resolve those spellings to the released keys too.
			orig := n.(*plan.Project).Child.(*plan.GroupBy).GroupByExprs
			mk := merged.(*plan.Project).Child.(*plan.GroupBy).GroupByExprs
			spelled := map[string]string{}
			for i := range orig {
				spelled[unalias(mk[i]).String()] = unalias(orig[i]).String()
			}
			for _, k := range h.keys[before:] {
				if o, ok := spelled[k.expr]; ok && o != k.expr {
					h.keys = append(h.keys, hiddenKeyRef{expr: o, ref: k.ref})
				}
			}
		}
		return n, r, nil, err
	}
}

// projectAll returns a Project of every column of the derived table n
// reads through filters (nil if n is no such chain), with the column ids
// the nodes above refer to.
func projectAll(n sql.Node) *plan.Project {
	top := n
	for {
		f, ok := n.(*plan.Filter)
		if !ok {
			break
		}
		n = f.Child
	}
	sa, ok := n.(*plan.SubqueryAlias)
	if !ok {
		return nil
	}
	var ids []sql.ColumnId
	sa.Columns().ForEach(func(id sql.ColumnId) { ids = append(ids, id) })
	schema := top.Schema()
	if len(ids) != len(schema) {
		return nil
	}
	cols := make([]sql.Expression, len(schema))
	for i, c := range schema {
		cols[i] = expression.NewGetFieldWithTable(i, int(sa.Id()), c.Type, c.DatabaseSource, c.Source, c.Name, c.Nullable).WithId(ids[i]).(sql.Expression)
	}
	return plan.NewProject(cols, top)
}

// hasDerived reports whether a SubqueryAlias is among the nodes n reads
// through filters, sorts and projections.
func hasDerived(n sql.Node) bool {
	for {
		switch x := n.(type) {
		case *plan.SubqueryAlias:
			return true
		case *plan.Filter, *plan.Sort, *plan.Project:
			n = x.Children()[0]
			continue
		}
		return false
	}
}

// merger merges derived tables into the nodes above them. subst maps the
// column ids of a derived table's columns to the expressions of the inner
// rows they stand for; names are the columns' names, checked against
// each reference (a mismatch leaves the reference as it is, and binding
// it to the table then fails: the merge fails closed).
type merger struct {
	p     *policy
	subst map[sql.ColumnId]sql.Expression
	names map[sql.ColumnId]string
}

// node returns n with its derived tables merged; ok is false when n holds
// no derived table this merge handles.
func (m *merger) node(n sql.Node) (sql.Node, bool, error) {
	switch x := n.(type) {
	case *plan.SubqueryAlias:
		return m.derived(x)
	case *plan.Filter:
		c, ok, err := m.node(x.Child)
		if !ok || err != nil {
			return nil, ok, err
		}
		e, err := m.expr(x.Expression, false)
		return plan.NewFilter(e, c), true, err
	case *plan.Sort:
		c, ok, err := m.node(x.Child)
		if !ok || err != nil {
			return nil, ok, err
		}
		fields := make(sql.SortFields, len(x.SortFields))
		for i, f := range x.SortFields {
			e, err := m.expr(f.Column, false)
			if err != nil {
				return nil, false, err
			}
			fields[i] = sql.SortField{Column: e, Order: f.Order, NullOrdering: f.NullOrdering}
			if e2, ok := e.(sql.Expression2); ok {
				fields[i].Column2 = e2
			}
		}
		return plan.NewSort(fields, c), true, nil
	case *plan.Distinct:
		c, ok, err := m.node(x.Child)
		if !ok || err != nil {
			return nil, ok, err
		}
		return plan.NewDistinct(c), true, nil
	case *plan.Project:
		c, ok, err := m.node(x.Child)
		if !ok || err != nil {
			return nil, ok, err
		}
		exprs, err := m.exprs(x.Projections, true)
		return plan.NewProject(exprs, c), true, err
	case *plan.GroupBy:
		c, ok, err := m.node(x.Child)
		if !ok || err != nil {
			return nil, ok, err
		}
		sel, err := m.exprs(x.SelectedExprs, true)
		if err != nil {
			return nil, false, err
		}
		keys, err := m.exprs(x.GroupByExprs, false)
		return plan.NewGroupBy(sel, keys, c), true, err
	}
	return nil, false, nil
}

// derived merges one derived table: Project(row expressions, chain) where
// chain is a protected source (after merging the derived tables it reads
// in turn). It records the substitution of the derived table's columns
// and returns the chain.
func (m *merger) derived(sa *plan.SubqueryAlias) (sql.Node, bool, error) {
	db, table, reads := m.p.readsProtected(sa.Child)
	if !reads {
		return nil, false, nil // a release inside, or public data only
	}
	refuse := func(what string) (sql.Node, bool, error) {
		return nil, false, release.ErrAccess(db, table, fmt.Sprintf(
			"the derived table %s %s; a derived table (subquery in FROM) over a protected table may only select columns and row expressions of it and filter them with WHERE, as in SELECT s.c, COUNT(*) FROM (SELECT c, x FROM %s WHERE …) AS s GROUP BY s.c; put the grouping, aggregates, DISTINCT, ORDER BY and LIMIT in the outer query", sa.Name(), what, table))
	}
	if sa.IsLateral || !sa.Correlated.Empty() {
		return refuse("refers to the outer query")
	}
	proj, ok := sa.Child.(*plan.Project)
	if !ok {
		return refuse(describeShape(sa.Child))
	}
	inner := proj.Child
	if _, ok := m.p.protectedSource(inner); !ok {
		c, ok, err := m.node(inner)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return refuse(describeShape(inner))
		}
		if _, ok := m.p.protectedSource(c); !ok {
			return refuse(describeShape(inner))
		}
		inner = c
	}
	var ids []sql.ColumnId
	sa.Columns().ForEach(func(id sql.ColumnId) { ids = append(ids, id) })
	schema := proj.Schema()
	if len(ids) != len(proj.Projections) || len(schema) != len(ids) {
		return refuse("has columns go-mysql-server does not number one by one")
	}
	for i, e := range proj.Projections {
		e, err := m.expr(unalias(e), false)
		if err != nil {
			return nil, false, err
		}
		if why := unmergeable(e); why != "" {
			return refuse(fmt.Sprintf("selects %s (%s)", e, why))
		}
		m.subst[ids[i]] = e
		m.names[ids[i]] = schema[i].Name
	}
	return inner, true, nil
}

// exprs substitutes each expression (top: select-list expressions, whose
// column ids the nodes above refer to and which therefore keep them).
func (m *merger) exprs(es []sql.Expression, top bool) ([]sql.Expression, error) {
	out := make([]sql.Expression, len(es))
	for i, e := range es {
		x, err := m.expr(e, top)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// expr replaces the references to derived tables' columns in e by the
// expressions they stand for. At the top of a select list, a replaced
// column reference becomes an alias of its expression under the column's
// name and id, and an alias keeps its id.
func (m *merger) expr(e sql.Expression, top bool) (sql.Expression, error) {
	if top {
		switch x := e.(type) {
		case *expression.GetField:
			if s, ok := m.lookup(x); ok {
				return expression.NewAlias(x.Name(), s).WithId(x.Id()).(sql.Expression), nil
			}
			return e, nil
		case *expression.Alias:
			c, err := m.expr(x.Child, false)
			if err != nil {
				return nil, err
			}
			a := expression.NewAlias(x.Name(), c)
			if x.Unreferencable() {
				a = a.AsUnreferencable()
			}
			return a.WithId(x.Id()).(sql.Expression), nil
		}
	}
	out, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if gf, ok := e.(*expression.GetField); ok {
			if s, ok := m.lookup(gf); ok {
				return s, transform.NewTree, nil
			}
		}
		return e, transform.SameTree, nil
	})
	return out, err
}

// lookup returns what a column reference stands for, when it names a
// merged derived table's column by id and name.
func (m *merger) lookup(gf *expression.GetField) (sql.Expression, bool) {
	s, ok := m.subst[gf.Id()]
	if !ok || !strings.EqualFold(m.names[gf.Id()], gf.Name()) {
		return nil, false
	}
	return s, true
}

// unmergeable says why a derived table's row expression cannot be merged
// ("" when it can): an aggregate, a window function, a subquery or a
// non-deterministic function would not be the same function of one row
// once copied into the outer query.
func unmergeable(e sql.Expression) string {
	why := ""
	sql.Inspect(e, func(e sql.Expression) bool {
		switch x := e.(type) {
		case sql.WindowAdaptableExpression: // aggregates, and window functions
			why = "an aggregate"
			if x.Window() != nil {
				why = "a window function"
			}
		case *plan.Subquery:
			why = "a subquery"
		case sql.NonDeterministicExpression:
			if x.IsNonDeterministic() {
				why = "a non-deterministic function"
			}
		}
		return why == ""
	})
	return why
}

// readsProtected reports whether n reads a protected table outside a
// release, and which (the first found).
func (p *policy) readsProtected(n sql.Node) (db, table string, ok bool) {
	transform.Inspect(n, func(n sql.Node) bool {
		if ok {
			return false
		}
		switch x := n.(type) {
		case *Release:
			return false
		case sql.TableNode:
			if x.Database() != nil {
				if _, prot := p.gov.PrivacyUnit(x.Database().Name(), x.UnderlyingTable().Name()); prot {
					db, table, ok = x.Database().Name(), x.UnderlyingTable().Name(), true
				}
			}
		}
		return !ok
	})
	return db, table, ok
}

// describeShape names what a derived table does beyond selecting and
// filtering rows.
func describeShape(n sql.Node) string {
	for {
		switch x := n.(type) {
		case *plan.Filter, *plan.TableAlias:
			n = x.Children()[0]
			continue
		case *plan.Limit, *plan.TopN:
			return "has a LIMIT"
		case *plan.Offset:
			return "has an OFFSET"
		case *plan.Sort:
			return "has an ORDER BY"
		case *plan.GroupBy:
			return "groups or aggregates rows"
		case *plan.Distinct:
			return "takes DISTINCT rows"
		case *plan.Window:
			return "computes a window function"
		case *plan.SetOp:
			return "combines SELECTs (UNION)"
		case *plan.JoinNode:
			return "joins tables (only a public table joined on a unique public column, as at the top level, merges)"
		case *plan.Having:
			return "has a HAVING"
		case *plan.Project:
			return "is itself over a query that cannot be merged"
		}
		return fmt.Sprintf("has the shape %T", n)
	}
}
