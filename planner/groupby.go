package planner

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/dpagg"
)

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
			r.setIntervals(ctx, sides) // and its memo key
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
	exprs, err := substituteSelected(g, proj.Projections, false)
	if err != nil {
		return nil, err
	}
	// The outputs keep the projection's column ids (transform.Expr
	// rebuilds an Alias with a new id).
	return p.groupByAs(ctx, plan.NewGroupBy(exprs, g.GroupByExprs, g.Child), proj.Schema(), proj.Projections, true)
}

// substituteSelected returns projections with every reference to one of
// g's selected columns replaced by what that column selects (without its
// alias); with raw false, a column that selects a plain column stays a
// reference (projectedGroupBy), with raw true it is replaced too
// (intervalGroupBy).
func substituteSelected(g *plan.GroupBy, projections []sql.Expression, raw bool) ([]sql.Expression, error) {
	byID := map[sql.ColumnId]sql.Expression{}
	for _, e := range g.SelectedExprs {
		if ie, ok := e.(sql.IdExpression); ok && ie.Id() != 0 {
			byID[ie.Id()] = unalias(e)
		}
	}
	exprs := make([]sql.Expression, len(projections))
	for i, e := range projections {
		x, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			if gf, ok := e.(*expression.GetField); ok {
				if sel, ok := byID[gf.Id()]; ok {
					if _, plain := sel.(*expression.GetField); raw || !plain {
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
	return exprs, nil
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
		if d := p.tableDefaults(src); d != nil {
			o.BasicLedger = d.BasicLedger
		}
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
				r.done = memoized(ctx, r) // keyed by the aggregates' options too
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
