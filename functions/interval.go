package functions

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// Names of the interval functions.
const (
	IntervalLowName  = "dp_interval_low"
	IntervalHighName = "dp_interval_high"
)

// IntervalFunctions returns the registrations of DP_INTERVAL_LOW and
// DP_INTERVAL_HIGH for an engine's catalog.
func IntervalFunctions() []sql.Function {
	reg := func(name string, high bool) sql.Function {
		return sql.FunctionN{Name: name, Fn: func(args ...sql.Expression) (sql.Expression, error) {
			if len(args) != 1 {
				return nil, mysql.NewSQLError(ErWrongParamCount, mysql.SSClientError,
					"Incorrect parameter count in the call to %s: it takes one DP aggregate, as in %s(COUNT(*)), but %d were given", upper(name), upper(name), len(args))
			}
			return &Interval{High: high, child: args[0]}, nil
		}}
	}
	return []sql.Function{reg(IntervalLowName, false), reg(IntervalHighName, true)}
}

// Interval is DP_INTERVAL_LOW(agg) or DP_INTERVAL_HIGH(agg): the lower or
// upper end of the 95 % interval of a DP aggregate of the same private
// release (COUNT, SUM, AVG; NULL for the variances and standard
// deviations). The planner computes it with the release
// (sqlext/dpagg/interval.go): it is a function of the noisy totals and of
// the public noise calibration only. Evaluated anywhere else it is an
// error.
type Interval struct {
	High  bool
	child sql.Expression
}

var _ sql.FunctionExpression = (*Interval)(nil)

func upper(name string) string {
	if name == IntervalHighName {
		return "DP_INTERVAL_HIGH"
	}
	return "DP_INTERVAL_LOW"
}

// FunctionName implements sql.FunctionExpression.
func (f *Interval) FunctionName() string {
	if f.High {
		return IntervalHighName
	}
	return IntervalLowName
}

// Description implements sql.FunctionExpression.
func (f *Interval) Description() string {
	return "returns an end of the 95 % interval of a DP aggregate of a private release"
}

// Child returns the aggregate argument.
func (f *Interval) Child() sql.Expression { return f.child }

// Resolved implements sql.Expression.
func (f *Interval) Resolved() bool { return f.child.Resolved() }

// String implements sql.Expression.
func (f *Interval) String() string {
	return fmt.Sprintf("%s(%s)", upper(f.FunctionName()), f.child)
}

// Type implements sql.Expression: a DOUBLE.
func (f *Interval) Type() sql.Type { return types.Float64 }

// IsNullable implements sql.Expression.
func (f *Interval) IsNullable() bool { return true }

// Children implements sql.Expression.
func (f *Interval) Children() []sql.Expression { return []sql.Expression{f.child} }

// WithChildren implements sql.Expression.
func (f *Interval) WithChildren(children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), 1)
	}
	return &Interval{High: f.High, child: children[0]}, nil
}

// Eval implements sql.Expression. A private release computes the interval
// itself; anywhere else there is no noise and so no interval.
func (f *Interval) Eval(*sql.Context, sql.Row) (any, error) {
	return nil, mysql.NewSQLError(mysql.ERUnknownError, mysql.SSUnknownSQLState,
		"%s applies to a DP aggregate (COUNT, SUM, AVG) in the SELECT list of a private release over a protected table, as in SELECT k, COUNT(*), %s(COUNT(*)) FROM t GROUP BY k", upper(f.FunctionName()), upper(f.FunctionName()))
}
