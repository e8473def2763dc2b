package planner

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/lookup"
	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// Rule ids of the analyst rules.
const (
	RewriteProtectedID = RuleIDBase + 10 + iota
	GuardProtectedID
)

// PolicyOption configures PolicyRules.
type PolicyOption func(*policy)

// WithRand sets the random source of the releases (tests only: the only
// private choice is the default, securerand.New).
func WithRand(rnd func() *rand.Rand) PolicyOption {
	return func(p *policy) { p.rnd = rnd }
}

// WithLimits sets the bounds of the sealed evaluation of releases (zero
// fields: sealed.DefaultLimits).
func WithLimits(l sealed.Limits) PolicyOption {
	return func(p *policy) { p.limits = l }
}

// WithIndexes makes releases that read whole columns use the release
// indexes of ix (nil: every release scans; see release.Indexes).
func WithIndexes(ix *release.Indexes) PolicyOption {
	return func(p *policy) { p.indexes = ix }
}

// PolicyRules returns the analyst rules of the governed server. For a
// session that gov says is governed (an analyst):
//
//   - RewriteProtected (pre-analyzer) turns the allowed forms over a
//     protected table into private releases (a Release node):
//     SELECT DISTINCT c1[, c2…] FROM t [alias] [WHERE …] (with any ORDER BY
//     or LIMIT above it), SELECT c… FROM t [WHERE …] GROUP BY c…, and
//     SELECT DP_SET_UNION(item, privacy_unit) … FROM t [WHERE …] with the
//     table's declared privacy unit. This holds inside derived tables,
//     CTEs, UNIONs, views and expression subqueries. The session's dp_*
//     variables give the options; gov.Check refuses a release over budget
//     before any data is read, and the node charges gov.Charge before it
//     reads a row.
//   - Public enrichment: a release may filter its protected rows with
//     T.col [NOT] IN (SELECT c FROM P …) and [NOT] EXISTS (SELECT … FROM P
//     WHERE P.c = T.col …), and join T with P (T [INNER|LEFT] JOIN P ON
//     P.c = T.col …, P.c unique), where P is a table the governor declares
//     public (release.PublicTables). P is read into a bounded lookup.Set
//     before the charge and the protected scan, from public data alone; each
//     protected row probes it once inside the sealed evaluation. Every
//     filter and key is then a fixed function of one protected row and
//     public data, so each user still contributes only through their own
//     rows and the mechanism's sensitivity bound and (ε, δ) are unchanged
//     (proof sketches in public.go and publicjoin.go). Any other subquery
//     or join in a release is refused with 1142.
//   - GuardProtected (post-validation) refuses, with MySQL error 1142, any
//     plan that still reads a protected table in any other way (plain
//     SELECT, aggregates, joins, subqueries, window functions, EXPLAIN
//     ANALYZE, INSERT … SELECT, ANALYZE TABLE, …). Metadata statements
//     (DESCRIBE, SHOW COLUMNS / CREATE TABLE / INDEX) are allowed.
//
// Install them after Rules(). Sessions that are not governed (admins) are
// left alone.
func PolicyRules(gov release.Governor, opts ...PolicyOption) []Rule {
	p := &policy{gov: gov}
	for _, o := range opts {
		o(p)
	}
	return []Rule{
		{ID: RewriteProtectedID, Name: "rewrite_protected_reads", Batch: PreAnalyze, Apply: p.rewrite},
		{ID: GuardProtectedID, Name: "guard_protected_reads", Batch: PostValidation, Apply: p.guard},
	}
}

type policy struct {
	gov          release.Governor
	rnd          func() *rand.Rand
	limits       sealed.Limits
	lookupLimits lookup.Limits
	indexes      *release.Indexes
	logf         func(format string, args ...any)             // WithLog
	defaults     func(db, table string) *dpvars.TableDefaults // defaults.go
}

// WithLookupLimits bounds the public side of each public lookup of a
// release (zero fields: lookup.DefaultLimits).
func WithLookupLimits(l lookup.Limits) PolicyOption {
	return func(p *policy) { p.lookupLimits = l }
}

// rewrite is RewriteProtected.
func (p *policy) rewrite(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	if p.gov == nil || !p.gov.Governed(ctx) {
		return n, transform.SameTree, nil
	}
	// One memo per statement: identical releases in it (go-mysql-server
	// copies an aliased expression, subquery included, into two
	// projections) are made and charged once.
	ctx = ctx.WithContext(context.WithValue(ctx.Context, memoKey{}, map[string]*releaseResult{}))
	h := &hiddenColumns{ids: map[sql.ColumnId]string{}}
	ctx = ctx.WithContext(context.WithValue(ctx.Context, hiddenKey{}, h))
	fo := floatOutputs{}
	ctx = ctx.WithContext(context.WithValue(ctx.Context, floatKey{}, fo))
	out, same, err := p.rewriteNode(ctx, n)
	if err == nil {
		afterRewrite(ctx, n, out) // refusals.go
	}
	if err == nil && len(fo) > 0 {
		if out, err = retypeFloats(out, fo); err == nil {
			same = transform.NewTree
		}
	}
	if err != nil || len(h.ids) == 0 {
		return out, same, err
	}
	if out, err = h.resolve(out); err != nil {
		return nil, transform.SameTree, err
	}
	return out, transform.NewTree, nil
}

// memoKey keys the statement's release memo in the rewrite's context.
type memoKey struct{}

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
			if x.Query == nil {
				return e, transform.SameTree, nil
			}
			q, same, err := transform.NodeWithOpaque(x.Query, fix)
			if err != nil || same {
				return e, transform.SameTree, err
			}
			return x.WithQuery(q), transform.NewTree, nil
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

func (p *policy) rewriteNode(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	withIntervals := intervalGroupBys(n) // interval.go
	return transform.NodeWithOpaque(n, func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		n, same, err := p.rewriteSubqueries(ctx, n)
		if err != nil {
			return nil, transform.SameTree, err
		}
		var r *Release
		var order []outputOrder
		switch n := n.(type) {
		case *plan.Distinct:
			r, order, err = p.distinct(ctx, n)
		case *plan.GroupBy:
			if !withIntervals.has(n) { // else released with its Project
				r, err = p.groupBy(ctx, n)
			}
		case *plan.Project:
			if withIntervals.above(n) {
				r, err = p.intervalGroupBy(ctx, n)
			} else {
				r, err = p.projectedGroupBy(ctx, n)
			}
		case *plan.Sort:
			return sortOverRelease(n), transform.NewTree, nil
		}
		if r == nil && err == nil {
			n, r, order, err = p.nested(ctx, n) // derived tables in FROM (nested.go)
		}
		if err != nil {
			return nil, transform.SameTree, err
		}
		if r == nil {
			return n, same, nil
		}
		if !release.Explaining(ctx) {
			if err := release.Check(ctx, p.gov, r.requests(ctx)); err != nil {
				return nil, transform.SameTree, err
			}
		}
		if proj, ok := n.(*plan.Project); ok {
			// Keep a Project of the projection's column ids over the
			// release, as for DISTINCT below, for the Sort above.
			refs := make([]sql.Expression, len(proj.Projections))
			for i := range refs {
				refs[i] = r.outputs[i]
			}
			return plan.NewProject(refs, r), transform.NewTree, nil
		}
		if d, ok := n.(*plan.Distinct); ok {
			// Keep a Project of the original column ids over the release:
			// later rules (IN-subquery decorrelation) look for it.
			proj := d.Child.(*plan.Project)
			refs := make([]sql.Expression, len(proj.Projections))
			for i, c := range r.schema {
				id := sql.ColumnId(0)
				if ie, ok := proj.Projections[i].(sql.IdExpression); ok {
					id = ie.Id()
				}
				refs[i] = columnRef(i, id, c)
			}
			var out sql.Node = plan.NewProject(refs, r)
			if len(order) > 0 {
				// The ORDER BY the planbuilder put below the DISTINCT,
				// now over the released rows.
				fields := make(sql.SortFields, len(order))
				for k, o := range order {
					fields[k] = sql.SortField{Column: refs[o.out], Order: o.order, NullOrdering: o.nulls}
				}
				out = plan.NewSort(fields, out)
			}
			return out, transform.NewTree, nil
		}
		return r, transform.NewTree, nil
	})
}

// rewriteSubqueries applies the rewrite to the plans of n's expression
// subqueries, which are not children of n.
func (p *policy) rewriteSubqueries(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	if _, ok := n.(sql.Expressioner); !ok {
		return n, transform.SameTree, nil
	}
	return transform.OneNodeExpressions(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		return transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			sq, ok := e.(*plan.Subquery)
			if !ok || sq.Query == nil {
				return e, transform.SameTree, nil
			}
			q, same, err := p.rewriteNode(ctx, sq.Query)
			if err != nil || same {
				return e, transform.SameTree, err
			}
			return sq.WithQuery(q), transform.NewTree, nil
		})
	})
}

// source is a protected table under a chain of filters, as the planbuilder
// plans FROM t [alias] [WHERE …].
type source struct {
	db, name string // database and table name
	ref      string // the name columns are qualified with: alias or table
	table    sql.Table
	unit     string // privacy-unit column
	filters  []sql.Expression
	join     *publicJoin // a join with a public table (publicjoin.go), or nil
}

// protectedSource matches Filter* over [TableAlias] over a ResolvedTable of
// a protected table. ok is false for anything else (joins, derived tables,
// unprotected tables…), which the guard judges later.
func (p *policy) protectedSource(n sql.Node) (source, bool) {
	var s source
	for {
		switch c := n.(type) {
		case *plan.Filter:
			s.filters = append(s.filters, c.Expression)
			n = c.Child
			continue
		case *plan.JoinNode:
			if s.join != nil {
				return s, false
			}
			t, pj, ok := p.joinSides(c)
			if !ok {
				return s, false
			}
			s.join = pj
			n = t
			continue
		case *plan.TableAlias, *plan.ResolvedTable:
			var ok bool
			if s.db, s.name, s.ref, s.table, ok = resolvedLeaf(c); !ok {
				return s, false
			}
			unit, ok := p.gov.PrivacyUnit(s.db, s.name)
			s.unit = unit
			return s, ok
		}
		return s, false
	}
}

// resolvedLeaf matches [TableAlias] over a ResolvedTable of a database: its
// database, its name, the name its columns are qualified with (the alias,
// or the table's name) and the table.
func resolvedLeaf(n sql.Node) (db, name, ref string, table sql.Table, ok bool) {
	var alias string
	if a, isAlias := n.(*plan.TableAlias); isAlias {
		alias, n = a.Name(), a.Child
	}
	rt, isTable := n.(*plan.ResolvedTable)
	if !isTable || rt.Database() == nil {
		return "", "", "", nil, false
	}
	return rt.Database().Name(), rt.Name(), cmp.Or(alias, rt.Name()), rt.UnderlyingTable(), true
}

// outputOrder is one ORDER BY field of a private SELECT DISTINCT: the
// output column it sorts by.
type outputOrder struct {
	out   int
	order sql.SortOrder
	nulls sql.NullOrdering
}

// distinct rewrites Distinct(Project(exprs, source)), and
// Distinct(Project(exprs, Sort(fields, [Project(columns and aliases,)]
// source))), which the planbuilder makes of SELECT DISTINCT … ORDER BY an
// alias or a column written differently from the select list: the sort is
// returned as orders over the output columns, to be applied to the
// released rows (each field must be one of the selected expressions, as
// MySQL requires with DISTINCT).
func (p *policy) distinct(ctx *sql.Context, d *plan.Distinct) (*Release, []outputOrder, error) {
	proj, ok := d.Child.(*plan.Project)
	if !ok {
		return nil, nil, nil
	}
	child := proj.Child
	sort, sorted := child.(*plan.Sort)
	aliases := map[string]sql.Expression{}
	if sorted {
		child = sort.Child
		if inner, ok := child.(*plan.Project); ok {
			for _, e := range inner.Projections {
				switch e := e.(type) {
				case *expression.Alias:
					aliases[strings.ToLower(e.Name())] = e.Child
				case *expression.GetField:
				default:
					return nil, nil, nil
				}
			}
			child = inner.Child
		}
	}
	src, ok := p.protectedSource(child)
	if !ok {
		return nil, nil, nil
	}
	keys := make([]sql.Expression, len(proj.Projections))
	out := make([]int, len(keys))
	for i, e := range proj.Projections {
		keys[i] = unalias(e)
		out[i] = i
	}
	var order []outputOrder
	if sorted {
		for _, f := range sort.SortFields {
			i := selectedIndex(proj.Projections, aliases, f.Column)
			if i < 0 {
				return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the ORDER BY of a private SELECT DISTINCT may only use the selected columns, not %s: add it to the SELECT list (it then becomes part of the released key) or order by a selected column", f.Column))
			}
			order = append(order, outputOrder{out: i, order: f.Order, nulls: f.NullOrdering})
		}
	}
	r, err := p.newRelease(ctx, src, distinctRows, keys, out, nil, proj.Schema(), proj.Projections)
	return r, order, err
}

// selectedIndex returns the index of the select-list expression an ORDER
// BY expression names (by alias or as the same expression), or -1.
func selectedIndex(selected []sql.Expression, aliases map[string]sql.Expression, e sql.Expression) int {
	if gf, ok := e.(*expression.GetField); ok && gf.Table() == "" {
		for i, s := range selected {
			if a, ok := s.(*expression.Alias); ok && strings.EqualFold(a.Name(), gf.Name()) {
				return i
			}
		}
		if a, ok := aliases[strings.ToLower(gf.Name())]; ok {
			e = a
		}
	}
	e = unalias(e)
	for i, s := range selected {
		if sameExpr(unalias(s), e) {
			return i
		}
	}
	return -1
}

// sortOverRelease rebinds the fields of a Sort over a rewritten SELECT
// DISTINCT (a Project over a Release) that repeat an aliased select-list
// expression, as ORDER BY 1 does, to the released output column: the
// expression's own columns are not there any more.
func sortOverRelease(s *plan.Sort) sql.Node {
	proj, ok := s.Child.(*plan.Project)
	if !ok {
		return s
	}
	if _, ok := proj.Child.(*Release); !ok {
		return s
	}
	fields := make(sql.SortFields, len(s.SortFields))
	changed := false
	for k, f := range s.SortFields {
		fields[k] = f
		a, ok := f.Column.(*expression.Alias)
		if !ok {
			continue
		}
		for _, ref := range proj.Projections {
			if gf, ok := ref.(*expression.GetField); ok && strings.EqualFold(gf.Name(), a.Name()) {
				fields[k] = sql.SortField{Column: gf, Order: f.Order, NullOrdering: f.NullOrdering}
				changed = true
				break
			}
		}
	}
	if !changed {
		return s
	}
	return plan.NewSort(fields, s.Child)
}

// groupBy rewrites GroupBy(select, group, source) when it only groups (the
// GROUP BY form) or only computes DP_SET_UNION calls (after LiftSetUnion).
func (p *policy) groupBy(ctx *sql.Context, g *plan.GroupBy) (*Release, error) {
	return p.groupByAs(ctx, g, g.Schema(), g.SelectedExprs, false)
}

// groupByAs is groupBy with the release's schema and the expressions whose
// column ids its outputs take given; hide outputs the projection's raw
// columns of the table that are not group keys as NULL, and records them as
// hidden (see hiddenKey).
func (p *policy) groupByAs(ctx *sql.Context, g *plan.GroupBy, schema sql.Schema, ids []sql.Expression, hide bool) (*Release, error) {
	src, ok := p.protectedSource(g.Child)
	if !ok {
		return nil, nil
	}
	if len(g.GroupByExprs) == 0 && !hasSetUnion(g.SelectedExprs) {
		return p.globalAggregates(ctx, src, g, schema, ids) // global.go
	}
	if len(g.GroupByExprs) == 0 {
		var calls []*functions.SetUnion
		for _, e := range g.SelectedExprs {
			su, ok := e.(*functions.SetUnion)
			if !ok || su.Options() == nil {
				return nil, nil // other aggregates: the guard refuses
			}
			calls = append(calls, su)
		}
		return p.newRelease(ctx, src, setUnions, nil, nil, calls, g.Schema(), g.SelectedExprs)
	}
	keys := make([]sql.Expression, len(g.GroupByExprs))
	for i, e := range g.GroupByExprs {
		keys[i] = unalias(e)
	}
	out := make([]int, len(g.SelectedExprs))
	var aggs []aggregate
	var sides []int8 // DP_INTERVAL_LOW/HIGH outputs (interval.go)
	for i, e := range g.SelectedExprs {
		out[i] = -1
		for k, key := range keys {
			if sameExpr(unalias(e), key) {
				out[i] = k
				break
			}
		}
		if out[i] >= 0 {
			continue
		}
		if _, ok := unalias(e).(*expression.GetField); ok && hide {
			if ie, ok := e.(sql.IdExpression); ok && ie.Id() != 0 {
				ctx.Value(hiddenKey{}).(*hiddenColumns).ids[ie.Id()] = src.db + "." + src.name
				continue // out[i] = -1: NULL
			}
		}
		a, ok, err := aggregateOf(src, intervalArg(e, i, &sides))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil // a non-key column: the guard refuses
		}
		// The same aggregate twice (HAVING COUNT(*) … with COUNT(*) in
		// the select list) is one aggregate, released once.
		for j, b := range aggs {
			if sameAggregate(a, b) {
				out[i] = len(keys) + j
				break
			}
		}
		if out[i] < 0 {
			out[i] = len(keys) + len(aggs)
			aggs = append(aggs, a)
		}
	}
	var r *Release
	var err error
	if len(aggs) > 0 {
		r, err = p.newAggregateRelease(ctx, src, keys, aggs, out, schema, ids)
		if r != nil {
			r.intervals = sides
		}
	} else if sides != nil {
		return nil, nil // DP_INTERVAL_* of no aggregate: the guard refuses
	} else {
		r, err = p.newRelease(ctx, src, distinctRows, keys, out, nil, schema, ids)
	}
	if err == nil && hide {
		h := ctx.Value(hiddenKey{}).(*hiddenColumns)
		for i, k := range out {
			if k >= 0 && k < len(keys) {
				h.keys = append(h.keys, hiddenKeyRef{expr: keys[k].String(), ref: r.outputs[i]})
			}
		}
	}
	return r, err
}

// projectedGroupBy rewrites Project(GroupBy(…)) when the GroupBy groups by
// expressions: the planbuilder then selects the raw columns the expressions
// read and computes the expressions in the Project above (SELECT LOWER(w)
// AS k, COUNT(*) … GROUP BY k). The projection, with its references to the
// GroupBy's columns replaced by what they select, must consist of group keys
// and DP aggregates, as for groupBy; the raw columns themselves never leave.
func (p *policy) projectedGroupBy(ctx *sql.Context, proj *plan.Project) (*Release, error) {
	g, ok := proj.Child.(*plan.GroupBy)
	if !ok || len(g.GroupByExprs) == 0 {
		return nil, nil
	}
	if _, ok := p.protectedSource(g.Child); !ok {
		return nil, nil
	}
	byID := map[sql.ColumnId]sql.Expression{}
	for _, e := range g.SelectedExprs {
		if ie, ok := e.(sql.IdExpression); ok && ie.Id() != 0 {
			byID[ie.Id()] = unalias(e)
		}
	}
	exprs := make([]sql.Expression, len(proj.Projections))
	for i, e := range proj.Projections {
		x, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			if gf, ok := e.(*expression.GetField); ok {
				if sel, ok := byID[gf.Id()]; ok {
					if _, raw := sel.(*expression.GetField); !raw {
						return sel, transform.NewTree, nil
					}
				}
			}
			return e, transform.SameTree, nil
		})
		if err != nil {
			return nil, err
		}
		exprs[i] = x
	}
	// The outputs keep the projection's column ids (transform.Expr
	// rebuilds an Alias with a new id).
	return p.groupByAs(ctx, plan.NewGroupBy(exprs, g.GroupByExprs, g.Child), proj.Schema(), proj.Projections, true)
}

// aggregate is one DP aggregate of a private GROUP BY: its kind and the
// expression whose values it aggregates (nil for COUNT(*) and
// COUNT(DISTINCT privacy_unit)).
type aggregate struct {
	kind  dpagg.Kind
	value sql.Expression
	level float64 // a quantile's p (quantile.go)
}

// aggregateOf recognises the aggregates a private GROUP BY offers: COUNT(*),
// COUNT(expr), COUNT(DISTINCT privacy_unit), SUM(expr), AVG(expr). ok is
// false for an expression that is no aggregate; any other aggregate is an
// error saying which are offered.
func aggregateOf(src source, e sql.Expression) (aggregate, bool, error) {
	refuse := func(what string) (aggregate, bool, error) {
		return aggregate{}, false, release.ErrAccess(src.db, src.name, fmt.Sprintf(
			"%s is not offered; a private release gives noisy COUNT(*), COUNT(expr), COUNT(DISTINCT %s), SUM(expr), AVG(expr), VARIANCE/VAR_POP/VAR_SAMP(expr), STDDEV/STDDEV_POP/STDDEV_SAMP(expr), MEDIAN(expr) and PERCENTILE_CONT(expr, p), per privately chosen key with GROUP BY or over the whole table without", what, src.unit))
	}
	switch x := e.(type) {
	case *aggregation.Count:
		if w := x.Window(); w != nil {
			return refuse("a window function")
		}
		if isConstantNonNull(x.Child) {
			return aggregate{kind: dpagg.CountRows}, true, nil
		}
		return aggregate{kind: dpagg.CountValues, value: x.Child}, true, nil
	case *aggregation.CountDistinct:
		if ch := x.Children(); len(ch) == 1 {
			if gf, ok := ch[0].(*expression.GetField); ok && strings.EqualFold(gf.Name(), src.unit) && !src.join.owns(gf) {
				return aggregate{kind: dpagg.CountUnits}, true, nil
			}
		}
		return refuse(fmt.Sprintf("COUNT(DISTINCT …) of anything but the privacy unit %s (for the distinct values themselves, use SELECT DISTINCT)", src.unit))
	case *aggregation.Sum:
		return aggregate{kind: dpagg.Sum, value: x.Child}, true, nil
	case *aggregation.Avg:
		return aggregate{kind: dpagg.Avg, value: x.Child}, true, nil
	case *aggregation.VarPop, *aggregation.VarSamp, *aggregation.StdDevPop, *aggregation.StdDevSamp:
		return spreadOf(e) // global.go
	case *functions.Quantile:
		return quantileOf(src, x) // quantile.go
	case sql.Aggregation:
		return refuse(describeAggregate(e))
	}
	return aggregate{}, false, nil
}

func describeAggregate(e sql.Expression) string {
	if f, ok := e.(sql.FunctionExpression); ok {
		return strings.ToUpper(f.FunctionName()) + "()"
	}
	return e.String()
}

// isConstantNonNull reports whether e is a constant that is not NULL (the
// planbuilder writes COUNT(*) as COUNT(1)).
func isConstantNonNull(e sql.Expression) bool {
	if _, ok := e.(*expression.Star); ok {
		return true
	}
	l, ok := e.(*expression.Literal)
	return ok && l.Value() != nil
}

// newAggregateRelease builds the release of a private GROUP BY with DP
// aggregates: the options from the session (and the statement's SET_VAR
// hints), calibrated now so that bad options fail before any charge.
func (p *policy) newAggregateRelease(ctx *sql.Context, src source, keys []sql.Expression, aggs []aggregate, out []int, schema sql.Schema, ids []sql.Expression, adjust ...func(*dpagg.Options)) (*Release, error) {
	if src.join != nil && src.join.keys && !src.join.checked {
		return p.publicKeysRelease(ctx, src, keys, aggs, out, schema, ids, adjust...) // publickeys.go
	}
	kinds := make([]dpagg.Kind, len(aggs))
	var values []sql.Expression
	valueOf := make([]int, len(aggs))
	for i, a := range aggs {
		kinds[i] = a.kind
		valueOf[i] = -1
		if a.value != nil {
			valueOf[i] = len(keys) + len(values)
			values = append(values, a.value)
		}
	}
	if err := dpvars.SessionHintsError(ctx); err != nil {
		return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState, "private GROUP BY on %s.%s: %s", src.db, src.name, err)
	}
	ctx = p.withDefaults(ctx, src, keys) // the table's configured defaults (defaults.go)
	ap, err := dpvars.SessionAggregateParams(ctx)
	if err == nil {
		var o dpagg.Options
		o, err = dpvars.AggregateOptions(dpvars.SessionParams(ctx), ap, kinds)
		setQuantileLevels(&o, aggs) // quantile.go
		if err == nil {
			err = p.columnBounds(ctx, src, aggs, &o)
		}
		for _, f := range adjust {
			f(&o)
		}
		if err == nil {
			var plan *dpagg.Plan
			if plan, err = dpagg.Calibrate(o); err == nil {
				r, err := p.newRelease(ctx, src, aggregateRows, append(keys, values...), out, nil, schema, ids)
				if err != nil {
					return nil, err
				}
				r.groupKeys, r.aggOpts, r.aggPlan, r.aggValue = len(keys), o, plan, valueOf
				markFloatOutputs(ctx, r)
				if src := r.scan.PushdownSource(); src != nil {
					if err := r.planPushdown(src, p.logf); err != nil {
						return nil, err
					}
				}
				return r, nil
			}
		}
	}
	return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState, "private GROUP BY on %s.%s: %s (check the dp_* session variables)", src.db, src.name, err)
}

// columnRef is a reference to column i of a release's output whose column
// id is id (NewGetFieldWithTable takes a table id, and sets the column id
// to the index).
func columnRef(i int, id sql.ColumnId, c *sql.Column) *expression.GetField {
	gf := expression.NewGetFieldWithTable(i, 0, c.Type, c.DatabaseSource, c.Source, c.Name, c.Nullable)
	if id == 0 {
		return gf
	}
	return gf.WithId(id).(*expression.GetField)
}

func unalias(e sql.Expression) sql.Expression {
	for {
		a, ok := e.(*expression.Alias)
		if !ok {
			return e
		}
		e = a.Child
	}
}

func sameExpr(a, b sql.Expression) bool {
	ga, ok1 := a.(*expression.GetField)
	gb, ok2 := b.(*expression.GetField)
	if ok1 && ok2 {
		return ga.Id() == gb.Id() || (strings.EqualFold(ga.Table(), gb.Table()) && strings.EqualFold(ga.Name(), gb.Name()))
	}
	return a.String() == b.String()
}

// newRelease binds the expressions of a release to the table's rows and
// compiles its sealed scan: the allow-list refuses, before anything is
// charged, what a release may not evaluate.
func (p *policy) newRelease(ctx *sql.Context, src source, mode releaseMode, keys []sql.Expression, out []int, calls []*functions.SetUnion, schema sql.Schema, outputs []sql.Expression) (*Release, error) {
	ctx = p.withDefaults(ctx, src, keys) // the table's configured defaults (defaults.go)
	if err := dpvars.CheckPrivacyUnit(ctx, src.db, src.name, src.unit); err != nil {
		return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState, "private release on %s.%s: %s", src.db, src.name, err)
	}
	r := &Release{mode: mode, db: src.db, name: src.name, out: out, schema: schema, gov: p.gov, rnd: p.rnd, indexes: p.indexes}
	// The output columns keep the column ids of the expressions they
	// replace, so that the nodes above find them (ProjectedExprs).
	for i, c := range schema {
		id := sql.ColumnId(0)
		if i < len(outputs) {
			if ie, ok := outputs[i].(sql.IdExpression); ok {
				id = ie.Id()
			}
		}
		r.outputs = append(r.outputs, columnRef(i, id, c))
	}
	tschema := src.table.Schema()
	bind := func(e sql.Expression, what string) (release.Expr, error) {
		b, err := bindToTable(src, tschema, e, what)
		return release.Expr{E: b, Where: what}, err
	}
	if src.join != nil && src.join.err != nil {
		return nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("%v; %s", src.join.err, joinForm))
	}
	if err := src.join.refuseKeys(src, mode); err != nil {
		return nil, err // publickeys.go
	}
	filters, publics, err := p.enrich(ctx, src)
	if err != nil {
		return nil, err
	}
	r.publics = publics
	if src.join != nil {
		jf, err := src.join.joinFilter(src, tschema)
		if err != nil {
			return nil, err
		}
		if jf != nil {
			filters = append(filters, jf)
		}
	}
	var filter release.Expr
	for _, f := range filters {
		b, err := bind(f, "WHERE clause")
		if err != nil {
			return nil, err
		}
		if filter.E == nil {
			filter = b
		} else {
			filter.E = expression.NewAnd(filter.E, b.E)
		}
	}
	var scanKeys []release.Expr
	switch mode {
	case distinctRows, aggregateRows:
		for _, k := range keys {
			b, err := bind(k, "selected columns")
			if err != nil {
				return nil, err
			}
			scanKeys = append(scanKeys, b)
		}
		if err := dpvars.SessionHintsError(ctx); err != nil {
			return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState, "private release on %s.%s: %s", src.db, src.name, err)
		}
		params := dpvars.SessionParams(ctx)
		o, err := dpvars.CheckSetUnion(params)
		if err != nil {
			return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState, "private SELECT DISTINCT on %s.%s: %s (check the dp_* session variables)", src.db, src.name, err)
		}
		r.opts = o
	case setUnions:
		for i, c := range calls {
			gf, ok := c.PrivacyUnit().(*expression.GetField)
			if !ok || !strings.EqualFold(gf.Name(), src.unit) || !strings.EqualFold(gf.Table(), src.ref) {
				return nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the privacy unit of DP_SET_UNION over it must be its column %s, not %s", src.unit, c.PrivacyUnit()))
			}
			item, err := bind(c.Item(), "DP_SET_UNION item")
			if err != nil {
				return nil, err
			}
			bound, facts, err := p.bindSetUnion(ctx, src, c, i, len(calls)) // defaults.go: with the configured defaults
			if err != nil {
				return nil, err
			}
			r.calls, r.origins = append(r.calls, bound), append(r.origins, facts...)
			scanKeys = append(scanKeys, item)
		}
	}
	// The join's public side first: it describes its set (the public
	// table's version, its expressions), which the scan's canonical key
	// encodes.
	if src.join != nil {
		pub, err := p.joinPublic(ctx, src, src.join)
		if err != nil {
			return nil, err
		}
		r.publics = append(r.publics, pub)
	}
	scan, err := release.NewScan(ctx, src.db, src.name, src.table, src.unit, filter, scanKeys, p.limits)
	if err != nil {
		return nil, err
	}
	r.scan = scan
	if src := scan.PushdownSource(); src != nil && mode != aggregateRows { // aggregates: newAggregateRelease
		if err := r.planPushdown(src, p.logf); err != nil {
			return nil, err
		}
	}
	r.origins = append(r.origins, originFacts(ctx, mode)...) // DP_SET_UNION: its calls'
	r.done = &releaseResult{}
	if memo, ok := ctx.Value(memoKey{}).(map[string]*releaseResult); ok {
		if key := r.spec(); key != "" {
			if prev, ok := memo[key]; ok {
				r.done = prev
			} else {
				memo[key] = r.done
			}
		}
	}
	return r, nil
}

// spec identifies a release within a statement: what it reads and how
// (the scan's canonical Spec: printed SQL drops fields such as LIKE's
// ESCAPE), with which options, and what it outputs; "" (made on its own)
// when the scan has no Spec.
func (r *Release) spec() string {
	if r.scan.Spec() == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d|%s.%s|%s|%q", r.mode, r.db, r.name, r.optionsSpec(), r.scan.Spec())
	for _, o := range r.out {
		fmt.Fprintf(&b, ",%d", o)
	}
	return b.String()
}

// bindToTable rewrites e's column references to indexes of the table's
// full schema; a reference to anything else (an outer query's column) is
// refused.
func bindToTable(src source, tschema sql.Schema, e sql.Expression, what string) (sql.Expression, error) {
	out, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		gf, ok := e.(*expression.GetField)
		if !ok {
			return e, transform.SameTree, nil
		}
		if src.join.owns(gf) {
			g, err := src.join.column(src, tschema, gf)
			return g, transform.NewTree, err
		}
		idx := tschema.IndexOfColName(gf.Name())
		if idx < 0 || (gf.Table() != "" && !strings.EqualFold(gf.Table(), src.ref) && !strings.EqualFold(gf.Table(), src.name)) {
			return nil, transform.SameTree, release.ErrAccess(src.db, src.name, fmt.Sprintf("the %s of a private release may only use the table's own columns, not %s", what, gf))
		}
		c := tschema[idx]
		return expression.NewGetFieldWithTable(idx, 0, c.Type, src.db, src.name, c.Name, c.Nullable), transform.NewTree, nil
	})
	return out, err
}

// guard is GuardProtected.
func (p *policy) guard(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	if p.gov == nil || !p.gov.Governed(ctx) {
		return n, transform.SameTree, nil
	}
	if err := p.check(n); err != nil {
		if better := p.refusal(n); better != nil {
			return n, transform.SameTree, better // refusals.go: says what to write
		}
		return n, transform.SameTree, err
	}
	return n, transform.SameTree, nil
}

// check walks the whole plan — opaque nodes and expression subqueries
// included — and refuses any node that reads a protected table outside a
// Release.
func (p *policy) check(n sql.Node) error {
	var err error
	transform.Inspect(n, func(n sql.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *Release:
			return false
		case *plan.ShowColumns, *plan.ShowCreateTable, *plan.ShowIndexes:
			return false // metadata only
		case *plan.AnalyzeTable:
			for _, t := range n.Tables {
				db := n.Db
				if d, ok := t.(sql.Databaser); ok && d.Database() != nil {
					db = d.Database().Name()
				}
				if _, prot := p.gov.PrivacyUnit(db, t.Name()); prot {
					err = release.ErrAccess(db, t.Name(), "ANALYZE TABLE computes statistics of protected rows")
					return false
				}
			}
		case *plan.TableCountLookup:
			if n.Db() != nil {
				if _, prot := p.gov.PrivacyUnit(n.Db().Name(), n.Table().Name()); prot {
					err = release.ErrAccess(n.Db().Name(), n.Table().Name(), "counting rows is not a private release")
					return false
				}
			}
		case sql.TableNode:
			if n.Database() != nil {
				if _, prot := p.gov.PrivacyUnit(n.Database().Name(), n.UnderlyingTable().Name()); prot {
					err = release.ErrAccess(n.Database().Name(), n.UnderlyingTable().Name(), "this query reads its rows directly")
					return false
				}
			}
		}
		if ex, ok := n.(sql.Expressioner); ok {
			for _, e := range ex.Expressions() {
				transform.InspectExpr(e, func(e sql.Expression) bool {
					if sq, ok := e.(*plan.Subquery); ok && sq.Query != nil && err == nil {
						err = p.check(sq.Query)
					}
					return err != nil
				})
			}
		}
		return err == nil
	})
	return err
}
