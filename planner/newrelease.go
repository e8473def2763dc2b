package planner

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

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
	r.outputs = outputRefs(schema, outputs)
	b := binder{src: src, tschema: src.table.Schema()}
	filter, err := p.releaseFilter(ctx, r, b)
	if err != nil {
		return nil, err
	}
	var scanKeys []release.Expr
	if mode == setUnions {
		scanKeys, err = r.bindCalls(ctx, p, b, calls)
	} else {
		scanKeys, err = r.bindKeys(ctx, b, keys)
		if err == nil && mode == distinctRows {
			r.opts = basicLedgerDistinct(ctx, p.tableDefaults(src), r.opts)
		}
	}
	if err != nil {
		return nil, err
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
	if mode != aggregateRows {
		r.done = memoized(ctx, r) // aggregates: once their options are set (newAggregateRelease)
	}
	return r, nil
}

// outputRefs are the release's output columns: they keep the column ids
// of the expressions they replace, so that the nodes above find them
// (ProjectedExprs).
func outputRefs(schema sql.Schema, outputs []sql.Expression) []sql.Expression {
	var refs []sql.Expression
	for i, c := range schema {
		id := sql.ColumnId(0)
		if i < len(outputs) {
			if ie, ok := outputs[i].(sql.IdExpression); ok {
				id = ie.Id()
			}
		}
		refs = append(refs, columnRef(i, id, c))
	}
	return refs
}

// binder binds a release's expressions to the rows of its table
// (bindToTable).
type binder struct {
	src     source
	tschema sql.Schema
}

func (b binder) bind(e sql.Expression, what string) (release.Expr, error) {
	x, err := bindToTable(b.src, b.tschema, e, what)
	return release.Expr{E: x, Where: what}, err
}

// releaseFilter is the release's row filter, bound to the table: the
// WHERE clause, the public lookups' conditions (enrich, whose public sides
// go to r.publics) and a public join's condition, ANDed; a zero Expr when
// there are none. A refused join or key fails here, before anything is
// read.
func (p *policy) releaseFilter(ctx *sql.Context, r *Release, b binder) (release.Expr, error) {
	src := b.src
	if src.join != nil && src.join.err != nil {
		return release.Expr{}, release.ErrAccess(src.db, src.name, fmt.Sprintf("%v; %s", src.join.err, joinForm))
	}
	if err := src.join.refuseKeys(src, r.mode); err != nil {
		return release.Expr{}, err // publickeys.go
	}
	filters, publics, err := p.enrich(ctx, src)
	if err != nil {
		return release.Expr{}, err
	}
	r.publics = publics
	if src.join != nil {
		jf, err := src.join.joinFilter(src, b.tschema)
		if err != nil {
			return release.Expr{}, err
		}
		if jf != nil {
			filters = append(filters, jf)
		}
	}
	var filter release.Expr
	for _, f := range filters {
		x, err := b.bind(f, "WHERE clause")
		if err != nil {
			return release.Expr{}, err
		}
		if filter.E == nil {
			filter = x
		} else {
			filter.E = expression.NewAnd(filter.E, x.E)
		}
	}
	return filter, nil
}

// bindKeys binds the keys of a DISTINCT or GROUP BY release and sets its
// set-union options from the session (hints, variables, defaults).
func (r *Release) bindKeys(ctx *sql.Context, b binder, keys []sql.Expression) ([]release.Expr, error) {
	src := b.src
	var scanKeys []release.Expr
	for _, k := range keys {
		x, err := b.bind(k, "selected columns")
		if err != nil {
			return nil, err
		}
		scanKeys = append(scanKeys, x)
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
	return scanKeys, nil
}

// basicLedgerDistinct returns o with single_item as its mechanism when the
// release is a private SELECT DISTINCT on a basic-composition ledger whose
// users contribute one item each (max_items 1), and neither the statement,
// the session nor the configuration of the table or its column chose the
// mechanism: single_item's π(n) is the optimal (ε, δ)-DP selection at
// Δ0 = 1, which a zCDP account would refuse (docs/privacy.md §42). The
// choice reads options and configuration only. A π(n) table too large to
// build keeps o.
func basicLedgerDistinct(ctx *sql.Context, d *dpvars.TableDefaults, o setunion.Options) setunion.Options {
	if d == nil || !d.BasicLedger || o.MaxItems != 1 || o.Mechanism != setunion.DPSIPS || dpvars.Origin(ctx, dpvars.VarMechanism) != dpvars.OriginServer {
		return o
	}
	s := o
	s.Mechanism = setunion.SingleItem
	if s, err := dpvars.CheckSetUnion(s); err == nil {
		return s
	}
	return o
}

// bindCalls binds the items of a DP_SET_UNION release, one scan key per
// call, after checking that each call's privacy unit is the table's.
func (r *Release) bindCalls(ctx *sql.Context, p *policy, b binder, calls []*functions.SetUnion) ([]release.Expr, error) {
	src := b.src
	var scanKeys []release.Expr
	for i, c := range calls {
		gf, ok := c.PrivacyUnit().(*expression.GetField)
		if !ok || !strings.EqualFold(gf.Name(), src.unit) || !strings.EqualFold(gf.Table(), src.ref) {
			return nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the privacy unit of DP_SET_UNION over it must be its column %s, not %s", src.unit, c.PrivacyUnit()))
		}
		item, err := b.bind(c.Item(), "DP_SET_UNION item")
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
	return scanKeys, nil
}

// memoized is the result of the statement's release identical to r (the
// same spec) if one was planned before, or a new one recorded in the
// statement's memo: identical releases in one statement share one result
// and one charge.
func memoized(ctx *sql.Context, r *Release) *releaseResult {
	done := &releaseResult{}
	if memo, ok := ctx.Value(memoKey{}).(map[string]*releaseResult); ok {
		if key := r.spec(); key != "" {
			if prev, ok := memo[key]; ok {
				return prev
			}
			memo[key] = done
		}
	}
	return done
}

// spec identifies a release within a statement: what it reads, how and
// with which options — its reuse specification (reuseSpec: the mode, the
// scan's canonical Spec, the mechanism's options in full, for aggregates
// the dpagg options with every aggregate's kind and bounds) — and which
// keys it outputs where (out, and which outputs are interval ends), each
// part length-prefixed; "" (made on its
// own) when the release has no reuse specification. Two releases with one
// spec compute the same released set or rows, so they share one result
// and one charge.
func (r *Release) spec() string {
	rs := r.reuseSpec()
	if rs == "" {
		return ""
	}
	b := binary.AppendUvarint(nil, uint64(len(rs)))
	b = append(b, rs...)
	b = binary.AppendUvarint(b, uint64(len(r.out)))
	for _, o := range r.out {
		b = binary.AppendVarint(b, int64(o))
	}
	b = binary.AppendUvarint(b, uint64(len(r.intervals)))
	for _, side := range r.intervals {
		b = binary.AppendVarint(b, int64(side))
	}
	return string(b)
}

// setIntervals marks the outputs that are interval ends (DP_INTERVAL_LOW
// and _HIGH: sides, interval.go) and keys the node in the statement's memo
// again: the memo shares decoded rows, and a node that outputs the ends of
// an aggregate's interval must not share the rows of one that outputs its
// value, though both are one release.
func (r *Release) setIntervals(ctx *sql.Context, sides []int8) {
	if sides == nil {
		return
	}
	r.intervals = sides
	r.done = memoized(ctx, r)
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
