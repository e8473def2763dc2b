package gmsfix

import (
	"errors"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/internal/mysqlerr"
)

// ERWarnAllowedPacketOverflowed is MySQL's warning 1301: a string function's
// result would be longer than max_allowed_packet, so it is NULL.
const ERWarnAllowedPacketOverflowed = mysqlerr.WarnAllowedPacketOverflowed

// preSizes are the functions whose result can be much larger than their
// arguments (REPEAT, SPACE, LPAD, RPAD, REPLACE, CONCAT): Guarded computes the size
// of their result from the argument values before calling them and returns
// NULL with warning 1301, as MySQL does beyond max_allowed_packet, instead
// of building a value beyond its limit. go-mysql-server v0.20.0 builds the
// result whatever its size, so that any account could stop the whole server
// with one statement such as SELECT REPEAT(REPEAT('xxxxxxxxxx', 1000000),
// 2000000): the 20 TB allocation is a fatal out-of-memory error, which no
// recover catches.
var preSizes = map[reflect.Type]sizeFunc{
	reflect.TypeFor[*function.Repeat]():  repeatSize,
	reflect.TypeFor[*function.Space]():   spaceSize,
	reflect.TypeFor[*function.Pad]():     padSize,
	reflect.TypeFor[*function.Replace](): replaceSize,
	reflect.TypeFor[*function.Concat]():  concatSize,
}

// RowBudget is implemented by a session that bounds the work of one row
// (sealed evaluation of a private release): RowBudget returns the bytes a
// function of preSizes may still build in the current row, and whether the
// bound applies. Guarded checks a result's size against it before building
// the result, and returns ErrRowBudget instead of allocating beyond it.
type RowBudget interface {
	RowBudget() (left int, on bool)
}

// ErrRowBudget is the error of a function of preSizes whose result would
// exceed the row's work budget (RowBudget); the sealed evaluator skips the
// row.
var ErrRowBudget = errors.New("the result would exceed the row's work budget")

// PreSized reports whether Guarded sizes fn's result before building it
// (REPEAT, SPACE, LPAD, RPAD, REPLACE, CONCAT): the functions whose result
// can be much larger than their arguments.
func PreSized(fn sql.Expression) bool { return preSizes[reflect.TypeOf(fn)] != nil }

// sizeFunc returns an upper bound, in bytes, of a function's result for
// non-NULL argument values, and false when the values do not convert (the
// function then reports the problem).
type sizeFunc func(ctx *sql.Context, vals []any) (uint64, bool)

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

// tightSizes are closer bounds than preSizes' where those take the widest
// character, for the row budget's check (RowBudget) only: the value limit
// keeps preSizes' bound, on which MySQL-compatible NULLs depend.
var tightSizes = map[reflect.Type]sizeFunc{
	reflect.TypeFor[*function.Pad](): padSizeTight,
}

// padSizeTight: the result has len characters, each one of str's or pad's,
// so at most len times the widest of their characters in bytes.
func padSizeTight(ctx *sql.Context, vals []any) (uint64, bool) {
	n, ok := count(ctx, vals[1])
	if !ok || n < 0 {
		return 0, false
	}
	width := uint64(1)
	for _, v := range []any{vals[0], vals[2]} {
		s, _, err := types.LongText.Convert(ctx, v)
		if err != nil {
			return 0, false
		}
		str, _ := s.(string)
		for _, r := range str {
			width = max(width, uint64(utf8.RuneLen(r)))
		}
	}
	return mulSat(uint64(n), width), true
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

// concatSize: the sum of the arguments' lengths (CONCAT of 60 values of
// 16 MB allocated 960 MB at once before its result could be checked).
func concatSize(ctx *sql.Context, vals []any) (uint64, bool) {
	var n uint64
	for _, v := range vals {
		l, ok := textLen(ctx, v)
		if !ok {
			return 0, false
		}
		n += l
	}
	return n, true
}
