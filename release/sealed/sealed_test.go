package sealed

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/go-mysql-server/sql/variables"
)

// The test table: s LONGTEXT, n BIGINT, f DOUBLE, d DATETIME, b LONGBLOB.
var testSchema = sql.Schema{
	{Name: "s", Type: types.LongText, Nullable: true, Source: "t"},
	{Name: "n", Type: types.Int64, Nullable: true, Source: "t"},
	{Name: "f", Type: types.Float64, Nullable: true, Source: "t"},
	{Name: "d", Type: types.Datetime, Nullable: true, Source: "t"},
	{Name: "b", Type: types.LongBlob, Nullable: true, Source: "t"},
}

func col(name string) *expression.GetField {
	i := testSchema.IndexOfColName(name)
	c := testSchema[i]
	return expression.NewGetFieldWithTable(i, 0, c.Type, "db", "t", c.Name, c.Nullable)
}

func lit(v any, t sql.Type) *expression.Literal { return expression.NewLiteral(v, t) }

func str(s string) *expression.Literal { return lit(s, types.LongText) }

func init() {
	// A server registers the system variables before any session exists;
	// some functions (regular expressions) read them.
	variables.InitSystemVariables()
}

func newParent(t *testing.T) *sql.Context {
	t.Helper()
	return sql.NewContext(context.Background(), sql.WithSession(sql.NewBaseSession()))
}

func fn(t *testing.T, name string, args ...sql.Expression) sql.Expression {
	t.Helper()
	f := builtin(name)
	if f == nil {
		t.Fatalf("no function %s", name)
	}
	e, err := f.NewInstance(args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return e
}

func builtin(name string) sql.Function {
	for _, f := range function.BuiltIns {
		if f.FunctionName() == name {
			return f
		}
	}
	return nil
}

func compile(t *testing.T, ctx *sql.Context, exprs ...sql.Expression) *Program {
	t.Helper()
	p, err := Compile(ctx, exprs, len(testSchema), Limits{})
	if err != nil {
		t.Fatalf("compile %v: %v", exprs, err)
	}
	return p
}

// TestRefused: everything outside the allow-list is refused with an error
// that names it and points to the documentation.
func TestRefused(t *testing.T) {
	ctx := newParent(t)
	for _, c := range []struct {
		e    sql.Expression
		want string
	}{
		{fn(t, "last_insert_id", col("n")), "LAST_INSERT_ID()"},
		{fn(t, "sleep", col("n")), "SLEEP()"},
		{fn(t, "rand"), "RAND()"},
		{fn(t, "now"), "NOW()"},
		{fn(t, "uuid"), "UUID()"},
		{fn(t, "repeat", col("s"), lit(int64(3), types.Int64)), "REPEAT()"},
		{fn(t, "space", col("n")), "SPACE()"},
		{fn(t, "unix_timestamp"), "UNIX_TIMESTAMP()"},
		{fn(t, "database"), "DATABASE()"},
		{fn(t, "found_rows"), "FOUND_ROWS()"},
		{fn(t, "load_file", col("s")), "LOAD_FILE()"},
		{fn(t, "uncompress", col("b")), "UNCOMPRESS()"},
		{fn(t, "json_set", col("s"), str("$.a"), col("n")), "JSON_SET()"},
		{fn(t, "regexp_like", col("s"), col("s")), "it must be a constant"},
		{fn(t, "date_format", col("d"), col("s")), "it must be a constant"},
		{expression.NewSetField(expression.NewUserVar("x"), col("s")), "an assignment"},
		{fn(t, "count", col("s")), "aggregate"},
	} {
		_, err := Compile(ctx, []sql.Expression{c.e}, len(testSchema), Limits{})
		var na *NotAllowedError
		if !errors.As(err, &na) {
			t.Errorf("%s: err = %v, want a NotAllowedError", c.e, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), ListDoc) {
			t.Errorf("%s: %q does not say %q and where the list is", c.e, err, c.want)
		}
	}
	// Too many operators.
	var e sql.Expression = col("n")
	for range 300 {
		e = expression.NewPlus(e, lit(int64(1), types.Int64))
	}
	if _, err := Compile(ctx, []sql.Expression{e}, len(testSchema), Limits{}); err == nil || !strings.Contains(err.Error(), "at most 256") {
		t.Errorf("300 operators: %v", err)
	}
}

// TestSealedSession: warnings, LAST_INSERT_ID-like state and variables of
// the analyst's session are untouched by an evaluation that would warn.
func TestSealedSession(t *testing.T) {
	parent := newParent(t)
	parent.Session.SetLastQueryInfoInt(sql.LastInsertId, 7)
	// INET_ATON of a non-address and CAST of garbage warn in go-mysql-server.
	p := compile(t, parent,
		fn(t, "inet_aton", col("s")),
		expression.NewConvert(col("s"), "signed"),
		expression.NewDiv(col("n"), lit(int64(0), types.Int64)),
	)
	ev := p.NewEvaluator(parent)
	for _, s := range []string{"secret value", "12abc", ""} {
		if !ev.Row(sql.Row{s, int64(1), 1.5, nil, nil}) {
			t.Fatalf("row %q skipped", s)
		}
	}
	if n := parent.Session.WarningCount(); n != 0 {
		t.Errorf("analyst's session has %d warnings: %v", n, parent.Session.Warnings())
	}
	if v := parent.Session.GetLastQueryInfoInt(sql.LastInsertId); v != 7 {
		t.Errorf("LAST_INSERT_ID changed to %d", v)
	}
}

// TestLazySemantics: an error in an argument the function does not read
// (the other branch of IF, an OR already true) does not fail the row; an
// error in one it reads does.
func TestLazySemantics(t *testing.T) {
	ctx := newParent(t)
	failing := &failingExpr{child: col("s"), evals: new(int)}
	allowed[reflect.TypeOf(failing)] = &rule{entry: &Entry{Group: "test"}}
	defer delete(allowed, reflect.TypeOf(failing))

	isZero := expression.NewEquals(col("n"), lit(int64(0), types.Int64))
	p := compile(t, ctx,
		fn(t, "if", isZero, str("zero"), failing),                        // 0: fails unless n = 0
		expression.NewOr(isZero, expression.NewEquals(failing, str(""))), // 1: true when n = 0
		fn(t, "coalesce", col("s"), failing),                             // 2: fails when s is NULL
	)
	ev := p.NewEvaluator(ctx)
	if !ev.Row(sql.Row{"x", int64(0), nil, nil, nil}) {
		t.Fatal("row skipped")
	}
	for i, want := range []any{"zero", true, "x"} {
		if v, ok := ev.Value(i); !ok || v != want {
			t.Errorf("n = 0: value %d = %v, %v; want %v", i, v, ok, want)
		}
	}
	if *failing.evals != 3 {
		t.Errorf("the failing argument was evaluated %d times, want once per expression (3)", *failing.evals)
	}
	ev.Row(sql.Row{nil, int64(1), nil, nil, nil})
	for i := range 3 {
		if _, ok := ev.Value(i); ok {
			t.Errorf("n = 1, s NULL: value %d did not fail", i)
		}
	}
}

// failingExpr always fails (on a column, so it is not a constant), and
// counts its evaluations.
type failingExpr struct {
	child sql.Expression
	evals *int
}

func (f *failingExpr) Resolved() bool             { return true }
func (f *failingExpr) String() string             { return "FAILING()" }
func (f *failingExpr) Type() sql.Type             { return types.LongText }
func (f *failingExpr) IsNullable() bool           { return true }
func (f *failingExpr) Children() []sql.Expression { return []sql.Expression{f.child} }
func (f *failingExpr) WithChildren(ch ...sql.Expression) (sql.Expression, error) {
	return &failingExpr{child: ch[0], evals: f.evals}, nil
}
func (f *failingExpr) Eval(*sql.Context, sql.Row) (any, error) {
	*f.evals++
	return nil, errors.New("failing: secret 123-45-6789")
}

// TestEager: both branches of IF, every argument of COALESCE and both sides
// of AND are evaluated on every row, whatever the condition: a call's cost
// does not depend on the branch a row selects.
func TestEager(t *testing.T) {
	ctx := newParent(t)
	counter := &countingExpr{child: col("s"), n: new(int)}
	allowed[reflect.TypeOf(counter)] = &rule{entry: &Entry{Group: "test"}}
	defer delete(allowed, reflect.TypeOf(counter))

	isVictim := expression.NewEquals(col("s"), str("victim"))
	p := compile(t, ctx,
		fn(t, "if", isVictim, counter, str("")),
		expression.NewAnd(expression.NewEquals(col("n"), lit(int64(-1), types.Int64)), expression.NewEquals(counter, str("x"))),
		fn(t, "coalesce", str("constant"), counter),
	)
	ev := p.NewEvaluator(ctx)
	for _, s := range []string{"victim", "someone", "else"} {
		*counter.n = 0
		ev.Row(sql.Row{s, int64(1), nil, nil, nil})
		if *counter.n != 3 {
			t.Errorf("row %q: %d evaluations of the costly call, want 3 (one per expression)", s, *counter.n)
		}
	}
}

type countingExpr struct {
	child sql.Expression
	n     *int
}

func (c *countingExpr) Resolved() bool             { return true }
func (c *countingExpr) String() string             { return "COUNTING()" }
func (c *countingExpr) Type() sql.Type             { return types.LongText }
func (c *countingExpr) IsNullable() bool           { return true }
func (c *countingExpr) Children() []sql.Expression { return []sql.Expression{c.child} }
func (c *countingExpr) WithChildren(ch ...sql.Expression) (sql.Expression, error) {
	return &countingExpr{child: ch[0], n: c.n}, nil
}
func (c *countingExpr) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	*c.n++
	return c.child.Eval(ctx, row)
}

// TestPanicSkipsRow: a function that panics on a row's value (LOCATE with a
// huge negative position panicked in go-mysql-server v0.20.0) skips that row
// and leaves the evaluator usable.
func TestPanicSkipsRow(t *testing.T) {
	ctx := newParent(t)
	p := compile(t, ctx, fn(t, "locate", str("a"), col("s"), col("n")))
	ev := p.NewEvaluator(ctx)
	for _, n := range []int64{-3224116, -1 << 62, 1 << 62, 0, 1} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic escaped for %d: %v", n, r)
				}
			}()
			if ev.Row(sql.Row{"banana", n, nil, nil, nil}) {
				ev.Value(0)
			}
		}()
	}
	if !ev.Row(sql.Row{"banana", int64(1), nil, nil, nil}) {
		t.Fatal("evaluator unusable after a panic")
	}
	if v, ok := ev.Value(0); !ok || v != int32(2) && v != int64(2) && v != 2 {
		t.Fatalf("LOCATE('a', 'banana', 1) = %v (%T), %v", v, v, ok)
	}
}

// TestLimits: a value beyond MaxValueBytes fails its call; a row beyond
// MaxRowWork is skipped.
func TestLimits(t *testing.T) {
	ctx := newParent(t)
	big := strings.Repeat("x", 40<<10)
	var e sql.Expression = col("s")
	for range 3 {
		e = fn(t, "concat", e, e) // 80, 160, 320 KiB
	}
	p, err := Compile(ctx, []sql.Expression{fn(t, "length", e), fn(t, "length", col("s"))}, len(testSchema), Limits{MaxValueBytes: 64 << 10, MaxRowWork: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ev := p.NewEvaluator(ctx)
	if !ev.Row(sql.Row{big, nil, nil, nil, nil}) {
		t.Fatal("row skipped")
	}
	if _, ok := ev.Value(0); ok {
		t.Error("a 320 KiB intermediate value did not fail")
	}
	if v, ok := ev.Value(1); !ok || v != int32(40<<10) && v != int64(40<<10) {
		t.Errorf("LENGTH(s) = %v (%T), %v", v, v, ok)
	}
	// Work: 20 calls reading a 200 KiB column exceed 1 MiB.
	var calls []sql.Expression
	for range 20 {
		calls = append(calls, fn(t, "lower", col("s")))
	}
	p2, err := Compile(ctx, calls, len(testSchema), Limits{MaxValueBytes: 1 << 20, MaxRowWork: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ev2 := p2.NewEvaluator(ctx)
	if ev2.Row(sql.Row{strings.Repeat("y", 200<<10), nil, nil, nil, nil}) {
		t.Error("a row of 4 MiB of work was not skipped")
	}
	if !ev2.Row(sql.Row{"small", nil, nil, nil, nil}) {
		t.Error("a small row was skipped")
	}
}

// TestMatchWork: a LIKE's work is the string's length times the longest
// segment of its pattern; a pattern that would make one row cost more than
// MaxRowWork skips that row, a cheap one does not.
func TestMatchWork(t *testing.T) {
	ctx := newParent(t)
	long := strings.Repeat("ab", 50<<10) // 100 KiB
	costly := expression.NewLike(col("s"), str("%"+strings.Repeat("a", 64)+"%"), nil)
	cheap := expression.NewLike(col("s"), str("%b%"), nil)
	p, err := Compile(ctx, []sql.Expression{costly}, len(testSchema), Limits{MaxRowWork: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if p.NewEvaluator(ctx).Row(sql.Row{long, nil, nil, nil, nil}) {
		t.Error("100 KiB × 65 of work was not skipped")
	}
	p, err = Compile(ctx, []sql.Expression{cheap}, len(testSchema), Limits{MaxRowWork: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ev := p.NewEvaluator(ctx)
	if !ev.Row(sql.Row{long, nil, nil, nil, nil}) {
		t.Fatal("a cheap LIKE skipped the row")
	}
	if v, ok := ev.Value(0); !ok || v != true {
		t.Errorf("LIKE '%%b%%' = %v, %v", v, ok)
	}
}

// TestRegexpWork: a regular expression's work counts its compiled program
// (not its length), and replacing every match counts a search per byte.
func TestRegexpWork(t *testing.T) {
	ctx := newParent(t)
	text := strings.Repeat("ab", 5000) // 10 KB
	for _, c := range []struct {
		e    sql.Expression
		skip bool
	}{
		{fn(t, "regexp_like", col("s"), str("[ab]c")), false},
		{fn(t, "regexp_like", col("s"), str("[ab]{1000}c")), true},                                                                       // 11 bytes, ~1000 instructions
		{fn(t, "regexp_replace", col("s"), str("b"), str("c")), true},                                                                    // every match: quadratic bound
		{fn(t, "regexp_replace", col("s"), str("b"), str("c"), lit(int64(1), types.Int64), lit(int64(1), types.Int64), str("c")), false}, // the first match only (with 5 arguments go-mysql-server v0.20.0 panics: the row is skipped)
	} {
		p, err := Compile(ctx, []sql.Expression{c.e}, len(testSchema), Limits{MaxRowWork: 1 << 20})
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		if skipped := !p.NewEvaluator(ctx).Row(sql.Row{text, nil, nil, nil, nil}); skipped != c.skip {
			t.Errorf("%s over 10 KB: skipped %v, want %v", c.e, skipped, c.skip)
		}
	}
}
