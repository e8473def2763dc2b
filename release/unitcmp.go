package release

import (
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// # A unit filter that is one comparison of a BIGINT unit
//
// The commonest unit filter, WHERE user_id <= 4000 (or <, =, <>, >=, >,
// the constant on either side), on a BIGINT privacy unit, keeps a user iff
// one int64 comparison holds: go-mysql-server compares a signed integer
// column with a signed integer literal as two int64s (comparison.Compare:
// the same type, Int64.Compare; else castLeftAndRight's ConvertToSigned of
// both, then Int64.Compare), the comparison of two non-NULL values is
// never NULL and never fails, and NOT of a boolean is its negation. Its
// sealed evaluation's work and the row's budget are the same for every
// unit (they count the bytes of the values read, 8 for every int64), so
// the sealed program skips every row or none: NewScan takes the native
// comparison only when it skips none (sealed.Program.ScalarWorkFits; a
// limits.release_row_work of a few bytes skips them all, and the sealed
// program then runs, keeping nobody). keepUsers then compares each user's
// int64, given back from its decimal text, with the constant instead of
// running the sealed program (about 100 ns a user on this machine, a
// session copy per release): the same users, the choice decided by the
// statement's shape, the unit's type and the limits, before any row is
// read (TestUnitCompareAsSealed compares the two on every shape with
// random constants and units, and the choice for small row-work limits).
//
// Anything else — other types, unsigned or other literals, NULL, other
// functions — runs the sealed program as before.

// unitCompare is a compiled comparison of the unit with a constant: keep
// iff (v op c) != not, where op compares v with c.
type unitCompare struct {
	op  int // cmpLT, cmpLE, cmpEQ, cmpGE, cmpGT: v op c
	c   int64
	not bool
}

const (
	cmpLT = iota
	cmpLE
	cmpEQ
	cmpGE
	cmpGT
)

// compileUnitCompare returns the comparison filter makes of the unit at
// unitAt, of type unitType, when it has the shape above.
func compileUnitCompare(filter sql.Expression, unitAt int, unitType sql.Type) (*unitCompare, bool) {
	if unitType == nil || !unitType.Equals(types.Int64) {
		return nil, false
	}
	not := false
	if n, ok := filter.(*expression.Not); ok {
		not, filter = true, n.Child
	}
	var op int
	var l, r sql.Expression
	switch f := filter.(type) {
	case *expression.LessThan:
		op, l, r = cmpLT, f.Left(), f.Right()
	case *expression.LessThanOrEqual:
		op, l, r = cmpLE, f.Left(), f.Right()
	case *expression.Equals:
		op, l, r = cmpEQ, f.Left(), f.Right()
	case *expression.GreaterThanOrEqual:
		op, l, r = cmpGE, f.Left(), f.Right()
	case *expression.GreaterThan:
		op, l, r = cmpGT, f.Left(), f.Right()
	default:
		return nil, false
	}
	if isUnit(r, unitAt) {
		// c op v is v op' c with the operator mirrored.
		l, r = r, l
		op = cmpGT - op
	}
	if !isUnit(l, unitAt) {
		return nil, false
	}
	lit, ok := r.(*expression.Literal)
	if !ok || !types.IsSigned(lit.Type()) {
		return nil, false
	}
	var c int64
	switch v := lit.Value().(type) {
	case int8:
		c = int64(v)
	case int16:
		c = int64(v)
	case int32:
		c = int64(v)
	case int64:
		c = v
	default:
		return nil, false // NULL, or a value of another Go type
	}
	return &unitCompare{op: op, c: c, not: not}, true
}

// isUnit reports whether e reads the unit column at unitAt as it is.
func isUnit(e sql.Expression, unitAt int) bool {
	gf, ok := e.(*expression.GetField)
	return ok && gf.Index() == unitAt && gf.Type().Equals(types.Int64)
}

// keep reports whether the filter keeps the unit whose text is name.
func (u *unitCompare) keep(name string) bool {
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil {
		return false // never: a BIGINT unit's text is its decimal
	}
	var in bool
	switch u.op {
	case cmpLT:
		in = v < u.c
	case cmpLE:
		in = v <= u.c
	case cmpEQ:
		in = v == u.c
	case cmpGE:
		in = v >= u.c
	default:
		in = v > u.c
	}
	return in != u.not
}
