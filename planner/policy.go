package planner

import (
	"cmp"
	"context"
	"math/rand/v2"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/lookup"
	"github.com/dpsql/dpsql/release/sealed"
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
	logf         func(format string, args ...any)                // WithLog
	defaults     func(db, table string) *functions.TableDefaults // defaults.go
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

func (p *policy) rewriteNode(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	n = hoistIntervalSorts(n)            // interval.go
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
