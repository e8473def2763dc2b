package release

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/demo"
)

// TestUnitCompareAsSealed: for every comparison operator, NOT of it, the
// constant on either side and every signed integer literal type, the
// native comparison (keepCompared) keeps exactly the users the sealed
// program keeps (keepUsers without it), over units from the BIGINT range's
// ends to small numbers around the constant; and the filters it must not
// take (unsigned, float, decimal, text and NULL constants, other columns,
// functions of the unit) run the sealed program.
func TestUnitCompareAsSealed(t *testing.T) {
	db, _, err := demo.New()
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := db.Table("words")
	ctx := sql.NewContext(context.Background())
	sch := tbl.Schema()
	ui := sch.IndexOfColName("user_id")
	unit := expression.NewGetFieldWithTable(ui, 0, types.Int64, "demo", "words", "user_id", true)
	r := rand.New(rand.NewPCG(24, 7))
	ops := []func(l, r sql.Expression) sql.Expression{
		func(l, r sql.Expression) sql.Expression { return expression.NewLessThan(l, r) },
		func(l, r sql.Expression) sql.Expression { return expression.NewLessThanOrEqual(l, r) },
		func(l, r sql.Expression) sql.Expression { return expression.NewEquals(l, r) },
		func(l, r sql.Expression) sql.Expression { return expression.NewGreaterThanOrEqual(l, r) },
		func(l, r sql.Expression) sql.Expression { return expression.NewGreaterThan(l, r) },
	}
	literal := func(c int64) sql.Expression {
		switch {
		case c >= math.MinInt8 && c <= math.MaxInt8 && r.IntN(2) == 0:
			return expression.NewLiteral(int8(c), types.Int8)
		case c >= math.MinInt16 && c <= math.MaxInt16 && r.IntN(2) == 0:
			return expression.NewLiteral(int16(c), types.Int16)
		case c >= math.MinInt32 && c <= math.MaxInt32 && r.IntN(2) == 0:
			return expression.NewLiteral(int32(c), types.Int32)
		}
		return expression.NewLiteral(c, types.Int64)
	}
	for trial := range 400 {
		c := []int64{0, 1, -1, 100, 4000, math.MaxInt64, math.MinInt64, r.Int64(), int64(r.IntN(300)) - 150}[trial%9]
		var users []string
		for _, v := range []int64{math.MinInt64, math.MaxInt64, 0, c - 1, c, c + 1} {
			users = append(users, strconv.FormatInt(v, 10))
		}
		for range 50 {
			users = append(users, strconv.FormatInt(c+int64(r.IntN(41))-20, 10), strconv.FormatInt(r.Int64()>>r.IntN(63), 10))
		}
		x := &Index{users: users}
		var f sql.Expression
		if lit, op := literal(c), ops[trial%len(ops)]; trial%2 == 0 {
			f = op(unit, lit)
		} else {
			f = op(lit, unit)
		}
		if trial%3 == 0 {
			f = expression.NewNot(f)
		}
		s, err := NewScan(ctx, "demo", "words", tbl, "user_id", Expr{E: f}, []Expr{{E: column(tbl, "word")}}, sealed.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if s.unitCmp == nil {
			t.Fatalf("%s: not compiled to a native comparison", f)
		}
		got, ok := s.keepUsers(ctx, x)
		s.unitCmp = nil
		want, ok2 := s.keepUsers(ctx, x)
		if !ok || !ok2 || !slices.Equal(got, want) {
			t.Fatalf("%s over %v:\nnative %v\nsealed %v", f, users, got, want)
		}
	}
	// A row-work bound of a few bytes skips every row: the sealed program
	// runs (and keeps nobody). Around the bound where rows start to fit,
	// the native comparison is taken only where it keeps what the sealed
	// program keeps.
	users := &Index{users: []string{"-3", "4", "5", "6", "9223372036854775807"}}
	native := 0
	for work := 1; work <= 200; work++ {
		lim := sealed.DefaultLimits()
		lim.MaxRowWork = work
		f := expression.NewNot(expression.NewLessThan(unit, expression.NewLiteral(int64(5), types.Int64)))
		s, err := NewScan(ctx, "demo", "words", tbl, "user_id", Expr{E: f}, []Expr{{E: column(tbl, "word")}}, lim)
		if err != nil || s.unitCmp == nil {
			continue
		}
		native++
		got, _ := s.keepUsers(ctx, users)
		s.unitCmp = nil
		if want, _ := s.keepUsers(ctx, users); !slices.Equal(got, want) {
			t.Fatalf("release_row_work = %d: native %v, sealed %v", work, got, want)
		}
	}
	if native == 0 || native == 200 {
		t.Fatalf("the native comparison was taken for %d of 200 row-work bounds: the bound is not tested", native)
	}
	word := column(tbl, "word")
	for _, f := range []sql.Expression{
		expression.NewLessThan(unit, expression.NewLiteral(uint64(5), types.Uint64)),
		expression.NewLessThan(unit, expression.NewLiteral(5.5, types.Float64)),
		expression.NewLessThan(unit, expression.NewLiteral("5", types.LongText)),
		expression.NewLessThan(unit, expression.NewLiteral(nil, types.Null)),
		expression.NewNullSafeEquals(unit, expression.NewLiteral(int64(5), types.Int64)),
		expression.NewLessThan(expression.NewPlus(unit, expression.NewLiteral(int64(1), types.Int64)), expression.NewLiteral(int64(5), types.Int64)),
		expression.NewLessThan(word, expression.NewLiteral(int64(5), types.Int64)),
		expression.NewNot(expression.NewNot(expression.NewLessThan(unit, expression.NewLiteral(int64(5), types.Int64)))),
	} {
		s, err := NewScan(ctx, "demo", "words", tbl, "user_id", Expr{E: f}, []Expr{{E: word}}, sealed.DefaultLimits())
		if err != nil {
			continue // refused: nothing to compare
		}
		if s.unitCmp != nil {
			t.Errorf("%s: compiled to a native comparison %+v", fmt.Sprint(f), *s.unitCmp)
		}
	}
}
