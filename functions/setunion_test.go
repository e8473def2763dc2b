package functions

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

func seeded() *rand.Rand { return securerand.NewSeeded(7) }

// TestBufferSkipsNulls feeds rows straight to a buffer: NULL items and NULL
// or empty privacy units never reach the builder.
func TestBufferSkipsNulls(t *testing.T) {
	ctx := sql.NewEmptyContext()
	f, err := NewSetUnion(Config{Rand: seeded},
		expression.NewGetField(0, types.LongText, "item", true),
		expression.NewGetField(1, types.Int64, "user_id", true))
	if err != nil {
		t.Fatal(err)
	}
	buf, err := f.NewBuffer()
	if err != nil {
		t.Fatal(err)
	}
	rows := []sql.Row{{"a", int64(1)}, {nil, int64(2)}, {"b", nil}, {"c", int64(3)}, {"a", int64(3)}}
	for _, r := range rows {
		if err := buf.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	st := buf.(*setUnionBuffer).b.Group()
	if st.Occurrences != 3 || st.Users != 2 || st.DistinctItems != 2 {
		t.Fatalf("stats %+v, want 3 rows of 2 users over 2 items", st)
	}
	v, err := buf.Eval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(types.JSONDocument); !ok {
		t.Fatalf("Eval returned %T", v)
	}
	buf.Dispose()

	// Empty text units are dropped like NULL ones.
	f2, _ := NewSetUnion(Config{Rand: seeded},
		expression.NewGetField(0, types.LongText, "item", true),
		expression.NewGetField(1, types.LongText, "unit", true))
	buf2, _ := f2.NewBuffer()
	for _, r := range []sql.Row{{"a", ""}, {"b", "u"}} {
		if err := buf2.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if st := buf2.(*setUnionBuffer).b.Group(); st.Occurrences != 1 || st.Users != 1 {
		t.Fatalf("stats %+v, want the empty unit dropped", st)
	}
}

func TestEmptyInputIsEmptyArray(t *testing.T) {
	f, _ := NewSetUnion(Config{Rand: seeded},
		expression.NewGetField(0, types.LongText, "item", true),
		expression.NewGetField(1, types.Int64, "user_id", true))
	buf, _ := f.NewBuffer()
	v, err := buf.Eval(sql.NewEmptyContext())
	if err != nil {
		t.Fatal(err)
	}
	b, err := types.JSON.SQL(sql.NewEmptyContext(), nil, v)
	if err != nil {
		t.Fatal(err)
	}
	if s := b.ToString(); s != "[]" {
		t.Fatalf("empty release is %s, want []", s)
	}
}

func TestTextForm(t *testing.T) {
	ctx := sql.NewEmptyContext()
	day := time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)
	at := time.Date(2024, 3, 5, 7, 8, 9, 0, time.UTC)
	for _, c := range []struct {
		typ  sql.Type
		v    any
		want string
	}{
		{types.LongText, "héllo", "héllo"},
		{types.Blob, []byte("bytes"), "bytes"},
		{types.Int64, int64(-42), "-42"},
		{types.Int32, int32(7), "7"},
		{types.Uint64, uint64(18446744073709551615), "18446744073709551615"},
		{types.Int8, int8(-3), "-3"},
		{types.Float64, 2.5, "2.5"},
		{types.Date, day, "2024-03-05"},
		{types.Datetime, at, "2024-03-05 07:08:09"},
		{types.MustCreateDecimalType(10, 2), decimal.RequireFromString("3.10"), "3.10"},
		{types.Boolean, int8(1), "1"},
	} {
		tx := release.NewTexter(c.typ)
		s, b := tx.Text(ctx, c.v)
		if b != nil {
			s = string(b)
		}
		if s != c.want {
			t.Errorf("text of %v (%s) = %q, want %q", c.v, c.typ, s, c.want)
		}
	}
}

func TestNotAScalarNorAWindow(t *testing.T) {
	f, _ := NewSetUnion(Config{}, expression.NewLiteral("a", types.LongText), expression.NewLiteral("u", types.LongText))
	if _, err := f.Eval(sql.NewEmptyContext(), nil); err == nil {
		t.Fatal("Eval on the expression succeeded")
	}
	if _, err := f.NewWindowFunction(); err == nil {
		t.Fatal("NewWindowFunction succeeded")
	}
	if !f.IsNonDeterministic() {
		t.Fatal("DP_SET_UNION must be non-deterministic")
	}
	if _, err := NewSetUnion(Config{}, f); err == nil {
		t.Fatal("one argument accepted")
	}
}

func TestIsConstant(t *testing.T) {
	lit := expression.NewLiteral("epsilon=1", types.LongText)
	col := expression.NewGetField(0, types.LongText, "c", true)
	concat, _ := function.NewConcat(lit, expression.NewLiteral("0", types.LongText))
	withCol, _ := function.NewConcat(lit, col)
	rnd, _ := function.NewRand()
	withRand, _ := function.NewConcat(lit, rnd)
	for _, c := range []struct {
		e    sql.Expression
		want bool
	}{{lit, true}, {concat, true}, {col, false}, {withCol, false}, {withRand, false}} {
		if got := IsConstant(c.e); got != c.want {
			t.Errorf("IsConstant(%s) = %v", c.e, got)
		}
	}
}
