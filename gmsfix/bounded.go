package gmsfix

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// ERWarnAllowedPacketOverflowed is MySQL's warning 1301: a string function's
// result would be longer than max_allowed_packet, so it is NULL.
const ERWarnAllowedPacketOverflowed = 1301

// MaxStringResult caps the results of BoundedStringFunctions below
// max_allowed_packet, whose go-mysql-server default (1 GiB, which a session
// may set) would let one row allocate a gigabyte; it is MySQL 8's default
// max_allowed_packet.
const MaxStringResult = 64 << 20

// BoundedStringFunctions returns REPEAT, SPACE, LPAD, RPAD and REPLACE with
// MySQL's bound on their result: when it would be longer than the session's
// max_allowed_packet, or than MaxStringResult, the function returns NULL
// with warning 1301 (ER_WARN_ALLOWED_PACKET_OVERFLOWED), as MySQL does
// beyond max_allowed_packet. go-mysql-server
// v0.20.0 builds the result whatever its size, so that any account could
// stop the whole server with one statement such as
// SELECT REPEAT(REPEAT('xxxxxxxxxx', 1000000), 2000000): the 20 TB
// allocation is a fatal out-of-memory error, which no recover catches.
// Within the bound the functions are go-mysql-server's own, evaluated on
// the argument values.
func BoundedStringFunctions() []sql.Function {
	return []sql.Function{
		sql.Function2{Name: "repeat", Fn: func(s, n sql.Expression) sql.Expression {
			return newBounded("repeat", []sql.Expression{s, n}, func(e ...sql.Expression) (sql.Expression, error) {
				return function.NewRepeat(e[0], e[1]), nil
			}, repeatSize)
		}},
		sql.Function1{Name: "space", Fn: func(n sql.Expression) sql.Expression {
			return newBounded("space", []sql.Expression{n}, func(e ...sql.Expression) (sql.Expression, error) {
				return function.NewSpace(e[0]), nil
			}, spaceSize)
		}},
		sql.FunctionN{Name: "lpad", Fn: func(args ...sql.Expression) (sql.Expression, error) {
			return newBoundedN("lpad", args, function.NewLeftPad, padSize)
		}},
		sql.FunctionN{Name: "rpad", Fn: func(args ...sql.Expression) (sql.Expression, error) {
			return newBoundedN("rpad", args, function.NewRightPad, padSize)
		}},
		sql.Function3{Name: "replace", Fn: func(s, from, to sql.Expression) sql.Expression {
			return newBounded("replace", []sql.Expression{s, from, to}, func(e ...sql.Expression) (sql.Expression, error) {
				return function.NewReplace(e[0], e[1], e[2]), nil
			}, replaceSize)
		}},
	}
}

var installBounded sync.Once

// InstallBoundedStringFunctions makes BoundedStringFunctions take the place
// of go-mysql-server's functions of the same names in every engine of the
// process (through analyzer.ExternalFunctionProvider, which the catalog
// consults before its built-in functions; a provider already installed
// there is consulted after them). It is idempotent.
func InstallBoundedStringFunctions() {
	installBounded.Do(func() {
		p := boundedProvider{fns: map[string]sql.Function{}, next: analyzer.ExternalFunctionProvider}
		for _, f := range BoundedStringFunctions() {
			p.fns[f.FunctionName()] = f
		}
		analyzer.ExternalFunctionProvider = p
	})
}

type boundedProvider struct {
	fns  map[string]sql.Function
	next sql.FunctionProvider
}

func (p boundedProvider) Function(ctx *sql.Context, name string) (sql.Function, bool) {
	if f, ok := p.fns[strings.ToLower(name)]; ok {
		return f, true
	}
	if p.next != nil {
		return p.next.Function(ctx, name)
	}
	return nil, false
}

// sizeFunc returns an upper bound, in bytes, of a function's result for
// non-NULL argument values, and false when the values do not convert (the
// wrapped function then reports the problem).
type sizeFunc func(ctx *sql.Context, vals []any) (uint64, bool)

// boundedString wraps one of go-mysql-server's string functions: it
// evaluates the arguments once, returns NULL (warning 1301) when the
// result would exceed max_allowed_packet, and otherwise evaluates the
// wrapped function on the argument values.
type boundedString struct {
	name  string
	args  []sql.Expression
	build func(...sql.Expression) (sql.Expression, error)
	size  sizeFunc
	proto sql.Expression // the wrapped function over args: type, nullability, collation
}

var (
	_ sql.FunctionExpression = (*boundedString)(nil)
	_ sql.CollationCoercible = (*boundedString)(nil)
)

func newBounded(name string, args []sql.Expression, build func(...sql.Expression) (sql.Expression, error), size sizeFunc) sql.Expression {
	e, err := newBoundedN(name, args, build, size)
	if err != nil {
		panic(err) // the fixed-arity constructors cannot fail
	}
	return e
}

func newBoundedN(name string, args []sql.Expression, build func(...sql.Expression) (sql.Expression, error), size sizeFunc) (sql.Expression, error) {
	proto, err := build(args...)
	if err != nil {
		return nil, err
	}
	return &boundedString{name: name, args: args, build: build, size: size, proto: proto}, nil
}

func (b *boundedString) FunctionName() string { return b.name }
func (b *boundedString) Description() string {
	if fe, ok := b.proto.(sql.FunctionExpression); ok {
		return fe.Description() + " (NULL when longer than max_allowed_packet)"
	}
	return b.name
}
func (b *boundedString) Resolved() bool             { return expression.ExpressionsResolved(b.args...) }
func (b *boundedString) String() string             { return b.proto.String() }
func (b *boundedString) Type() sql.Type             { return b.proto.Type() }
func (b *boundedString) IsNullable() bool           { return true }
func (b *boundedString) Children() []sql.Expression { return b.args }
func (b *boundedString) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	if cc, ok := b.proto.(sql.CollationCoercible); ok {
		return cc.CollationCoercibility(ctx)
	}
	return sql.Collation_binary, 6
}

func (b *boundedString) WithChildren(children ...sql.Expression) (sql.Expression, error) {
	if len(children) != len(b.args) {
		return nil, sql.ErrInvalidChildrenNumber.New(b, len(children), len(b.args))
	}
	return newBoundedN(b.name, children, b.build, b.size)
}

func (b *boundedString) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	vals := make([]any, len(b.args))
	lits := make([]sql.Expression, len(b.args))
	for i, a := range b.args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, nil // every one of these functions is NULL on a NULL argument
		}
		vals[i] = v
		lits[i] = expression.NewLiteral(v, a.Type())
	}
	if n, ok := b.size(ctx, vals); ok {
		if limit := maxAllowedPacket(ctx); n > limit {
			ctx.Warn(ERWarnAllowedPacketOverflowed, "Result of %s() was larger than max_allowed_packet (%d) - truncated", b.name, limit)
			return nil, nil
		}
	}
	e, err := b.build(lits...)
	if err != nil {
		return nil, err
	}
	return e.Eval(ctx, nil)
}

// maxAllowedPacket returns the session's max_allowed_packet, at most
// MaxStringResult.
func maxAllowedPacket(ctx *sql.Context) uint64 {
	if ctx == nil || ctx.Session == nil {
		return MaxStringResult
	}
	v, err := ctx.GetSessionVariable(ctx, "max_allowed_packet")
	if err != nil {
		return MaxStringResult
	}
	n, _, err := types.Uint64.Convert(ctx, v)
	if err != nil {
		return MaxStringResult
	}
	return min(n.(uint64), MaxStringResult)
}

func textLen(ctx *sql.Context, v any) (uint64, bool) {
	s, _, err := types.LongText.Convert(ctx, v)
	if err != nil {
		return 0, false
	}
	str, ok := s.(string)
	return uint64(len(str)), ok
}

func count(ctx *sql.Context, v any) (int64, bool) {
	n, _, err := types.Int64.Convert(ctx, v)
	if err != nil {
		return 0, false
	}
	i, ok := n.(int64)
	return i, ok
}

// mulSat multiplies without overflowing (saturating at the maximum).
func mulSat(a, b uint64) uint64 {
	if a != 0 && b > ^uint64(0)/a {
		return ^uint64(0)
	}
	return a * b
}

// repeatSize: len(str) × count.
func repeatSize(ctx *sql.Context, vals []any) (uint64, bool) {
	l, ok1 := textLen(ctx, vals[0])
	n, ok2 := count(ctx, vals[1])
	if !ok1 || !ok2 || n < 0 {
		return 0, false
	}
	return mulSat(l, uint64(n)), true
}

// spaceSize: count.
func spaceSize(ctx *sql.Context, vals []any) (uint64, bool) {
	n, ok := count(ctx, vals[0])
	if !ok || n < 0 {
		return 0, false
	}
	return uint64(n), true
}

// padSize: the result has len characters, of at most 4 bytes each.
func padSize(ctx *sql.Context, vals []any) (uint64, bool) {
	n, ok := count(ctx, vals[1])
	if !ok || n < 0 {
		return 0, false
	}
	return mulSat(uint64(n), 4), true
}

// replaceSize: len(str) + occurrences × (len(to) − len(from)), exactly.
func replaceSize(ctx *sql.Context, vals []any) (uint64, bool) {
	var s [3]string
	for i := range s {
		v, _, err := types.LongText.Convert(ctx, vals[i])
		if err != nil {
			return 0, false
		}
		str, ok := v.(string)
		if !ok {
			return 0, false
		}
		s[i] = str
	}
	if s[1] == "" || len(s[2]) <= len(s[1]) {
		return uint64(len(s[0])), true
	}
	k := uint64(strings.Count(s[0], s[1]))
	return uint64(len(s[0])) + mulSat(k, uint64(len(s[2])-len(s[1]))), true
}

func (b *boundedString) DebugString() string {
	return fmt.Sprintf("bounded(%s)", sql.DebugString(b.proto))
}

// BoundedStringType is the Go type of the functions BoundedStringFunctions
// returns (allow-lists match it together with the function name).
func BoundedStringType() reflect.Type { return reflect.TypeFor[*boundedString]() }
