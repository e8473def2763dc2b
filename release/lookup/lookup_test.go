package lookup

import (
	"errors"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

func filled(t *testing.T, c Class, coll sql.CollationID, vals ...any) *Set {
	t.Helper()
	s := NewSet(c, coll, "test", Limits{})
	s.Reset()
	ctx := sql.NewEmptyContext()
	for _, v := range vals {
		if err := s.Add(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	s.Done()
	return s
}

func eval(t *testing.T, s *Set, exists bool, v any, typ sql.Type) any {
	t.Helper()
	in := NewIn(expression.NewLiteral(v, typ), s, exists, "test")
	got, err := in.Eval(sql.NewEmptyContext(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestNumbersCompareByValue: 1, 1.0, DECIMAL 1.00 and the float 1 are one
// key; 0.5 as a float and as a decimal too.
func TestNumbersCompareByValue(t *testing.T) {
	s := filled(t, Number, 0, int64(1), decimal.RequireFromString("2.50"), 0.5)
	for _, v := range []any{int64(1), uint8(1), 1.0, decimal.RequireFromString("1.000"), float32(2.5), decimal.RequireFromString("0.50")} {
		if got := eval(t, s, false, v, types.Float64); got != true {
			t.Errorf("%v IN set = %v, want true", v, got)
		}
	}
	for _, v := range []any{int64(2), 0.25, decimal.RequireFromString("2.49")} {
		if got := eval(t, s, false, v, types.Float64); got != false {
			t.Errorf("%v IN set = %v, want false", v, got)
		}
	}
}

// TestTextCollation: text compares by the public column's collation.
func TestTextCollation(t *testing.T) {
	bin := filled(t, Text, sql.Collation_utf8mb4_0900_bin, "Apple")
	ci := filled(t, Text, sql.Collation_utf8mb4_0900_ai_ci, "Apple")
	if eval(t, bin, false, "apple", types.LongText) != false || eval(t, bin, false, "Apple", types.LongText) != true {
		t.Error("binary collation")
	}
	if eval(t, ci, false, "APPLE", types.LongText) != true {
		t.Error("case-insensitive collation")
	}
}

// TestTemporal: a DATE equals the DATETIME at its midnight.
func TestTemporal(t *testing.T) {
	d := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	s := filled(t, Temporal, 0, d)
	if eval(t, s, false, "2024-03-01 00:00:00", types.DatetimeMaxPrecision) != true {
		t.Error("same instant")
	}
	if eval(t, s, false, d.Add(time.Microsecond), types.DatetimeMaxPrecision) != false {
		t.Error("a microsecond later")
	}
}

// TestThreeValued: IN and EXISTS with NULLs and empty sets, as MySQL.
func TestThreeValued(t *testing.T) {
	withNull := filled(t, Text, sql.Collation_Default, "a", nil)
	empty := filled(t, Text, sql.Collation_Default)
	cases := []struct {
		s      *Set
		exists bool
		v      any
		want   any
	}{
		{withNull, false, "a", true},
		{withNull, false, "b", nil},
		{withNull, false, nil, nil},
		{empty, false, nil, false},
		{empty, false, "a", false},
		{withNull, true, "a", true},
		{withNull, true, "b", false},
		{withNull, true, nil, false},
		{empty, true, nil, false},
	}
	for _, c := range cases {
		if got := eval(t, c.s, c.exists, c.v, types.LongText); got != c.want {
			t.Errorf("exists=%v %v: got %v, want %v", c.exists, c.v, got, c.want)
		}
	}
}

// TestLimitsAndUnfilled: a set beyond its limits fails to fill, and one
// never filled fails every probe.
func TestLimitsAndUnfilled(t *testing.T) {
	ctx := sql.NewEmptyContext()
	s := NewSet(Text, sql.Collation_Default, "t", Limits{MaxRows: 2})
	s.Reset()
	_ = s.Add(ctx, "a")
	_ = s.Add(ctx, "a")
	if err := s.Add(ctx, "b"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("third row: %v", err)
	}
	s = NewSet(Text, sql.Collation_Default, "t", Limits{MaxBytes: 3})
	s.Reset()
	if err := s.Add(ctx, "abcd"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("bytes: %v", err)
	}
	in := NewIn(expression.NewLiteral("a", types.LongText), NewSet(Text, sql.Collation_Default, "t", Limits{}), false, "t")
	if _, err := in.Eval(ctx, nil); !errors.Is(err, ErrNotFilled) {
		t.Errorf("unfilled: %v", err)
	}
}

// TestCompatible: only same-class comparisons.
func TestCompatible(t *testing.T) {
	if _, err := Compatible(types.Int64, types.LongText); err == nil {
		t.Error("number with text")
	}
	if c, err := Compatible(types.Int64, types.Float64); err != nil || c != Number {
		t.Error("number with number", err)
	}
	if _, err := Compatible(types.JSON, types.JSON); err == nil {
		t.Error("JSON")
	}
}

// TestJoinRows: a join's set maps each key to its public row; Get reads
// a column of it, NULL without a match; a repeated key is an error.
func TestJoinRows(t *testing.T) {
	ctx := sql.NewEmptyContext()
	s := NewSet(Number, 0, "t", Limits{})
	s.Reset()
	if err := s.AddRow(ctx, int64(1), []any{"one", int64(10)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRow(ctx, nil, []any{"null", int64(0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRow(ctx, 1.0, []any{"again", int64(11)}); !errors.Is(err, ErrNotUnique) {
		t.Errorf("repeated key: %v", err)
	}
	s.Done()
	get := func(v any, col int) any {
		g := NewGet(expression.NewLiteral(v, types.Int64), s, col, types.LongText, "t.c")
		x, err := g.Eval(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	if get(int64(1), 0) != "one" || get(int64(1), 1) != int64(10) || get(int64(2), 0) != nil || get(nil, 0) != nil {
		t.Error("Get")
	}
	if eval(t, s, true, int64(1), types.Int64) != true || eval(t, s, true, nil, types.Int64) != false {
		t.Error("EXISTS over a join's set")
	}
}
