package release

import (
	"fmt"
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// Texter converts values of one SQL type to their MySQL text form, the form
// a MySQL client receives and the form releases compare and publish keys in:
// strings as they are, integers in decimal, dates as YYYY-MM-DD, decimals
// with their scale, ENUM and SET values by name. It never fails, so that no
// error can carry a protected value; call it with a sealed context
// (sealed.Evaluator.Context) so that a conversion's warnings cannot reach
// the analyst either. Not safe for concurrent use.
type Texter struct {
	typ    sql.Type
	byType bool // ENUM and SET: row values are indexes and bitmaps
	buf    []byte
}

// NewTexter returns a Texter for values of typ.
func NewTexter(typ sql.Type) *Texter {
	return &Texter{typ: typ, byType: typ != nil && (types.IsEnum(typ) || types.IsSet(typ))}
}

// Append appends the text of a non-nil v to dst.
func (t *Texter) Append(ctx *sql.Context, dst []byte, v any) []byte {
	s, b := t.Text(ctx, v)
	if b != nil {
		return append(dst, b...)
	}
	return append(dst, s...)
}

// Text returns the text of a non-nil v: either as a string s (b == nil; no
// copy) or as bytes b valid until the next call.
func (t *Texter) Text(ctx *sql.Context, v any) (s string, b []byte) {
	if t.byType {
		return t.slow(ctx, v)
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		if x == nil {
			x = []byte{}
		}
		return "", x
	case int64:
		t.buf = strconv.AppendInt(t.buf[:0], x, 10)
	case int32:
		t.buf = strconv.AppendInt(t.buf[:0], int64(x), 10)
	case int:
		t.buf = strconv.AppendInt(t.buf[:0], int64(x), 10)
	case int16:
		t.buf = strconv.AppendInt(t.buf[:0], int64(x), 10)
	case int8:
		t.buf = strconv.AppendInt(t.buf[:0], int64(x), 10)
	case uint64:
		t.buf = strconv.AppendUint(t.buf[:0], x, 10)
	case uint32:
		t.buf = strconv.AppendUint(t.buf[:0], uint64(x), 10)
	case uint16:
		t.buf = strconv.AppendUint(t.buf[:0], uint64(x), 10)
	case uint8:
		t.buf = strconv.AppendUint(t.buf[:0], uint64(x), 10)
	default:
		return t.slow(ctx, v)
	}
	return "", t.buf
}

// slow formats v through its type's wire encoding (dates, decimals,
// floats, JSON, enums, …), falling back to a LONGTEXT conversion and then
// to Go's formatting. It never fails.
func (t *Texter) slow(ctx *sql.Context, v any) (string, []byte) {
	if t.typ != nil {
		if sv, err := t.typ.SQL(ctx, t.buf[:0], v); err == nil && !sv.IsNull() {
			t.buf = append(t.buf[:0], sv.Raw()...)
			return "", t.buf
		}
	}
	if c, _, err := types.LongText.Convert(ctx, v); err == nil {
		if s, ok := c.(string); ok {
			return s, nil
		}
	}
	return fmt.Sprint(v), nil
}
