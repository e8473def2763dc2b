package planner

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// hasSetUnion reports whether one of the expressions is a DP_SET_UNION call.
func hasSetUnion(exprs []sql.Expression) bool {
	for _, e := range exprs {
		if _, ok := unalias(e).(*functions.SetUnion); ok {
			return true
		}
	}
	return false
}

// globalAggregates rewrites GroupBy(aggregates, no keys, source): SELECT
// COUNT(*), SUM(x) … FROM t [WHERE …] without GROUP BY. Every selected
// expression must be a DP aggregate (aggregateOf); the release is one noisy
// row with no key selection (dpagg.Options.Global: the empty key set is
// public, and its one row is released even over no rows). Anything else
// (a bare column, a constant) is left to the guard, which refuses it.
func (p *policy) globalAggregates(ctx *sql.Context, src source, g *plan.GroupBy, schema sql.Schema, ids []sql.Expression) (*Release, error) {
	out := make([]int, len(g.SelectedExprs))
	var aggs []aggregate
	var sides []int8 // DP_INTERVAL_LOW/HIGH outputs (interval.go)
	for i, e := range g.SelectedExprs {
		a, ok, err := aggregateOf(src, intervalArg(e, i, &sides))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
		out[i] = -1
		for j, b := range aggs {
			if sameAggregate(a, b) {
				out[i] = j
				break
			}
		}
		if out[i] < 0 {
			out[i] = len(aggs)
			aggs = append(aggs, a)
		}
	}
	if len(aggs) == 0 {
		return nil, nil
	}
	r, err := p.newAggregateRelease(ctx, src, nil, aggs, out, schema, ids, globalRelease)
	if r != nil {
		r.setIntervals(ctx, sides) // and its memo key
	}
	return r, err
}

// globalRelease makes aggregate options global: one key, no selection,
// max_groups_contributed 1 whatever the session says (each user has the
// one key only).
func globalRelease(o *dpagg.Options) {
	o.Global = true
	o.MaxGroupsContributed = 1
}

// aggregateNames names an aggregate release for the ledger and EXPLAIN:
// its function and its key-selection mechanism ("none" without GROUP BY).
func (r *Release) aggregateNames() (function, mechanism string) {
	if r.aggPlan.Global {
		return "global aggregates", "none"
	}
	if r.aggPlan.PublicKeys {
		return "GROUP BY aggregates over public keys", "none (public keys)"
	}
	return "GROUP BY aggregates", r.aggPlan.SelectionMechanism()
}

// spreadOf maps go-mysql-server's variance and standard deviation
// aggregates (VARIANCE = VAR_POP, STD = STDDEV = STDDEV_POP) to the DP
// spread aggregates.
func spreadOf(e sql.Expression) (aggregate, bool, error) {
	switch x := e.(type) {
	case *aggregation.VarPop:
		return aggregate{kind: dpagg.VarPop, value: x.Child}, true, nil
	case *aggregation.VarSamp:
		return aggregate{kind: dpagg.VarSamp, value: x.Child}, true, nil
	case *aggregation.StdDevPop:
		return aggregate{kind: dpagg.StdDevPop, value: x.Child}, true, nil
	case *aggregation.StdDevSamp:
		return aggregate{kind: dpagg.StdDevSamp, value: x.Child}, true, nil
	}
	return aggregate{}, false, nil
}

// floatKey keys the statement's floatOutputs in the rewrite's context.
type floatKey struct{}

// floatOutputs are the column ids of released means, variances and
// standard deviations: DOUBLE values, which go-mysql-server v0.20 types as
// their argument (an integer column's AVG would be shown as an integer).
type floatOutputs map[sql.ColumnId]bool

// markFloatOutputs types r's mean and spread outputs DOUBLE and records
// their ids for retypeFloats.
func markFloatOutputs(ctx *sql.Context, r *Release) {
	fo, _ := ctx.Value(floatKey{}).(floatOutputs)
	schema := make(sql.Schema, len(r.schema))
	copy(schema, r.schema)
	for i, ki := range r.out {
		if ki < r.groupKeys {
			continue
		}
		k := r.aggOpts.Aggregates[ki-r.groupKeys].Kind
		if k != dpagg.Avg && !(k.NeedsBounds() && k != dpagg.Sum) {
			continue
		}
		c := *schema[i]
		c.Type = types.Float64
		schema[i] = &c
		gf := r.outputs[i].(*expression.GetField)
		r.outputs[i] = columnRef(i, gf.Id(), &c)
		if fo != nil && gf.Id() != 0 {
			fo[gf.Id()] = true
		}
	}
	r.schema = schema
}

// retypeFloats gives every reference to a marked output, above the
// releases, the DOUBLE type.
func retypeFloats(n sql.Node, fo floatOutputs) (sql.Node, error) {
	if len(fo) == 0 {
		return n, nil
	}
	var fix func(n sql.Node) (sql.Node, transform.TreeIdentity, error)
	fixExpr := func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		switch x := e.(type) {
		case *plan.Subquery:
			return intoSubquery(x, fix)
		case *expression.GetField:
			if !fo[x.Id()] || x.Type() == types.Float64 {
				return e, transform.SameTree, nil
			}
			g := expression.NewGetFieldWithTable(x.Index(), int(x.TableId()), types.Float64, x.Database(), x.Table(), x.Name(), x.IsNullable())
			return g.WithId(x.Id()).(*expression.GetField), transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	}
	fix = func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		if _, ok := n.(*Release); ok {
			return n, transform.SameTree, nil
		}
		return transform.OneNodeExpressions(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			return transform.Expr(e, fixExpr)
		})
	}
	out, _, err := transform.NodeWithOpaque(n, fix)
	return out, err
}

// noteNoKey tells the analyst, in a Note, that the release released no key
// and how many users a key needs: an empty result otherwise reads as "no
// data". It is a function of the released (empty) set and of the public
// calibration, so it reveals nothing more than the release.
func (r *Release) noteNoKey(ctx *sql.Context) {
	var cal setunion.Calibration
	orMore := "" // Δ0 chosen privately, but the value is not known here
	switch {
	case r.mode == aggregateRows && r.aggPlan.Global:
		return // one row, always
	case r.pubKeys != nil:
		ctx.Session.Warn(&sql.Warning{Level: "Note", Code: mysql.ERUnknownError, Message: fmt.Sprintf(
			"private release on %s.%s over the public keys of %s released no row: the public table has no key that passes its WHERE conditions", r.db, r.name, r.pubKeys.what)})
		return
	case r.mode == aggregateRows && r.selection != nil:
		cal = *r.selection // with the Δ0 the release chose
	case r.mode == aggregateRows:
		cal = r.aggPlan.Selection
		if b := r.aggPlan.Bounds; b != nil && b.Groups {
			orMore = " or more"
		}
	default:
		c, err := setunion.Calibrate(r.opts)
		if err != nil {
			return
		}
		cal = c
	}
	n, ok := cal.UsersNeeded(0.5, false)
	if !ok {
		return
	}
	ctx.Session.Warn(&sql.Warning{Level: "Note", Code: mysql.ERUnknownError, Message: fmt.Sprintf(
		"private release on %s.%s released no key: with key selection by %s at ε=%g, δ=%g a key needs about %d%s users to be released with probability ½; "+
			"an empty result does not mean that no rows match. Raise dp_epsilon or group by coarser keys",
		r.db, r.name, cal.Mechanism, cal.Epsilon, cal.Delta, n, orMore)})
}

// intoSubquery applies fix to the plan of subquery x (opaque nodes
// included), returning x itself when nothing changed.
func intoSubquery(x *plan.Subquery, fix func(sql.Node) (sql.Node, transform.TreeIdentity, error)) (sql.Expression, transform.TreeIdentity, error) {
	if x.Query == nil {
		return x, transform.SameTree, nil
	}
	q, same, err := transform.NodeWithOpaque(x.Query, fix)
	if err != nil || same {
		return x, transform.SameTree, err
	}
	return x.WithQuery(q), transform.NewTree, nil
}
