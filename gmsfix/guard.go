package gmsfix

import (
	"fmt"
	"reflect"
	"strings"

	regex "github.com/dolthub/go-icu-regex"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// Guarded is a call of one of go-mysql-server's scalar functions, made safe
// for the server: a panic inside it becomes an error for the statement (a
// LOCATE with a huge negative position panicked, and a panic while building
// a result dropped the connection), and a string or JSON result longer than
// Max bytes becomes NULL with warning 1301, as MySQL does beyond
// max_allowed_packet (nested HEX(HEX(…)), CONCAT or TO_BASE64 doubled a
// value per level until the process ran out of memory; each level now sees
// at most Max bytes).
type Guarded struct {
	Fn  sql.Expression
	Max int
}

var (
	_ sql.FunctionExpression         = (*Guarded)(nil)
	_ sql.CollationCoercible         = (*Guarded)(nil)
	_ sql.NonDeterministicExpression = (*Guarded)(nil)
)

func (g *Guarded) FunctionName() string {
	if f, ok := g.Fn.(sql.FunctionExpression); ok {
		return f.FunctionName()
	}
	return ""
}

func (g *Guarded) Description() string {
	if f, ok := g.Fn.(sql.FunctionExpression); ok {
		return f.Description()
	}
	return ""
}

func (g *Guarded) Resolved() bool             { return g.Fn.Resolved() }
func (g *Guarded) String() string             { return g.Fn.String() }
func (g *Guarded) DebugString() string        { return sql.DebugString(g.Fn) }
func (g *Guarded) Type() sql.Type             { return g.Fn.Type() }
func (g *Guarded) IsNullable() bool           { return true }
func (g *Guarded) Children() []sql.Expression { return g.Fn.Children() }

func (g *Guarded) IsNonDeterministic() bool {
	n, ok := g.Fn.(sql.NonDeterministicExpression)
	return ok && n.IsNonDeterministic()
}

func (g *Guarded) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	return sql.GetCoercibility(ctx, g.Fn)
}

func (g *Guarded) WithChildren(children ...sql.Expression) (sql.Expression, error) {
	fn, err := g.Fn.WithChildren(children...)
	if err != nil {
		return nil, err
	}
	return &Guarded{Fn: fn, Max: g.Max}, nil
}

// Guard wraps fn in Guarded with the limit max.
func Guard(fn sql.Expression, max int) *Guarded { return &Guarded{Fn: fn, Max: max} }

// Eval evaluates the function, recovering a panic and bounding the result.
// A function of preSizes is evaluated on its arguments' values only once
// its result is known to fit.
func (g *Guarded) Eval(ctx *sql.Context, row sql.Row) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("internal error in go-mysql-server's %s(): the function failed on its arguments", strings.ToUpper(g.FunctionName()))
		}
	}()
	if size := preSizes[reflect.TypeOf(g.Fn)]; size != nil {
		return g.evalSized(ctx, row, size)
	}
	v, err = g.Fn.Eval(ctx, row)
	if regex.ErrResultTooLarge.Is(err) {
		ctx.Warn(ERWarnAllowedPacketOverflowed, "Result of %s() was larger than the server's limit on strings (%d bytes) - truncated", g.FunctionName(), g.Max)
		return nil, nil
	}
	if err != nil || v == nil {
		return v, err
	}
	if n := valueSize(v); n > g.Max {
		ctx.Warn(ERWarnAllowedPacketOverflowed, "Result of %s() was larger than the server's limit on strings (%d bytes) - truncated", g.FunctionName(), g.Max)
		return nil, nil
	}
	return v, nil
}

// evalSized evaluates the arguments, returns NULL with warning 1301 when the
// result would exceed Max, and otherwise the function on the values.
func (g *Guarded) evalSized(ctx *sql.Context, row sql.Row, size sizeFunc) (any, error) {
	args := g.Fn.Children()
	vals := make([]any, len(args))
	lits := make([]sql.Expression, len(args))
	for i, a := range args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, nil // NULL in, NULL out, for every one of these functions
		}
		vals[i] = v
		lits[i] = expression.NewLiteral(v, a.Type())
	}
	n, ok := size(ctx, vals)
	if ok && n > uint64(g.Max) {
		ctx.Warn(ERWarnAllowedPacketOverflowed, "Result of %s() was larger than max_allowed_packet (%d) - truncated", g.FunctionName(), g.Max)
		return nil, nil
	}
	if b, metered := ctx.Session.(RowBudget); metered && ok {
		if left, on := b.RowBudget(); on {
			if tight := tightSizes[reflect.TypeOf(g.Fn)]; tight != nil {
				n, ok = tight(ctx, vals)
			}
			if ok && n > uint64(max(left, 0)) {
				return nil, ErrRowBudget
			}
		}
	}
	fn, err := g.Fn.WithChildren(lits...)
	if err != nil {
		return nil, err
	}
	return fn.Eval(ctx, nil)
}

// valueSize is the size in bytes of a string, byte or JSON result (0 for
// other values).
func valueSize(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case sql.JSONWrapper:
		if s, ok := x.(types.JSONDocument); ok {
			if str, ok := s.Val.(string); ok {
				return len(str)
			}
		}
		b, err := types.MarshallJson(x)
		if err != nil {
			return 0
		}
		return len(b)
	}
	return 0
}

// GuardFunctions returns the post-analyzer rule that wraps every scalar
// function call of a plan in Guarded with the limit max. Aggregate and
// window functions are left as they are (the planner recognises them by
// type), and so is what private releases evaluate (sealed, with their own
// bounds, and hidden inside their plan node).
//
// It also bounds REGEXP_REPLACE's results to max, for the whole process
// (regex.SetMaxResultBytes): the replacement stops building its text there.
func GuardFunctions(max int) analyzer.RuleFunc {
	regex.SetMaxResultBytes(max)
	return func(_ *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
		return transform.NodeExprsWithOpaque(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			return transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
				switch e.(type) {
				case *Guarded, sql.Aggregation, sql.WindowAdaptableExpression:
					return e, transform.SameTree, nil
				case sql.FunctionExpression:
					return Guard(e, max), transform.NewTree, nil
				}
				return e, transform.SameTree, nil
			})
		})
	}
}
