package planner

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/lookup"
)

// Joins of a protected table with a public table.
//
// A release's source may be
//
//	T [alias] [INNER] JOIN P [alias] ON P.c = T-expr [AND …P only…]
//	T [alias] LEFT JOIN P [alias] ON P.c = T-expr [AND …P only…]
//
// (the inner join in either order), where P is a table the configuration
// declares public and P.c is unique among the rows of P that pass the ON
// conditions on P alone (a lookup table: a country code, a product id, a
// glossary term). The selected keys, the WHERE filter, GROUP BY keys and
// aggregated values may then use the columns of both tables.
//
// Rewrite. The public side is compiled (release.NewPublicJoin) into a
// lookup.Set from P.c to the P columns the release reads, filled before
// the protected scan as for IN / EXISTS (public.go). Each reference to a
// P column becomes lookup.Get(T-expr): the column of the one public row
// matching the protected row, or NULL; an inner join adds the filter
// EXISTS(T-expr in the set). Since P.c is unique, this is exactly the
// join: a protected row yields one joined row when it matches (or, in a
// LEFT JOIN, one row with NULLs when it does not) and none otherwise.
// Fill fails, before anything is charged, when P.c repeats.
//
// Privacy (proof sketch). Each joined row is a fixed function of one
// protected row r and the public table: j(r) = (r, P[T-expr(r)]), where
// P[·] is a function of public data alone, computed before and
// independently of the protected table. Filters and keys over j(r) are
// therefore functions of r and public data, and a user's rows contribute
// exactly the joined rows of their own rows — at most one each — so the
// mechanism's per-user bound (Δ0 keys, contribution bounds of aggregates)
// and its (ε, δ) hold as for a release over T alone; the argument of
// public.go applies unchanged.
//
// Refused: a join of T with a protected table (T itself included) or with
// anything but one declared public table (the guard, 1142); an ON clause
// that is not one equality between a public column and an expression over
// T plus conditions on P alone (1142 naming this form); RIGHT, FULL,
// CROSS, NATURAL and USING joins and joins of more than two tables (the
// guard, 1142).
//
// P LEFT JOIN T ON P.c = T-expr [AND …T only…] (and T RIGHT JOIN P, which
// the planbuilder turns into it) is a GROUP BY over P's keys: every public
// key gets a row, with no key selection (publickeys.go); it needs DP
// aggregates and GROUP BY columns of P, and is refused (1142, saying what
// to write) in any other form.

// publicJoin is the public side of a release's join.
type publicJoin struct {
	pub    publicSource
	key    *expression.GetField // P.c
	left   sql.Expression       // the protected side of the equality
	filter sql.Expression       // conditions of ON on P alone, or nil
	outer  bool                 // LEFT JOIN
	// keys marks P LEFT JOIN T (and T RIGHT JOIN P, which the planbuilder
	// turns into it): a GROUP BY over P's keys (publickeys.go). tfilter
	// holds its ON conditions on T alone, which filter the protected rows.
	keys    bool
	tfilter []sql.Expression
	checked bool  // publicKeysSource has checked and rewritten the source
	err     error // a join of the right tables in a wrong form
	lim     lookup.Limits

	// Set while binding (joinColumn).
	set   *lookup.Set
	bound sql.Expression // left bound to T's rows
	cols  []*expression.GetField
	desc  string // the public side, in the text of the release's expressions (its memo key)
}

const joinForm = "a private release may join its protected table T with one table the server's configuration declares public, as T [INNER|LEFT] JOIN public_table ON public_table.c = T.col [AND …conditions on public_table alone…], where public_table.c is unique among the rows it reads"

// joinSides matches j as T JOIN P: it returns T's node (TableAlias or
// ResolvedTable of a protected table) and the public side, or ok = false
// when j joins anything else.
func (p *policy) joinSides(j *plan.JoinNode) (sql.Node, *publicJoin, bool) {
	if j.Op != plan.JoinTypeInner && j.Op != plan.JoinTypeLeftOuter {
		return nil, nil, false
	}
	protectedLeaf := func(n sql.Node) bool {
		if a, ok := n.(*plan.TableAlias); ok {
			n = a.Child
		}
		rt, ok := n.(*plan.ResolvedTable)
		if !ok || rt.Database() == nil {
			return false
		}
		_, prot := p.gov.PrivacyUnit(rt.Database().Name(), rt.Name())
		return prot
	}
	t, other := j.Left(), j.Right()
	keys := false
	if !protectedLeaf(t) {
		// P LEFT JOIN T: a GROUP BY over public keys (publickeys.go).
		keys = j.Op == plan.JoinTypeLeftOuter
		t, other = other, t
		if !protectedLeaf(t) {
			return nil, nil, false
		}
	}
	pub, ok := p.publicTable(other)
	if !ok || len(pub.filters) > 0 {
		return nil, nil, false
	}
	pj := &publicJoin{pub: pub, outer: j.Op == plan.JoinTypeLeftOuter && !keys, keys: keys, lim: p.lookupLimits}
	if j.Filter == nil {
		pj.err = fmt.Errorf("the join with %s.%s has no ON condition", pub.db, pub.name)
		return t, pj, true
	}
	for _, c := range expression.SplitConjunction(j.Filter) {
		if pub.only(c) {
			if keys {
				pj.err = fmt.Errorf("the ON condition %s reads the public table alone: in %s.%s LEFT JOIN a protected table, every public row is a key whatever ON says; filter the public rows in WHERE instead", c, pub.db, pub.name)
				return t, pj, true
			}
			pj.filter = andOf(pj.filter, c)
			continue
		}
		if keys && pub.none(c) && readsColumn(c) {
			pj.tfilter = append(pj.tfilter, c) // filters the protected rows
			continue
		}
		if eq, ok := c.(*expression.Equals); ok && pj.key == nil {
			l, r := eq.Left(), eq.Right()
			if gf, ok := r.(*expression.GetField); ok && pub.owns(gf) {
				l, r = r, l
			}
			if gf, ok := l.(*expression.GetField); ok && pub.owns(gf) && pub.none(r) && readsColumn(r) {
				pj.key, pj.left = gf, r
				continue
			}
		}
		pj.err = fmt.Errorf("the join condition %s is neither public_table.c = T.col nor a condition on the public table alone", c)
		if keys {
			pj.err = fmt.Errorf("the join condition %s is neither public_table.c = T.col nor a condition on the protected table alone", c)
		}
		return t, pj, true
	}
	if pj.key == nil {
		pj.err = fmt.Errorf("the join with %s.%s has no equality public_table.c = T.col", pub.db, pub.name)
	}
	return t, pj, true
}

// owns reports whether gf is a column of the joined public table.
func (pj *publicJoin) owns(gf *expression.GetField) bool {
	return pj != nil && pj.pub.owns(gf) && !strings.EqualFold(gf.Table(), "")
}

// column returns the expression that reads public column gf of the row
// the protected row joins: lookup.Get over the join's set.
func (pj *publicJoin) column(src source, tschema sql.Schema, gf *expression.GetField) (sql.Expression, error) {
	if err := pj.prepare(src, tschema); err != nil {
		return nil, err
	}
	pschema := pj.pub.table.Schema()
	idx := pschema.IndexOfColName(gf.Name())
	if idx < 0 {
		return nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("%s is not a column of %s.%s", gf, pj.pub.db, pj.pub.name))
	}
	col := -1
	for i, c := range pj.cols {
		if c.Index() == idx {
			col = i
		}
	}
	if col < 0 {
		c := pschema[idx]
		col = len(pj.cols)
		pj.cols = append(pj.cols, expression.NewGetFieldWithTable(idx, 0, c.Type, pj.pub.db, pj.pub.name, c.Name, c.Nullable))
	}
	c := pschema[idx]
	return lookup.NewGet(pj.bound, pj.set, col, c.Type, c.Name+" of "+pj.desc), nil
}

// prepare makes the join's set and binds its protected side, once.
func (pj *publicJoin) prepare(src source, tschema sql.Schema) error {
	if pj.set != nil {
		return nil
	}
	class, err := lookup.Compatible(pj.left.Type(), pj.key.Type())
	if err != nil {
		return release.ErrAccess(src.db, src.name, fmt.Sprintf("the join with %s.%s: %v", pj.pub.db, pj.pub.name, err))
	}
	coll := sql.Collation_Default
	if st, ok := pj.key.Type().(sql.StringType); ok {
		coll = st.Collation()
	}
	noJoin := src
	noJoin.join = nil
	if pj.bound, err = bindToTable(noJoin, tschema, pj.left, "join condition"); err != nil {
		return err
	}
	pj.set = lookup.NewSet(class, coll, fmt.Sprintf("public table %s.%s", pj.pub.db, pj.pub.name), pj.lim)
	pj.desc = fmt.Sprintf("%s.%s ON %s", pj.pub.db, pj.pub.name, pj.key)
	if pj.filter != nil {
		pj.desc += " AND " + pj.filter.String()
	}
	return nil
}

// joinFilter returns, for an inner join, the filter that keeps the
// protected rows that match a public row (nil for a LEFT JOIN).
func (pj *publicJoin) joinFilter(src source, tschema sql.Schema) (sql.Expression, error) {
	if err := pj.prepare(src, tschema); err != nil {
		return nil, err
	}
	if pj.outer {
		return nil, nil
	}
	return lookup.NewIn(pj.bound, pj.set, true, pj.desc), nil
}

// public compiles the join's public side, once every column the release
// reads is known.
func (p *policy) joinPublic(ctx *sql.Context, src source, pj *publicJoin) (*release.Public, error) {
	pschema := pj.pub.table.Schema()
	key, err := pj.pub.bind(pschema, pj.key)
	if err != nil {
		return nil, release.ErrAccess(src.db, src.name, err.Error())
	}
	var filter sql.Expression
	if pj.filter != nil {
		if filter, err = pj.pub.bind(pschema, pj.filter); err != nil {
			return nil, release.ErrAccess(src.db, src.name, err.Error())
		}
	}
	cols := make([]release.Expr, len(pj.cols))
	for i, c := range pj.cols {
		cols[i] = release.Expr{E: c, Where: "joined column"}
	}
	pub, err := release.NewPublicJoin(ctx, pj.pub.db, pj.pub.name, pj.pub.table,
		release.Expr{E: key, Where: "join column"}, release.Expr{E: filter, Where: "join condition"}, cols, pj.set, p.limits)
	if err != nil {
		return nil, release.ErrAccess(src.db, src.name, err.Error())
	}
	return pub, nil
}
