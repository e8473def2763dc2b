package sealed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// hashedIn is `left IN (c1, …, cn)` over constants, evaluated with one
// hash lookup per class of comparison instead of n comparisons: inside a
// release, go-mysql-server's InTuple compared a row with each of 9,999
// literals (49.7 s for one statement), and the work bound did not count it.
//
// It gives exactly InTuple's result (a property test compares them on
// random lists and values), because InTuple's comparison of left with an
// element c_i depends on c_i only through constants:
//
//   - left is converted once to typ = left.Type().Promote() (an error is
//     the result); a NULL left is NULL.
//   - an element of a DECIMAL or floating-point type is compared in its
//     own promoted type r: left converted to r against c_i converted to r;
//     any other element is converted to typ and compared in typ.
//   - the first NULL element makes a miss NULL; an element whose
//     conversion to typ fails makes every row that reaches it (no match
//     before it) fail with that error.
//
// So the elements are grouped by the type they are compared in; each group
// holds its converted elements under a key such that two values the type
// compares equal have equal keys (key: collation weights for text, the
// value for numbers, the instant for dates and times); a lookup returns
// the candidates, each confirmed with the type's own Compare, and a match
// counts when its position precedes the first failing element. The work
// of a row is one conversion and one key of left per group (counted as
// reading left once per group).
type hashedIn struct {
	orig   *expression.InTuple // the InTuple, evaluated when left's key cannot be made
	left   sql.Expression
	typ    sql.Type
	groups []*inGroup
	// nullAt is the position of the first NULL element, failAt and fail
	// the position and error of the first element whose conversion fails
	// (len of the list when none).
	nullAt, failAt int
	fail           error
	// n is the number of elements (the comparisons of the slow path).
	n int
}

// inGroup holds the elements compared in one type.
type inGroup struct {
	typ     sql.Type // the type of comparison
	convert bool     // left must be converted to typ (a DECIMAL or float group)
	keys    map[string][]inElem
}

type inElem struct {
	pos int
	val any // converted to the group's type
}

var _ sql.Expression = (*hashedIn)(nil)

// newHashedIn returns the hashed form of in, or nil when in is not a
// scalar IN over constants whose types have keys (tuples, enums, sets,
// JSON, spatial and bit values are compared one by one, and counted as
// work: unitWork).
func newHashedIn(ctx *sql.Context, in *expression.InTuple) *hashedIn {
	tuple, ok := in.Right().(expression.Tuple)
	if !ok || !isConstant(tuple) || types.NumColumns(in.Left().Type()) != 1 {
		return nil
	}
	typ := in.Left().Type().Promote()
	if !hasKey(typ) || types.NumColumns(typ) != 1 {
		return nil
	}
	h := &hashedIn{orig: in, left: in.Left(), typ: typ, nullAt: len(tuple), failAt: len(tuple), n: len(tuple)}
	groups := map[string]*inGroup{}
	for i, el := range tuple {
		if types.NumColumns(el.Type()) != 1 {
			return nil // InTuple fails every row: keep it
		}
		v, err := safeEval(ctx, el, nil)
		if err != nil {
			h.failAt, h.fail = i, err
			break
		}
		if v == nil {
			if h.nullAt == len(tuple) {
				h.nullAt = i
			}
			continue // a later NULL compares unequal to any value
		}
		gtyp, convert := typ, false
		if et := el.Type(); types.IsDecimal(et) || types.IsFloat(et) {
			gtyp, convert = et.Promote(), true
			if !hasKey(gtyp) {
				return nil
			}
		}
		cv, err := convertOrTruncate(ctx, v, gtyp)
		if err != nil {
			h.failAt, h.fail = i, err
			break
		}
		k, ok := valueKey(ctx, gtyp, cv)
		if !ok {
			return nil
		}
		g := groups[gtyp.String()+"/"+strconv.FormatBool(convert)]
		if g == nil {
			g = &inGroup{typ: gtyp, convert: convert, keys: map[string][]inElem{}}
			groups[gtyp.String()+"/"+strconv.FormatBool(convert)] = g
			h.groups = append(h.groups, g)
		}
		if !g.holds(ctx, k, cv) {
			g.keys[k] = append(g.keys[k], inElem{pos: i, val: cv})
		}
	}
	return h
}

// holds reports whether an element equal to v is already in g (an
// earlier position wins).
func (g *inGroup) holds(ctx *sql.Context, k string, v any) bool {
	for _, e := range g.keys[k] {
		if c, err := g.typ.Compare(ctx, e.val, v); err == nil && c == 0 {
			return true
		}
	}
	return false
}

// hasKey reports whether valueKey makes keys for values of t.
func hasKey(t sql.Type) bool {
	switch {
	case types.IsEnum(t), types.IsSet(t), types.IsBit(t), types.IsJSON(t), types.IsGeometry(t), types.IsTuple(t):
		return false
	case types.IsText(t):
		_, ok := t.(sql.StringType)
		return ok
	}
	return types.IsNumber(t) || types.IsTime(t) || types.IsDateType(t) || types.IsTimespan(t) || types.IsYear(t)
}

// errNoKey is valueKey's failure on a value it does not know.
var errNoKey = errors.New("no key")

// valueKey returns the key of v, a value of type t: values t compares
// equal have equal keys. Text: the collation's weights of the runes, as
// StringType.Compare reads them (equal exactly when Compare says so);
// numbers: the value; dates and times: the instant.
func valueKey(ctx context.Context, t sql.Type, v any) (string, bool) {
	if st, ok := t.(sql.StringType); ok && types.IsText(t) {
		k, err := weightKey(ctx, st, v)
		return k, err == nil
	}
	var b [16]byte
	switch x := v.(type) {
	case int8, int16, int32, int64, int:
		return "i" + strconv.FormatInt(toInt64(x), 10), true
	case uint8, uint16, uint32, uint64, uint:
		return "u" + strconv.FormatUint(toUint64(x), 10), true
	case float64:
		if x == 0 {
			x = 0 // -0 = 0
		}
		binary.LittleEndian.PutUint64(b[:8], math.Float64bits(x))
		return "f" + string(b[:8]), true
	case float32:
		return valueKey(ctx, t, float64(x))
	case decimal.Decimal:
		return "d" + x.Rat().RatString(), true
	case time.Time:
		binary.LittleEndian.PutUint64(b[:8], uint64(x.Unix()))
		binary.LittleEndian.PutUint64(b[8:], uint64(x.Nanosecond()))
		return "t" + string(b[:]), true
	case types.Timespan:
		return "s" + strconv.FormatInt(int64(x), 10), true
	}
	return "", false
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	}
	return v.(int64)
}

func toUint64(v any) uint64 {
	switch x := v.(type) {
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	case uint:
		return uint64(x)
	}
	return v.(uint64)
}

// weightKey is StringType.Compare's reading of v: the runes of its text in
// the type's character set, each as its collation weight.
func weightKey(ctx context.Context, t sql.StringType, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		c, _, err := t.Convert(ctx, v)
		if err != nil {
			return "", err
		}
		if c, err = sql.UnwrapAny(ctx, c); err != nil {
			return "", err
		}
		switch c := c.(type) {
		case string:
			s = c
		case []byte:
			s = string(c)
		default:
			return "", errNoKey
		}
	}
	coll := t.Collation()
	enc, weight := coll.CharacterSet().Encoder(), coll.Sorter()
	if enc == nil || weight == nil {
		return "", errNoKey
	}
	out := make([]byte, 0, 4*len(s))
	for len(s) > 0 {
		r, n := enc.NextRune(s)
		if n == 0 || n == utf8.RuneError {
			return "", errNoKey
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(weight(r)))
		s = s[n:]
	}
	return string(out), nil
}

// convertOrTruncate is go-mysql-server's conversion of an IN operand
// (expression.convertOrTruncate): a number or a text that does not
// convert becomes the type's zero (with a warning, which the sealed
// session drops), a value outside an enum or a set becomes NULL, other
// failures are errors.
func convertOrTruncate(ctx *sql.Context, v any, t sql.Type) (any, error) {
	c, _, err := t.Convert(ctx, v)
	if err == nil {
		return c, nil
	}
	if types.IsEnum(t) || types.IsSet(t) {
		return nil, nil
	}
	if !(types.IsNumber(t) || types.IsTextOnly(t)) {
		return nil, err
	}
	return t.Zero(), nil
}

// Eval implements sql.Expression.
func (h *hashedIn) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	orig, err := h.left.Eval(ctx, row)
	if err != nil || orig == nil {
		return nil, err
	}
	left, _, err := h.typ.Convert(ctx, orig)
	if err != nil {
		return nil, err
	}
	if left == nil {
		return h.slow(ctx, row)
	}
	for _, g := range h.groups {
		lv := left
		if g.convert {
			if lv, err = convertOrTruncate(ctx, left, g.typ); err != nil {
				return nil, err
			}
		}
		k, ok := valueKey(ctx, g.typ, lv)
		if !ok {
			return h.slow(ctx, row)
		}
		for _, e := range g.keys[k] {
			if e.pos >= h.failAt {
				continue
			}
			c, err := g.typ.Compare(ctx, lv, e.val)
			if err != nil {
				return h.slow(ctx, row)
			}
			if c == 0 {
				return true, nil
			}
		}
	}
	switch {
	case h.fail != nil:
		return nil, h.fail
	case h.nullAt < h.failAt:
		return nil, nil
	}
	return false, nil
}

// slowWork returns the extra work of row s when Eval would take the slow
// path (a left value without a key): one comparison per element, each
// elemWork plus the operand's size; 0 otherwise. Row counts it before
// evaluating, so that the slow path stays within the row work bound.
func (h *hashedIn) slowWork(ctx *sql.Context, s sql.Row, limit int) int {
	orig, err := safeEval(ctx, h.left, s)
	if err != nil || orig == nil {
		return 0
	}
	left, _, err := h.typ.Convert(ctx, orig)
	if err != nil {
		return 0
	}
	slow := left == nil
	for _, g := range h.groups {
		if slow {
			break
		}
		lv := left
		if g.convert {
			if lv, err = convertOrTruncate(ctx, left, g.typ); err != nil {
				return 0
			}
		}
		_, ok := valueKey(ctx, g.typ, lv)
		slow = !ok
	}
	if !slow {
		return 0
	}
	per := elemWork + size(orig, limit)
	if per > limit/max(h.n, 1) {
		return limit + 1
	}
	return h.n * per
}

// slow evaluates go-mysql-server's InTuple, for a left value without a key
// (none that a column holds: text not valid in its character set fails
// its conversion first): the same result, one comparison per element,
// counted as work by slowWork.
func (h *hashedIn) slow(ctx *sql.Context, row sql.Row) (any, error) {
	in, err := h.orig.WithChildren(h.left, h.orig.Right())
	if err != nil {
		return nil, err
	}
	return in.Eval(ctx, row)
}

// Resolved implements sql.Expression.
func (h *hashedIn) Resolved() bool { return h.orig.Resolved() }

// String implements sql.Expression.
func (h *hashedIn) String() string { return h.orig.String() }

// Type implements sql.Expression.
func (h *hashedIn) Type() sql.Type { return types.Boolean }

// IsNullable implements sql.Expression.
func (h *hashedIn) IsNullable() bool { return h.orig.IsNullable() }

// Children implements sql.Expression: left only (the elements are held
// converted).
func (h *hashedIn) Children() []sql.Expression { return []sql.Expression{h.left} }

// WithChildren implements sql.Expression.
func (h *hashedIn) WithChildren(ch ...sql.Expression) (sql.Expression, error) {
	if len(ch) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(h, len(ch), 1)
	}
	out := *h
	out.left = ch[0]
	return &out, nil
}

// DebugString describes the groups.
func (h *hashedIn) DebugString() string {
	var names []string
	for _, g := range h.groups {
		names = append(names, fmt.Sprintf("%s:%d", g.typ, len(g.keys)))
	}
	sort.Strings(names)
	return fmt.Sprintf("hashedIn(%s; %v)", sql.DebugString(h.left), names)
}
