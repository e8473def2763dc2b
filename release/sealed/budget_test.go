package sealed

import (
	"runtime"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// victimPad is docs/privacy.md §30's costly branch: k values of n
// characters on the victim's row, of one character on the others, summed
// into a filter that keeps every row.
func victimPad(t *testing.T, k, n int) sql.Expression {
	isVictim := expression.NewEquals(col("s"), str("victim"))
	var sum sql.Expression
	for range k {
		width := fn(t, "if", isVictim, lit(int64(n), types.Int64), lit(int64(1), types.Int64))
		l := fn(t, "length", fn(t, "lpad", col("s"), width, str("x")))
		if sum == nil {
			sum = l
		} else {
			sum = expression.NewPlus(sum, l)
		}
	}
	return expression.NewGreaterThanOrEqual(sum, lit(int64(0), types.Int64))
}

// allocPerRow returns the bytes allocated per evaluation of row.
func allocPerRow(ev *Evaluator, row sql.Row, n int) (bytes uint64, kept bool) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for range n {
		kept = ev.Row(row)
	}
	runtime.ReadMemStats(&m1)
	return (m1.TotalAlloc - m0.TotalAlloc) / uint64(n), kept
}

// TestRowBudgetVictimBranch: with the default limits (1 MiB of work per
// row), a row of a few bytes may do at most rowWorkBase + 64 bytes of work
// per byte of its values, so the costly branch of §30 skips the victim's
// row after its first value of 16,000 characters, without building the
// second: the victim's row allocates a few times its budget (it allocated
// 500 KB), and the ordinary rows are kept.
func TestRowBudgetVictimBranch(t *testing.T) {
	ctx := newParent(t)
	p := compile(t, ctx, victimPad(t, 15, 16000))
	ev := p.NewEvaluator(ctx)
	other, kept := allocPerRow(ev, sql.Row{"someone", nil, nil, nil, nil}, 200)
	if !kept {
		t.Fatal("an ordinary row was skipped")
	}
	victim, kept := allocPerRow(ev, sql.Row{"victim", nil, nil, nil, nil}, 200)
	if kept {
		t.Error("the victim's row of 15 values of 16,000 characters was kept")
	}
	if ev.Work() <= p.rowBudget(sql.Row{"victim"}) {
		t.Errorf("skipped with work %d within the budget %d", ev.Work(), p.rowBudget(sql.Row{"victim"}))
	}
	t.Logf("allocated per row: ordinary %d B, victim %d B", other, victim)
	if b := uint64(p.rowBudget(sql.Row{"victim"})); victim > other+3*b {
		t.Errorf("the victim's row allocated %d B, an ordinary row %d B: more than 3 times the budget %d", victim, other, b)
	}
	// The largest branch that fits: one value of 16,000 characters is
	// built and read, a second is not.
	if p := compile(t, ctx, victimPad(t, 1, 16000)); !p.NewEvaluator(ctx).Row(sql.Row{"victim", nil, nil, nil, nil}) {
		t.Error("one value of 16,000 characters skipped the row")
	}
	if p := compile(t, ctx, victimPad(t, 2, 9000)); p.NewEvaluator(ctx).Row(sql.Row{"victim", nil, nil, nil, nil}) {
		t.Error("two values of 9,000 characters kept a row of 6 bytes")
	}
}

// TestRowBudgetRoot: a sized call whose value is an output of the program
// (a key), read by no other call, counts its growth: two keys of 9,000
// bytes exceed the budget of a row of 6.
func TestRowBudgetRoot(t *testing.T) {
	ctx := newParent(t)
	isVictim := expression.NewEquals(col("s"), str("victim"))
	key := func() sql.Expression {
		return fn(t, "rpad", col("s"), fn(t, "if", isVictim, lit(int64(9000), types.Int64), lit(int64(1), types.Int64)), str("x"))
	}
	ev := compile(t, ctx, key(), key()).NewEvaluator(ctx)
	if !ev.Row(sql.Row{"someone", nil, nil, nil, nil}) {
		t.Error("an ordinary row was skipped")
	}
	if ev.Row(sql.Row{"victim", nil, nil, nil, nil}) {
		v, _ := ev.Value(0)
		t.Errorf("two keys of %d bytes from a row of 6 were kept", size(v, 1<<30))
	}
}

// TestRowBudgetLongRows: rows of long text keep the bound of MaxRowWork:
// a few calls over a 50 KB value are evaluated, and the budget of a row
// is a function of the values the program reads from it only.
func TestRowBudgetLongRows(t *testing.T) {
	ctx := newParent(t)
	long := strings.Repeat("abc ", 12500) // 50 KB, under the 64 KiB value limit
	e := expression.NewAnd(
		expression.NewLike(fn(t, "lower", col("s")), str("%bc a%"), nil),
		expression.NewGreaterThan(fn(t, "length", fn(t, "concat", col("s"), str("!"))), lit(int64(0), types.Int64)))
	p := compile(t, ctx, e)
	ev := p.NewEvaluator(ctx)
	if !ev.Row(sql.Row{long, nil, nil, nil, nil}) {
		t.Fatalf("a row of 50 KB skipped: work %d, budget %d", ev.Work(), p.rowBudget(sql.Row{long, nil, nil, nil, nil}))
	}
	if v, ok := ev.Value(0); !ok || v != true {
		t.Errorf("value %v (%T), %v; scratch %v", v, v, ok, ev.scratch[5:])
	}
	// Columns the program does not read do not change the budget.
	a := p.rowBudget(sql.Row{"x", nil, nil, nil, nil})
	if b := p.rowBudget(sql.Row{"x", int64(3), 2.5, nil, []byte(long)}); a != b {
		t.Errorf("budget %d, and %d with other columns set", a, b)
	}
	if want := rowWorkBase + p.fixed + rowWorkPerByte; a != want {
		t.Errorf("budget of a one-byte row %d, want %d", a, want)
	}
}

// TestConstantInBranchComputedOnce: a constant call in a branch that only
// the victim's rows select (IF(s = 'victim', LPAD('x', 16000, 'x'), ”)) is
// computed once, at compile time, not on the rows that select it: the
// work model charges its size to every row, so computing it on some rows
// only was work beyond the model (33 KB allocated per victim row, none
// per other row, before the fold).
func TestConstantInBranchComputedOnce(t *testing.T) {
	ctx := newParent(t)
	isVictim := expression.NewEquals(col("s"), str("victim"))
	big := fn(t, "lpad", str("x"), lit(int64(16000), types.Int64), str("x"))
	p := compile(t, ctx, expression.NewIsNull(fn(t, "if", isVictim, big, str(""))))
	ev := p.NewEvaluator(ctx)
	other, _ := allocPerRow(ev, sql.Row{"someone", nil, nil, nil, nil}, 200)
	victim, kept := allocPerRow(ev, sql.Row{"victim", nil, nil, nil, nil}, 200)
	if !kept {
		t.Fatal("the victim's row was skipped")
	}
	if v, ok := ev.Value(0); !ok || v != false {
		t.Errorf("value %v, %v: want false", v, ok)
	}
	t.Logf("allocated per row: ordinary %d B, victim %d B", other, victim)
	if victim > other+1024 {
		t.Errorf("the victim's row allocated %d B, an ordinary row %d B: the constant was computed per row", victim, other)
	}
}
