package storage

import (
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"
)

// column is the read-only storage of one column. fill writes the values of
// rows [from, from+n) to dst[k*stride+off], k = 0..n−1.
type column interface {
	fill(dst []any, stride, off, from, n int)
	// bytes estimates the memory held, for DataLength.
	bytes() int64
}

// bitmap marks NULLs; nil means no NULLs.
type bitmap []uint64

func (b bitmap) has(i int) bool { return i>>6 < len(b) && b[i>>6]&(1<<(i&63)) != 0 }

func (b *bitmap) set(i int) {
	for len(*b) <= i>>6 {
		*b = append(*b, 0)
	}
	(*b)[i>>6] |= 1 << (i & 63)
}

// valueColumn holds values of a fixed-size Go type (int64, float64,
// time.Time) with a NULL bitmap.
type valueColumn[T any] struct {
	vals  []T
	nulls bitmap
	// distinct, when positive, bounds the number of distinct values
	// (BIGINT columns: distinctInts).
	distinct int64
}

func (c *valueColumn[T]) fill(dst []any, stride, off, from, n int) {
	for k := 0; k < n; k++ {
		if c.nulls.has(from + k) {
			dst[k*stride+off] = nil
			continue
		}
		dst[k*stride+off] = c.vals[from+k]
	}
}

func (c *valueColumn[T]) bytes() int64 {
	var zero T
	return int64(len(c.vals))*int64(unsafe.Sizeof(zero)) + int64(len(c.nulls))*8
}

// nullCode is the dictionary code of NULL in a text column.
const nullCode = math.MaxUint32

// textColumn is dictionary-encoded: every distinct string is stored (and
// boxed as an interface value) once, and rows hold 4-byte codes, so a scan
// allocates nothing per value.
type textColumn struct {
	codes []uint32
	dict  []any // strings
	size  int64 // bytes of the distinct strings
}

func (c *textColumn) fill(dst []any, stride, off, from, n int) {
	codes := c.codes[from : from+n]
	for k, code := range codes {
		if code == nullCode {
			dst[k*stride+off] = nil
			continue
		}
		dst[k*stride+off] = c.dict[code]
	}
}

func (c *textColumn) bytes() int64 {
	return int64(len(c.codes))*4 + int64(len(c.dict))*32 + c.size
}

// ColumnBuilder accumulates the values of one column. Use the typed append
// method of the column's type (AppendInt for BIGINT, …), AppendNull, or
// AppendText / Append, which convert and report bad values.
type ColumnBuilder struct {
	col   Column
	n     int
	ints  []int64
	flts  []float64
	times []time.Time
	codes []uint32
	dict  map[string]uint32
	strs  []any
	size  int64
	nulls bitmap
}

func newColumnBuilder(c Column) *ColumnBuilder {
	b := &ColumnBuilder{col: c}
	if c.Type == Text {
		b.dict = make(map[string]uint32)
	}
	return b
}

// Reserve makes room for n more values, of which about distinct new
// distinct strings (TEXT), to spare regrowth when the size is known.
func (b *ColumnBuilder) Reserve(n, distinct int) {
	switch b.col.Type {
	case Text:
		b.codes = slices.Grow(b.codes, n)
		if len(b.dict) == 0 && distinct > 0 {
			b.dict = make(map[string]uint32, distinct)
		}
		b.strs = slices.Grow(b.strs, distinct)
	case BigInt:
		b.ints = slices.Grow(b.ints, n)
	case Double:
		b.flts = slices.Grow(b.flts, n)
	default:
		b.times = slices.Grow(b.times, n)
	}
}

// Column returns the column's description.
func (b *ColumnBuilder) Column() Column { return b.col }

// Len returns the number of values appended.
func (b *ColumnBuilder) Len() int { return b.n }

func (b *ColumnBuilder) typeError(what string) {
	panic(fmt.Sprintf("storage: %s appended to column %s of type %s", what, b.col.Name, b.col.Type))
}

// AppendNull appends NULL; it fails for a NOT NULL column.
func (b *ColumnBuilder) AppendNull() error {
	if b.col.NotNull {
		return fmt.Errorf("column %s is NOT NULL", b.col.Name)
	}
	switch b.col.Type {
	case Text:
		b.codes = append(b.codes, nullCode)
	case BigInt:
		b.ints = append(b.ints, 0)
	case Double:
		b.flts = append(b.flts, 0)
	default:
		b.times = append(b.times, time.Time{})
	}
	if b.col.Type != Text {
		b.nulls.set(b.n)
	}
	b.n++
	return nil
}

// AppendInt appends to a BIGINT column.
func (b *ColumnBuilder) AppendInt(v int64) {
	if b.col.Type != BigInt {
		b.typeError("an integer")
	}
	b.ints = append(b.ints, v)
	b.n++
}

// AppendFloat appends to a DOUBLE column.
func (b *ColumnBuilder) AppendFloat(v float64) {
	if b.col.Type != Double {
		b.typeError("a float")
	}
	b.flts = append(b.flts, v)
	b.n++
}

// AppendTime appends to a DATE or DATETIME column (DATE keeps the day, in
// UTC).
func (b *ColumnBuilder) AppendTime(t time.Time) {
	switch b.col.Type {
	case Date:
		y, m, d := t.Date()
		t = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case Datetime:
		t = t.UTC().Truncate(time.Microsecond)
	default:
		b.typeError("a time")
	}
	b.times = append(b.times, t)
	b.n++
}

// AppendString appends to a TEXT column. Equal strings are stored once.
func (b *ColumnBuilder) AppendString(s string) {
	if b.col.Type != Text {
		b.typeError("a string")
	}
	code, ok := b.dict[s]
	if !ok {
		code = b.intern(s)
	}
	b.codes = append(b.codes, code)
	b.n++
}

// AppendBytes is AppendString for a byte slice, which it copies if kept.
func (b *ColumnBuilder) AppendBytes(s []byte) {
	if b.col.Type != Text {
		b.typeError("a string")
	}
	code, ok := b.dict[string(s)] // no allocation for the lookup
	if !ok {
		code = b.intern(string(s))
	}
	b.codes = append(b.codes, code)
	b.n++
}

func (b *ColumnBuilder) intern(s string) uint32 {
	if len(b.strs) >= nullCode {
		panic("storage: more than 2^32-1 distinct strings in column " + b.col.Name)
	}
	code := uint32(len(b.strs))
	b.dict[s] = code
	b.strs = append(b.strs, s)
	b.size += int64(len(s))
	return code
}

// AppendText parses a text field as the column's type and appends it. \N
// is NULL, and so is an empty field of a non-TEXT column.
func (b *ColumnBuilder) AppendText(f []byte) error {
	t := b.col.Type
	if isNull(t, f) {
		return b.AppendNull()
	}
	switch t {
	case Text:
		b.AppendBytes(f)
		return nil
	case BigInt:
		if v, ok := parseInt(f); ok {
			b.AppendInt(v)
			return nil
		}
	case Double:
		if v, ok := parseDouble(f); ok {
			b.AppendFloat(v)
			return nil
		}
	case Date:
		if v, ok := parseDate(f); ok {
			b.AppendTime(v)
			return nil
		}
	case Datetime:
		if v, ok := parseDatetime(f); ok {
			b.AppendTime(v)
			return nil
		}
	}
	return fmt.Errorf("column %s: %q is not a %s", b.col.Name, truncate(f, 64), t)
}

// Append appends a Go value: nil, an integer, a float, a string, []byte or a
// time.Time, converted to the column's type where that loses nothing.
func (b *ColumnBuilder) Append(v any) error {
	if v == nil {
		return b.AppendNull()
	}
	t := b.col.Type
	switch x := v.(type) {
	case string:
		if t == Text {
			b.AppendString(x)
			return nil
		}
		return b.AppendText([]byte(x))
	case []byte:
		if t == Text {
			b.AppendBytes(x)
			return nil
		}
		return b.AppendText(x)
	case int:
		return b.appendInt64(int64(x))
	case int32:
		return b.appendInt64(int64(x))
	case int64:
		return b.appendInt64(x)
	case float64:
		if t == Double {
			b.AppendFloat(x)
			return nil
		}
	case time.Time:
		if t == Date || t == Datetime {
			b.AppendTime(x)
			return nil
		}
	}
	return fmt.Errorf("column %s of type %s cannot hold %v (%T)", b.col.Name, t, v, v)
}

func (b *ColumnBuilder) appendInt64(v int64) error {
	switch b.col.Type {
	case BigInt:
		b.AppendInt(v)
	case Double:
		b.AppendFloat(float64(v))
	default:
		return fmt.Errorf("column %s of type %s cannot hold the integer %d", b.col.Name, b.col.Type, v)
	}
	return nil
}

// build returns the finished column; the builder must not be used after.
func (b *ColumnBuilder) build() column {
	switch b.col.Type {
	case BigInt:
		vals := shrink(b.ints)
		return &valueColumn[int64]{vals: vals, nulls: b.nulls, distinct: distinctInts(vals)}
	case Double:
		return &valueColumn[float64]{vals: shrink(b.flts), nulls: b.nulls}
	case Date, Datetime:
		return &valueColumn[time.Time]{vals: shrink(b.times), nulls: b.nulls}
	}
	b.dict = nil
	return &textColumn{codes: shrink(b.codes), dict: shrink(b.strs), size: b.size}
}

// distinctInts is the number of distinct values of vals (a NULL's slot
// counts as a value: an upper bound), from a sorted copy: a statistic of
// the table that the release index's static bounds read (Table.Distinct).
func distinctInts(vals []int64) int64 {
	c := slices.Clone(vals)
	slices.Sort(c)
	return int64(len(slices.Compact(c)))
}

// shrink returns s in an array of its length when append left much spare
// capacity (tables live as long as the server).
func shrink[T any](s []T) []T {
	if cap(s)-len(s) <= len(s)/8 {
		return s[:len(s):len(s)]
	}
	return append(make([]T, 0, len(s)), s...)
}

func truncate(f []byte, n int) string {
	if len(f) <= n {
		return string(f)
	}
	return string(f[:n]) + "…"
}

// truncate drops the values from index n on.
func (b *ColumnBuilder) truncate(n int) {
	switch b.col.Type {
	case Text:
		b.codes = b.codes[:n]
	case BigInt:
		b.ints = b.ints[:n]
	case Double:
		b.flts = b.flts[:n]
	default:
		b.times = b.times[:n]
	}
	for i := n; i < b.n; i++ {
		if b.nulls.has(i) {
			b.nulls[i>>6] &^= 1 << (i & 63)
		}
	}
	b.n = n
}
