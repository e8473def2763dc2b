package functions

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// SQL names of the quantile aggregates (lower case, as go-mysql-server
// looks functions up).
const (
	// MedianName is MEDIAN(x), the quantile at p = ½.
	MedianName = "median"
	// PercentileContName is PERCENTILE_CONT(x, p), the quantile at p ∈ [0,
	// 1], named after BigQuery's differentially private PERCENTILE_CONT
	// (and the SQL standard's inverse distribution function, whose
	// WITHIN GROUP form MySQL's parser does not accept).
	PercentileContName = "percentile_cont"
)

// QuantileFunctions returns the registrations of MEDIAN and
// PERCENTILE_CONT for an engine's catalog.
func QuantileFunctions() []sql.Function {
	return []sql.Function{
		sql.Function1{Name: MedianName, Fn: func(x sql.Expression) sql.Expression { return NewMedian(x) }},
		sql.FunctionN{Name: PercentileContName, Fn: NewPercentileCont},
	}
}

// Quantile is the aggregate MEDIAN(x) or PERCENTILE_CONT(x, p). Over a
// protected table the planner releases it as a DP aggregate (the
// exponential mechanism of package dpagg, quantile.go) with the query's
// other aggregates; over public rows it is the exact continuous percentile
// (linear interpolation between the two closest ranks, as PostgreSQL's
// percentile_cont), NULL over no non-NULL value.
//
// go-mysql-server v0.20.0 plans only built-in aggregate names as
// aggregates, so an engine needs the planner's lifting rule for this one
// (planner.LiftQuantiles); Eval on the expression itself reports that the
// rule is missing.
type Quantile struct {
	name   string
	x      sql.Expression
	pArg   sql.Expression // nil for MEDIAN
	level  float64        // p, fixed by Bind (½ for MEDIAN)
	bound  bool
	id     sql.ColumnId
	window *sql.WindowDefinition
}

var (
	_ sql.Aggregation        = (*Quantile)(nil)
	_ sql.FunctionExpression = (*Quantile)(nil)
)

// NewMedian builds MEDIAN(x).
func NewMedian(x sql.Expression) *Quantile {
	return &Quantile{name: MedianName, x: x, level: 0.5, bound: true}
}

// NewPercentileCont builds PERCENTILE_CONT(x, p).
func NewPercentileCont(args ...sql.Expression) (sql.Expression, error) {
	if len(args) != 2 {
		return nil, mysql.NewSQLError(ErWrongParamCount, mysql.SSClientError,
			"Incorrect parameter count in the call to PERCENTILE_CONT: it takes 2 arguments, PERCENTILE_CONT(value, p) with p a constant from 0 to 1 (0.5 is the median), but %d were given", len(args))
	}
	return &Quantile{name: PercentileContName, x: args[0], pArg: args[1]}, nil
}

// FunctionName implements sql.FunctionExpression.
func (q *Quantile) FunctionName() string { return q.name }

// Description implements sql.FunctionExpression.
func (q *Quantile) Description() string {
	if q.pArg == nil {
		return "returns the median of the values (private over protected tables)"
	}
	return "returns the p-th quantile of the values (private over protected tables)"
}

// Value returns the aggregated expression.
func (q *Quantile) Value() sql.Expression { return q.x }

// Level returns p, valid once bound (Bind).
func (q *Quantile) Level() float64 { return q.level }

// Bind returns q with its level evaluated: p must be a constant number from
// 0 to 1. The planner calls it so that a bad level fails before any row is
// read.
func (q *Quantile) Bind(ctx *sql.Context) (*Quantile, error) {
	if q.bound {
		return q, nil
	}
	bad := func(got any) error {
		return mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState,
			"PERCENTILE_CONT: p must be a constant number from 0 to 1 (0.5 is the median), got %v", got)
	}
	if !IsConstant(q.pArg) {
		return nil, bad(q.pArg)
	}
	v, err := q.pArg.Eval(ctx, nil)
	if err != nil {
		return nil, err
	}
	f, _, err := types.Float64.Convert(ctx, v)
	p, ok := f.(float64)
	if err != nil || v == nil || !ok || !(p >= 0 && p <= 1) {
		return nil, bad(v)
	}
	nq := *q
	nq.level, nq.bound = p, true
	return &nq, nil
}

// Resolved implements sql.Expression.
func (q *Quantile) Resolved() bool {
	for _, c := range q.Children() {
		if !c.Resolved() {
			return false
		}
	}
	return true
}

// String implements sql.Expression.
func (q *Quantile) String() string {
	args := make([]string, 0, 2)
	for _, c := range q.Children() {
		args = append(args, c.String())
	}
	return strings.ToUpper(q.name) + "(" + strings.Join(args, ", ") + ")"
}

// Type implements sql.Expression: a DOUBLE.
func (q *Quantile) Type() sql.Type { return types.Float64 }

// IsNullable implements sql.Expression.
func (q *Quantile) IsNullable() bool { return true }

// Children implements sql.Expression.
func (q *Quantile) Children() []sql.Expression {
	if q.pArg == nil {
		return []sql.Expression{q.x}
	}
	return []sql.Expression{q.x, q.pArg}
}

// WithChildren implements sql.Expression.
func (q *Quantile) WithChildren(children ...sql.Expression) (sql.Expression, error) {
	if len(children) != len(q.Children()) {
		return nil, sql.ErrInvalidChildrenNumber.New(q, len(children), len(q.Children()))
	}
	nq := *q
	nq.x = children[0]
	if len(children) == 2 {
		nq.pArg = children[1]
	}
	return &nq, nil
}

// Id implements sql.IdExpression.
func (q *Quantile) Id() sql.ColumnId { return q.id }

// WithId implements sql.IdExpression.
func (q *Quantile) WithId(id sql.ColumnId) sql.IdExpression {
	nq := *q
	nq.id = id
	return &nq
}

// Window implements sql.WindowAdaptableExpression.
func (q *Quantile) Window() *sql.WindowDefinition { return q.window }

// WithWindow implements sql.WindowAdaptableExpression.
func (q *Quantile) WithWindow(w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	nq := *q
	nq.window = w
	return &nq
}

// NewWindowFunction implements sql.WindowAdaptableExpression: the quantiles
// are not window functions.
func (q *Quantile) NewWindowFunction() (sql.WindowFunction, error) {
	return nil, mysql.NewSQLError(mysql.ERNotSupportedYet, mysql.SSClientError,
		"%s cannot be used as a window function (OVER)", strings.ToUpper(q.name))
}

// Eval implements sql.Expression. It is reached only when the engine lacks
// the planner rule that makes the quantiles aggregates.
func (q *Quantile) Eval(*sql.Context, sql.Row) (any, error) {
	return nil, fmt.Errorf("%s was evaluated as a scalar function: this engine was built without dpsql's planner rules; build it with server.NewEngine or install planner.Rules", strings.ToUpper(q.name))
}

// NewBuffer implements sql.Aggregation: the exact percentile of public rows.
func (q *Quantile) NewBuffer() (sql.AggregationBuffer, error) {
	x, err := transform.Clone(q.x)
	if err != nil {
		return nil, err
	}
	return &quantileBuffer{x: x, level: q.level}, nil
}

// quantileBuffer collects a group's non-NULL values.
type quantileBuffer struct {
	x     sql.Expression
	level float64
	vals  []float64
}

// Update implements sql.AggregationBuffer.
func (b *quantileBuffer) Update(ctx *sql.Context, row sql.Row) error {
	v, err := b.x.Eval(ctx, row)
	if err != nil || v == nil {
		return err
	}
	f, _, err := types.Float64.Convert(ctx, v)
	if err != nil {
		return err
	}
	if x, ok := f.(float64); ok && !math.IsNaN(x) {
		b.vals = append(b.vals, x)
	}
	return nil
}

// Eval implements sql.AggregationBuffer: the value at rank p·(n−1),
// interpolated linearly between its two neighbours.
func (b *quantileBuffer) Eval(*sql.Context) (any, error) {
	return ExactPercentile(b.vals, b.level), nil
}

// ExactPercentile is PERCENTILE_CONT of vals (reordered) at p, or nil for
// no values.
func ExactPercentile(vals []float64, p float64) any {
	if len(vals) == 0 {
		return nil
	}
	slices.Sort(vals)
	pos := p * float64(len(vals)-1)
	i := int(math.Floor(pos))
	if i >= len(vals)-1 {
		return vals[len(vals)-1]
	}
	return vals[i] + (pos-float64(i))*(vals[i+1]-vals[i])
}

// Dispose implements sql.AggregationBuffer.
func (b *quantileBuffer) Dispose() {
	expression.Dispose(b.x)
	b.vals = nil
}
