package sealed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/shopspring/decimal"
)

// inLeftTypes are the column types of the property test, with values of
// each (as a column of that type holds them).
func inLeftTypes(t *testing.T) []struct {
	typ  sql.Type
	vals []any
} {
	t.Helper()
	ci := types.MustCreateString(sqltypes.VarChar, 64, sql.Collation_utf8mb4_0900_ai_ci)
	gen := types.MustCreateString(sqltypes.VarChar, 64, sql.Collation_utf8mb4_general_ci)
	bin := types.MustCreateBinary(sqltypes.VarBinary, 64)
	dec := types.MustCreateDecimalType(10, 2)
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	texts := []any{"a", "A", "á", "a ", " a", "abc", "ABC", "1", "1.0", "01", "1abc", "", "ß", "ss", "2024-02-29", "2024-02-29 00:00:00", "x", "é", "e"}
	return []struct {
		typ  sql.Type
		vals []any
	}{
		{types.LongText, texts},
		{ci, texts},
		{gen, texts},
		{bin, []any{[]byte("a"), []byte("A"), []byte("1"), []byte("abc"), []byte{}, []byte("a ")}},
		{types.Int64, []any{int64(0), int64(1), int64(-1), int64(2), int64(10), int64(1 << 40)}},
		{types.Int32, []any{int32(0), int32(1), int32(-1), int32(2)}},
		{types.Uint64, []any{uint64(0), uint64(1), uint64(2), uint64(1 << 63)}},
		{types.Float64, []any{0.0, 1.0, 1.5, -1.0, 2.0, 0.1 + 0.2, 1e20}},
		{dec, []any{decimal.RequireFromString("0"), decimal.RequireFromString("1"), decimal.RequireFromString("1.5"), decimal.RequireFromString("1.50"), decimal.RequireFromString("-2.25")}},
		{types.Datetime, []any{day, day.Add(time.Second), day.Add(24 * time.Hour), time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{types.Date, []any{day, day.Add(24 * time.Hour)}},
	}
}

// inElements are the literals an IN list is drawn from: text, numbers of
// every kind, dates and NULL.
func inElements() []*expression.Literal {
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	out := []*expression.Literal{expression.NewLiteral(nil, types.Null)}
	for _, s := range []string{"a", "A", "á", "a ", "abc", "ABC", "1", "1.0", "1.5", "01", "1abc", "", "ß", "ss", "2024-02-29", "2024-02-29 00:00:01", "e", "x"} {
		out = append(out, expression.NewLiteral(s, types.LongText))
	}
	for _, n := range []int64{0, 1, -1, 2, 10, 1 << 40} {
		out = append(out, expression.NewLiteral(n, types.Int64))
	}
	out = append(out, expression.NewLiteral(int8(1), types.Int8), expression.NewLiteral(uint64(1<<63), types.Uint64))
	for _, f := range []float64{1.0, 1.5, 0.30000000000000004, -1} {
		out = append(out, expression.NewLiteral(f, types.Float64))
	}
	for _, d := range []string{"1", "1.50", "1.500", "-2.25", "0.1"} {
		v := decimal.RequireFromString(d)
		out = append(out, expression.NewLiteral(v, types.MustCreateDecimalType(10, uint8(-v.Exponent()))))
	}
	out = append(out, expression.NewLiteral(day, types.Datetime), expression.NewLiteral(day, types.Date),
		expression.NewLiteral(day.Add(time.Second), types.Datetime))
	return out
}

// TestHashedInMatchesInTuple: on random lists of literals of mixed types
// and random values of every column type, the hashed IN gives exactly
// go-mysql-server's InTuple result: TRUE, FALSE, NULL, or an error.
func TestHashedInMatchesInTuple(t *testing.T) {
	ctx := sql.NewContext(context.Background(), sql.WithSession(newSession(nil, 64<<10)))
	rng := rand.New(rand.NewPCG(20, 4))
	elems := inElements()
	hashed, cases := 0, 0
	for _, lt := range inLeftTypes(t) {
		left := expression.NewGetField(0, lt.typ, "c", true)
		for range 300 {
			n := 1 + rng.IntN(8)
			tuple := make(expression.Tuple, n)
			for i := range tuple {
				tuple[i] = elems[rng.IntN(len(elems))]
			}
			in := expression.NewInTuple(left, tuple)
			h := newHashedIn(ctx, in)
			if h == nil {
				continue
			}
			hashed++
			for _, v := range append(lt.vals, nil) {
				cases++
				row := sql.Row{v}
				want, werr := in.Eval(ctx, row)
				got, gerr := h.Eval(ctx, row)
				if (werr != nil) != (gerr != nil) || (werr == nil && !reflect.DeepEqual(want, got)) {
					t.Fatalf("%s = %v (%T %v) IN %s: InTuple gives %v (%v), hashed %v (%v)",
						lt.typ, v, v, v, tuple, want, werr, got, gerr)
				}
			}
		}
	}
	if hashed < 2000 || cases < 10000 {
		t.Errorf("only %d lists hashed, %d cases compared", hashed, cases)
	}
	t.Logf("%d lists hashed, %d cases compared", hashed, cases)
}

// TestInListIsHashedInRelease: a release's `s IN (<9,999 literals>)`
// compiles to a hashed lookup whose row work is the operand's bytes, not
// 9,999 comparisons; NOT IN too. A list that cannot be hashed (a row
// constructor) counts every comparison as work.
func TestInListIsHashedInRelease(t *testing.T) {
	ctx := newParent(t)
	in := inList(9999)
	p := compile(t, ctx, in, expression.NewNot(in))
	for i, u := range p.units {
		if _, ok := u.expr.(*hashedIn); !ok && i != len(p.units)-1 {
			t.Errorf("unit %d is %T, want the hashed IN", i, u.expr)
		}
	}
	ev := p.NewEvaluator(ctx)
	for _, c := range []struct {
		s    string
		want any
	}{{"w17", true}, {"w9998", true}, {"nope", false}} {
		if !ev.Row(sql.Row{c.s, int64(1), 1.0, nil, nil}) {
			t.Fatalf("%s: row skipped", c.s)
		}
		if v, _ := ev.Value(0); v != c.want {
			t.Errorf("%s IN list = %v, want %v", c.s, v, c.want)
		}
		if v, _ := ev.Value(1); v != !c.want.(bool) {
			t.Errorf("%s NOT IN list = %v", c.s, v)
		}
		if ev.Work() > 1000 {
			t.Errorf("%s: work %d for a hashed list", c.s, ev.Work())
		}
	}

	// (s, n) IN ((…), …) is not hashed: 200 pairs cost their comparisons
	// (longer lists of row constructors exceed the operators' limit).
	pairs := make(expression.Tuple, 200)
	for i := range pairs {
		pairs[i] = expression.Tuple{str(fmt.Sprintf("w%d", i)), lit(int64(i), types.Int64)}
	}
	tp := compile(t, ctx, expression.NewInTuple(expression.Tuple{col("s"), col("n")}, pairs))
	tev := tp.NewEvaluator(ctx)
	tev.Row(sql.Row{"w1", int64(1), 1.0, nil, nil})
	if tev.Work() < 200*elemWork {
		t.Errorf("a row constructor IN of 200 pairs: work %d, want ≥ %d", tev.Work(), 200*elemWork)
	}
}

// TestConstantListsCountAsWork: FIELD() and CASE x WHEN compare their
// operand with each constant; each element counts elemWork and the
// operand once per element, and a list whose elements alone exceed the
// row work limit is refused before anything is charged.
func TestConstantListsCountAsWork(t *testing.T) {
	ctx := newParent(t)
	args := []sql.Expression{col("s")}
	for i := range 100 {
		args = append(args, str(fmt.Sprintf("w%d", i)))
	}
	field := fn(t, "field", args...)
	branches := make([]expression.CaseBranch, 100)
	for i := range branches {
		branches[i] = expression.CaseBranch{Cond: str(fmt.Sprintf("w%d", i)), Value: lit(int64(i), types.Int64)}
	}
	cs := expression.NewCase(col("s"), branches, nil)
	// 215 bytes: re-read 100 times it stays within the row's budget
	// (budget.go: 64 bytes of work per byte the row's values hold).
	long := "a-long-operand-" + strings.Repeat("x", 200)
	for _, e := range []sql.Expression{field, cs} {
		ev := compile(t, ctx, e).NewEvaluator(ctx)
		ev.Row(sql.Row{long, int64(1), 1.0, nil, nil})
		if want := 100*elemWork + 100*len(long); ev.Work() < want {
			t.Errorf("%s…: work %d, want ≥ %d", e.String()[:20], ev.Work(), want)
		}
	}
	args = args[:1]
	for i := range 9000 {
		args = append(args, str(fmt.Sprintf("w%d", i)))
	}
	_, err := Compile(ctx, []sql.Expression{fn(t, "field", args...)}, len(testSchema), Limits{})
	var na *NotAllowedError
	if !errors.As(err, &na) || !strings.Contains(err.Error(), "release_row_work") {
		t.Errorf("FIELD of 9,000 constants: %v, want a refusal naming limits.release_row_work", err)
	}
}

// TestHashInTupleIsHashedIn: go-mysql-server's HashInTuple (its analyzer
// makes it of IN lists in filters) compiles to the release's hashed IN,
// with InTuple's comparison.
func TestHashInTupleIsHashedIn(t *testing.T) {
	ctx := newParent(t)
	h, err := expression.NewHashInTuple(ctx, col("n"), expression.Tuple{str("1"), str("2x"), lit(3.0, types.Float64)})
	if err != nil {
		t.Fatal(err)
	}
	p := compile(t, ctx, h)
	if _, ok := p.units[0].expr.(*hashedIn); !ok {
		t.Fatalf("HashInTuple compiled to %T", p.units[0].expr)
	}
	ev := p.NewEvaluator(ctx)
	in := expression.NewInTuple(col("n"), expression.Tuple{str("1"), str("2x"), lit(3.0, types.Float64)})
	sctx := sql.NewContext(context.Background(), sql.WithSession(newSession(nil, 64<<10)))
	for _, n := range []int64{0, 1, 2, 3, 4} {
		row := sql.Row{"", n, 1.0, nil, nil}
		want, _ := in.Eval(sctx, row)
		ev.Row(row)
		if v, _ := ev.Value(0); v != want {
			t.Errorf("%d IN ('1', '2x', 3.0) = %v, InTuple gives %v", n, v, want)
		}
	}
}

// TestHashedInSlowPathCounted: a text operand that is not valid UTF-8
// fails its conversion, in InTuple and in the hashed IN alike (the row's
// value fails; nothing is compared). An operand without a key (which the
// key functions leave to no value a column holds; simulated here with a
// group whose type has none) is compared one by one as InTuple does, and
// that row's work counts every comparison, so a 9,999-element list skips
// it instead of taking 9,999 comparisons' time.
func TestHashedInSlowPathCounted(t *testing.T) {
	ctx := newParent(t)
	bad := sql.Row{"\xff\xfe", int64(1), 1.0, nil, nil}
	sctx := sql.NewContext(context.Background(), sql.WithSession(newSession(nil, 64<<10)))
	in := inList(10).(*expression.InTuple)
	if _, err := in.Eval(sctx, bad); err == nil {
		t.Fatal("InTuple accepts invalid UTF-8")
	}
	ev := compile(t, ctx, in).NewEvaluator(ctx)
	if ev.Row(bad); ev.Work() > 100 {
		t.Errorf("invalid operand: work %d", ev.Work())
	}
	if _, ok := ev.Value(0); ok {
		t.Error("invalid operand: the hashed IN has a value, InTuple an error")
	}

	h := newHashedIn(sctx, inList(9999).(*expression.InTuple))
	h.groups[0].typ = types.JSON // no key for a string
	row := sql.Row{"w1", int64(1), 1.0, nil, nil}
	if w := h.slowWork(sctx, row, 1<<20+1); w <= 1<<20 {
		t.Errorf("slow path of 9,999 comparisons: work %d, want beyond the row work", w)
	}
	h = newHashedIn(sctx, in)
	if w := h.slowWork(sctx, row, 1<<20+1); w != 0 {
		t.Errorf("hashed lookup counted %d of slow work", w)
	}
	h.groups[0].typ = types.JSON
	if w := h.slowWork(sctx, row, 1<<20+1); w != 10*(elemWork+2) {
		t.Errorf("slow path of 10 comparisons: work %d, want %d", w, 10*(elemWork+2))
	}
}
