package planner

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/lookup"
)

// Public enrichment of a private release.
//
// A release over a protected table T may filter its rows with
//
//	T-expr [NOT] IN (SELECT c FROM P [WHERE …P only…])
//	[NOT] EXISTS (SELECT … FROM P WHERE P.c = T-expr [AND …P only…])
//
// where P is a table the configuration declares public (the governor's
// release.PublicTables; without one, nothing is public). The subquery is
// compiled into a release.Public — P's rows that pass its filter, mapped
// through its (allow-listed, deterministic) expression — and the predicate
// into a lookup.In over its lookup.Set. When the release runs, the set is
// filled from P before anything is charged or any protected row is read,
// under the analyst's own context (which a protected table refuses), and
// each protected row probes it once, inside the sealed evaluation, with
// one conversion and one hash lookup.
//
// Why the privacy argument is unchanged (proof sketch). Let D and D' be
// neighbouring databases: equal but for the rows of one user u in T. P is
// not protected and is the same in both; so is the set S = f(P) the public
// side computes, its size, the bound it is checked against (lookup.Limits,
// fixed by configuration), and the errors and time of computing it: S is a
// constant of the release, computed before and independently of T. A
// filter φ(r) = g(r, S) and a key k(r) = h(r, S) are then fixed functions
// of one protected row r, exactly like the filters and keys a release
// already evaluates without enrichment. The release's mechanism bounds
// each user's contribution (Δ0 distinct keys for DP_SET_UNION, contribution
// bounds for the aggregates) over the multiset {k(r) : r ∈ T, φ(r)}, in
// which u's rows contribute only through their own images; so the
// sensitivity analysis of the mechanism, and its (ε, δ), hold as before.
// The per-row cost of a probe depends on the probed value's size (bounded
// by the sealed limits, as any function's) and on S only through a hash
// lookup, so the side channels the sealed evaluation closes stay closed.
//
// Refused (MySQL 1142, naming the allowed forms): a subquery that reads a
// protected table (including T itself) or anything but one public table
// with an optional WHERE (joins, derived tables, views, GROUP BY, ORDER BY,
// LIMIT, DISTINCT is accepted and ignored); a public side that refers to
// T's columns other than through EXISTS's single P.c = T-expr equality
// (correlated IN subqueries); comparisons other than = in that
// correlation; comparisons between classes of types lookup.Compatible does
// not accept; any other subquery inside a release; and non-deterministic
// or non-allow-listed expressions on either side (the sealed allow-list).

// enrichForms names the allowed forms in refusals.
const enrichForms = "a private release may use public tables only as T.col [NOT] IN (SELECT c FROM public_table [WHERE …its own columns…]) or [NOT] EXISTS (SELECT … FROM public_table WHERE public_table.c = T.col [AND …its own columns…]), where public_table is a table the server's configuration declares public"

// isPublic reports whether the configuration declares db.table public.
func (p *policy) isPublic(db, table string) bool {
	pt, ok := p.gov.(release.PublicTables)
	return ok && pt.Public(db, table)
}

// publicSource is a public table under a chain of filters.
type publicSource struct {
	db, name, ref string
	table         sql.Table
	filters       []sql.Expression
}

// publicTable matches Filter* over [TableAlias] over a ResolvedTable of a
// table the configuration declares public.
func (p *policy) publicTable(n sql.Node) (publicSource, bool) {
	var s publicSource
	for {
		switch c := n.(type) {
		case *plan.Filter:
			s.filters = append(s.filters, c.Expression)
			n = c.Child
			continue
		case *plan.TableAlias, *plan.ResolvedTable:
			var ok bool
			if s.db, s.name, s.ref, s.table, ok = resolvedLeaf(c); !ok {
				return s, false
			}
			if _, prot := p.gov.PrivacyUnit(s.db, s.name); prot {
				return s, false
			}
			return s, p.isPublic(s.db, s.name)
		}
		return s, false
	}
}

// enrich replaces the public subqueries of src's filters by public
// lookups, and returns the filters and the public sides to fill. Any other
// subquery is refused.
func (p *policy) enrich(ctx *sql.Context, src source) ([]sql.Expression, []*release.Public, error) {
	var publics []*release.Public
	out := make([]sql.Expression, len(src.filters))
	for i, f := range src.filters {
		nf, _, err := transform.Expr(f, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			var in sql.Expression
			var pub *release.Public
			var err error
			switch x := e.(type) {
			case *plan.InSubquery:
				sq, ok := x.RightChild.(*plan.Subquery)
				if !ok {
					return e, transform.SameTree, nil
				}
				in, pub, err = p.publicIn(ctx, src, x.LeftChild, sq)
			case *plan.ExistsSubquery:
				in, pub, err = p.publicExists(ctx, src, x.Query)
			default:
				return e, transform.SameTree, nil
			}
			if err != nil {
				return nil, transform.SameTree, err
			}
			publics = append(publics, pub)
			return in, transform.NewTree, nil
		})
		if err != nil {
			return nil, nil, err
		}
		var sub *plan.Subquery
		transform.InspectExpr(nf, func(e sql.Expression) bool {
			if s, ok := e.(*plan.Subquery); ok && sub == nil {
				sub = s
			}
			return sub != nil
		})
		if sub != nil {
			return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("its WHERE clause has a subquery (%s) that is not a public lookup; %s", describeSubquery(sub), enrichForms))
		}
		out[i] = nf
	}
	return out, publics, nil
}

func describeSubquery(sq *plan.Subquery) string {
	s := sq.QueryString
	if s == "" {
		s = "SELECT …"
	}
	if len(s) > 120 {
		s = s[:117] + "…"
	}
	return s
}

// refusePublic is the refusal of a subquery that is not an allowed public
// lookup: it names a protected table the subquery reads, when there is
// one.
func (p *policy) refusePublic(src source, sq *plan.Subquery, why string) error {
	var prot string
	transform.Inspect(sq.Query, func(n sql.Node) bool {
		if t, ok := n.(sql.TableNode); ok && t.Database() != nil && prot == "" {
			if _, ok := p.gov.PrivacyUnit(t.Database().Name(), t.UnderlyingTable().Name()); ok {
				prot = t.Database().Name() + "." + t.UnderlyingTable().Name()
			}
		}
		if r, ok := n.(*Release); ok && prot == "" {
			prot = r.db + "." + r.name // a private release inside the subquery
		}
		return prot == ""
	})
	if prot != "" {
		why = fmt.Sprintf("the subquery (%s) reads the protected table %s, which only a private release may read", describeSubquery(sq), prot)
	}
	return release.ErrAccess(src.db, src.name, why+"; "+enrichForms)
}

// publicIn makes `left IN (sq)` a lookup.
func (p *policy) publicIn(ctx *sql.Context, src source, left sql.Expression, sq *plan.Subquery) (sql.Expression, *release.Public, error) {
	q := sq.Query
	if d, ok := q.(*plan.Distinct); ok {
		q = d.Child
	}
	proj, ok := q.(*plan.Project)
	if !ok || len(proj.Projections) != 1 {
		return nil, nil, p.refusePublic(src, sq, fmt.Sprintf("the IN subquery (%s) must select one column of one table the configuration declares public, with an optional WHERE and nothing else (no join, derived table, view, GROUP BY, ORDER BY or LIMIT)", describeSubquery(sq)))
	}
	pub, ok := p.publicTable(proj.Child)
	if !ok {
		return nil, nil, p.refusePublic(src, sq, fmt.Sprintf("the IN subquery (%s) must read one table the configuration declares public, with an optional WHERE and nothing else (no join, derived table, view, GROUP BY, ORDER BY or LIMIT)", describeSubquery(sq)))
	}
	if !readsColumn(left) {
		return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the left side of IN (%s) must use the table's columns; %s", left, enrichForms))
	}
	value := unalias(proj.Projections[0])
	var filter sql.Expression
	for _, f := range pub.filters {
		filter = andOf(filter, f)
	}
	return p.newLookup(ctx, src, pub, sq, left, value, filter, false)
}

// publicExists makes `EXISTS (sq)` a lookup: sq's filters must be one
// equality between a column of the public table and an expression over the
// protected row, and conditions on the public table alone.
func (p *policy) publicExists(ctx *sql.Context, src source, sq *plan.Subquery) (sql.Expression, *release.Public, error) {
	proj, ok := sq.Query.(*plan.Project)
	var pub publicSource
	if ok {
		pub, ok = p.publicTable(proj.Child)
	}
	if !ok {
		return nil, nil, p.refusePublic(src, sq, fmt.Sprintf("the EXISTS subquery (%s) must read one table the configuration declares public, with a WHERE and nothing else (no join, derived table, view, GROUP BY, ORDER BY or LIMIT)", describeSubquery(sq)))
	}
	for _, e := range proj.Projections {
		switch x := unalias(e).(type) {
		case *expression.Literal:
		case *expression.GetField:
			if !pub.owns(x) {
				return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the EXISTS subquery (%s) may select constants or its own columns only; %s", describeSubquery(sq), enrichForms))
			}
		default:
			return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the EXISTS subquery (%s) may select constants or its own columns only; %s", describeSubquery(sq), enrichForms))
		}
	}
	var filter, value, left sql.Expression
	for _, f := range pub.filters {
		for _, c := range expression.SplitConjunction(f) {
			if pub.only(c) {
				filter = andOf(filter, c)
				continue
			}
			eq, ok := c.(*expression.Equals)
			if ok && left == nil {
				l, r := eq.Left(), eq.Right()
				if gf, ok := r.(*expression.GetField); ok && pub.owns(gf) {
					l, r = r, l
				}
				if gf, ok := l.(*expression.GetField); ok && pub.owns(gf) && pub.none(r) && readsColumn(r) {
					value, left = l, r
					continue
				}
			}
			return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the EXISTS subquery (%s) may refer to the protected row only through one equality public_table.c = T.col (a correlated subquery in any other form is not a public lookup); %s", describeSubquery(sq), enrichForms))
		}
	}
	if left == nil {
		return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the EXISTS subquery (%s) must match a public column with the protected row (WHERE public_table.c = T.col); %s", describeSubquery(sq), enrichForms))
	}
	return p.newLookup(ctx, src, pub, sq, left, value, filter, true)
}

// newLookup compiles the public side and returns the lookup predicate.
func (p *policy) newLookup(ctx *sql.Context, src source, pub publicSource, sq *plan.Subquery, left, value, filter sql.Expression, exists bool) (sql.Expression, *release.Public, error) {
	class, err := lookup.Compatible(left.Type(), value.Type())
	if err != nil {
		return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the public lookup %s: %v", describeSubquery(sq), err))
	}
	coll := sql.Collation_Default
	if st, ok := value.Type().(sql.StringType); ok {
		coll = st.Collation()
	}
	tschema := pub.table.Schema()
	bv, err := pub.bind(tschema, value)
	if err != nil {
		return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("%v; %s", err, enrichForms))
	}
	var bf sql.Expression
	if filter != nil {
		if bf, err = pub.bind(tschema, filter); err != nil {
			return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("%v; %s", err, enrichForms))
		}
	}
	desc := fmt.Sprintf("%s.%s: %s", pub.db, pub.name, describeSubquery(sq))
	set := lookup.NewSet(class, coll, fmt.Sprintf("public table %s.%s", pub.db, pub.name), p.lookupLimits)
	rp, err := release.NewPublic(ctx, pub.db, pub.name, pub.table,
		release.Expr{E: bv, Where: "selected column"}, release.Expr{E: bf, Where: "WHERE clause"}, set, p.limits)
	if err != nil {
		return nil, nil, release.ErrAccess(src.db, src.name, err.Error())
	}
	return lookup.NewIn(left, set, exists, desc), rp, nil
}

// owns reports whether gf is a column of the public table.
func (s publicSource) owns(gf *expression.GetField) bool {
	return strings.EqualFold(gf.Table(), s.ref) || strings.EqualFold(gf.Table(), s.name)
}

// only reports whether e reads only the public table's columns and no
// subquery.
func (s publicSource) only(e sql.Expression) bool {
	ok := true
	transform.InspectExpr(e, func(e sql.Expression) bool {
		switch x := e.(type) {
		case *expression.GetField:
			ok = ok && s.owns(x)
		case *plan.Subquery:
			ok = false
		}
		return !ok
	})
	return ok
}

// none reports whether e reads none of the public table's columns.
func (s publicSource) none(e sql.Expression) bool {
	ok := true
	transform.InspectExpr(e, func(e sql.Expression) bool {
		switch x := e.(type) {
		case *expression.GetField:
			ok = ok && !s.owns(x)
		case *plan.Subquery:
			ok = false
		}
		return !ok
	})
	return ok
}

// bind rewrites e's column references to indexes of the public table's
// full schema; anything else is refused.
func (s publicSource) bind(tschema sql.Schema, e sql.Expression) (sql.Expression, error) {
	out, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		switch x := e.(type) {
		case *plan.Subquery:
			return nil, transform.SameTree, fmt.Errorf("a public lookup over %s.%s may not hold a subquery", s.db, s.name)
		case *expression.GetField:
			idx := tschema.IndexOfColName(x.Name())
			if idx < 0 || !s.owns(x) {
				return nil, transform.SameTree, fmt.Errorf("the public side of a lookup over %s.%s may only use that table's columns, not %s (a correlated IN subquery is not a public lookup: use EXISTS … WHERE public_table.c = T.col)", s.db, s.name, x)
			}
			c := tschema[idx]
			return expression.NewGetFieldWithTable(idx, 0, c.Type, s.db, s.name, c.Name, c.Nullable), transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
	return out, err
}

// readsColumn reports whether e reads a column.
func readsColumn(e sql.Expression) bool {
	found := false
	transform.InspectExpr(e, func(e sql.Expression) bool {
		_, found = e.(*expression.GetField)
		return found
	})
	return found
}

func andOf(a, b sql.Expression) sql.Expression {
	if a == nil {
		return b
	}
	return expression.NewAnd(a, b)
}

// fillPublic reads the public sides of the release's lookups, before
// anything is charged or any protected row read.
func (r *Release) fillPublic(ctx *sql.Context) error {
	for _, p := range r.publics {
		if err := p.Fill(ctx); err != nil {
			return err
		}
	}
	if r.pubKeys != nil {
		return r.pubKeys.compute(ctx, r) // publickeys.go
	}
	return nil
}
