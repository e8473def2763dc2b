package release_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// allowGov protects every table of database adv (privacy unit uid) and
// governs the user "analyst"; nothing is refused or recorded.
type allowGov struct{}

func (allowGov) PrivacyUnit(db, _ string) (string, bool) {
	return "uid", strings.EqualFold(db, "adv")
}
func (allowGov) Governed(ctx *sql.Context) bool             { return ctx.Session.Client().User == "analyst" }
func (allowGov) Check(*sql.Context, release.Request) error  { return nil }
func (allowGov) Charge(*sql.Context, release.Request) error { return nil }

// adversarialEngine serves adv.t, a protected table of adversarial values
// (NULLs, extreme numbers and dates, invalid UTF-8, empty and 1 MB strings)
// or, without withData, the same table empty.
func adversarialEngine(t testing.TB, withData bool) *sqle.Engine {
	t.Helper()
	cols := []storage.Column{
		{Name: "uid", Type: storage.Text}, {Name: "s", Type: storage.Text}, {Name: "n", Type: storage.BigInt},
		{Name: "f", Type: storage.Double}, {Name: "d", Type: storage.Datetime},
	}
	gov := allowGov{}
	db := storage.NewDatabase("adv")
	for _, name := range []string{"t"} {
		b, err := storage.NewTableBuilder(name, cols)
		if err != nil {
			t.Fatal(err)
		}
		if withData {
			strs := []any{nil, "", "x", "\xff\xfe\xc3\x28", "2020-02-30", "0000-00-00 00:00:00", "-9223372036854775808",
				"1e308", "{\"a\": [1, 2]}", "a%b_c\\", "ünïcödé 𝄞", strings.Repeat("z", 1<<20), "192.168.0.1", "NaN"}
			nums := []any{nil, int64(0), int64(-1), int64(1), int64(9223372036854775807), int64(-9223372036854775808), int64(-3224116)}
			flts := []any{nil, 0.0, math.Copysign(0, -1), 1e308, -1e308, 5e-324, 0.1}
			dates := []any{nil, "1000-01-01 00:00:00", "9999-12-31 23:59:59", "2024-02-29 12:00:00", "1970-01-01 00:00:00"}
			for i := range 40 {
				row := []string{fmt.Sprintf("u%d", i%7), textOf(strs[i%len(strs)]), textOf(nums[i%len(nums)]), textOf(flts[i%len(flts)]), textOf(dates[i%len(dates)])}
				fields := make([][]byte, len(row))
				for k, v := range row {
					if v != "\x00NULL" {
						fields[k] = []byte(v)
					}
				}
				if err := b.AppendText(fields); err != nil {
					t.Fatalf("row %v: %v", row, err)
				}
			}
		}
		tbl, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		db.AddTable(tbl.WithRowCounts(storage.HiddenCounts).WithScanGuard(release.ScanGuard(gov, "adv", name)))
	}
	pro, err := storage.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	rnd := func() *rand.Rand { return securerand.NewSeeded(1) }
	e, err := engine.New(engine.Config{
		Provider:  pro,
		Functions: functions.Config{Rand: rnd, Governor: gov},
		Rules:     planner.PolicyRules(gov, planner.WithRand(rnd)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// textOf renders a value as a table field; NULL is marked.
func textOf(v any) string {
	if v == nil {
		return "\x00NULL"
	}
	return fmt.Sprint(v)
}

// outcome runs q as the analyst in a fresh session and returns its error
// text ("" on success) and what it left in the session: warnings, last
// insert id, the user variable @x.
func outcome(t *testing.T, e *sqle.Engine, q string) (errText string, leftovers []string) {
	t.Helper()
	ctx := engine.NewContext(context.Background(), "analyst", "adv")
	ctx.Session.SetUserVariable(ctx, "x", "unchanged", nil)
	_, iter, _, err := query(e, ctx, q)
	if err == nil {
		for {
			if _, err = iter.Next(ctx); err != nil {
				break
			}
		}
		iter.Close(ctx)
		if err == io.EOF {
			err = nil
		}
	}
	if err != nil {
		errText = err.Error()
	}
	// The release's own Notes (no key released, bounds chosen privately)
	// are functions of its output and of the statement; any other warning
	// is a leftover of the evaluation.
	for _, w := range ctx.Session.Warnings() {
		if w.Level == "Note" && strings.HasPrefix(w.Message, "private release on ") {
			continue
		}
		leftovers = append(leftovers, fmt.Sprintf("%d warnings: %v", ctx.Session.WarningCount(), w.Message))
		break
	}
	if id := ctx.Session.GetLastQueryInfoInt(sql.LastInsertId); id != 0 {
		leftovers = append(leftovers, fmt.Sprintf("LAST_INSERT_ID %d", id))
	}
	if _, v, _ := ctx.Session.GetUserVariable(ctx, "x"); v != "unchanged" {
		leftovers = append(leftovers, fmt.Sprintf("@x = %v", v))
	}
	return errText, leftovers
}

// query runs e.Query, turning a panic into an error (go-mysql-server's
// planbuilder panics on some constant arguments; the server's handler
// recovers those as errors, which the comparison with the empty table
// then judges).
func query(e *sqle.Engine, ctx *sql.Context, q string) (_ sql.Schema, _ sql.RowIter, _ *sql.QueryFlags, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return e.Query(ctx, q)
}

// argCandidates are the arguments generated calls take: the columns and
// adversarial constants.
var argCandidates = []string{"s", "n", "f", "d", "uid", "NULL", "0", "-1", "9223372036854775807", "-9223372036854775808",
	"18446744073709551615", "1e308", "-3224116", "''", "'x'", "X'FFFE'", "'2020-02-30'", "'0000-00-00'", "'$.a'",
	"'%Y-%m-%d'", "'a.*b'", "'%a%'", "'192.168.0.1'", "1.5", "'i'"}

// operatorTemplates are the allow-list's operators, with %s for arguments.
var operatorTemplates = []string{
	"%s = %s", "%s <=> %s", "%s < %s", "%s >= %s", "%s <> %s", "%s BETWEEN %s AND %s", "%s NOT BETWEEN %s AND %s",
	"%s IN (%s, %s)", "%s NOT IN (%s)", "(%s, %s) = (%s, %s)", "%s LIKE %s", "%s NOT LIKE %s", "%s LIKE %s ESCAPE '!'",
	"%s REGEXP 'a.*b'", "%s RLIKE '^[0-9]+$'", "%s + %s", "%s - %s", "%s * %s", "%s / %s", "%s DIV %s", "%s %% %s", "%s MOD %s",
	"-%s", "%s & %s", "%s | %s", "%s ^ %s", "%s << %s", "%s >> %s", "NOT %s", "%s AND %s", "%s OR %s", "%s XOR %s",
	"%s IS NULL", "%s IS NOT NULL", "%s IS TRUE", "%s IS NOT FALSE", "CASE %s WHEN %s THEN %s ELSE %s END",
	"CASE WHEN %s THEN %s END", "CAST(%s AS SIGNED)", "CAST(%s AS UNSIGNED)", "CAST(%s AS DECIMAL(10,2))",
	"CAST(%s AS DOUBLE)", "CAST(%s AS DATE)", "CAST(%s AS DATETIME)", "CAST(%s AS TIME)", "CAST(%s AS CHAR)",
	"CAST(%s AS BINARY)", "CONVERT(%s, CHAR)", "CONVERT(%s USING latin1)", "%s COLLATE utf8mb4_bin", "BINARY %s",
	"%s + INTERVAL %s DAY", "%s - INTERVAL 1 MONTH", "DATE_ADD(%s, INTERVAL %s HOUR)", "EXTRACT(YEAR FROM %s)",
	"TIMESTAMPDIFF(DAY, %s, %s)", "DATE_SUB(%s, INTERVAL %s MINUTE)", "TRIM(BOTH 'x' FROM %s)", "TRIM(%s)", "%s -> '$.a'", "%s ->> '$.a'",
}

// generatedCalls returns SQL expressions: every built-in function at every
// arity it accepts, and every operator template, with random arguments.
func generatedCalls(rng *rand.Rand, perForm int) []string {
	arg := func() string { return argCandidates[rng.IntN(len(argCandidates))] }
	var out []string
	for _, f := range function.BuiltIns {
		name := f.FunctionName()
		for arity := 0; arity <= 4; arity++ {
			for k := range perForm {
				args := make([]string, arity)
				for i := range args {
					args[i] = arg()
				}
				if k%2 == 0 && arity > 0 {
					// A column first, constants after: the common shape.
					args[0] = []string{"s", "n", "f", "d"}[rng.IntN(4)]
					for i := 1; i < arity; i++ {
						if args[i] == "s" || args[i] == "n" || args[i] == "f" || args[i] == "d" || args[i] == "uid" {
							args[i] = "'%Y'"
						}
					}
				}
				out = append(out, fmt.Sprintf("%s(%s)", strings.ToUpper(name), strings.Join(args, ", ")))
				if arity == 0 {
					break
				}
			}
		}
	}
	for _, tmpl := range operatorTemplates {
		n := strings.Count(tmpl, "%s")
		for range perForm * 2 {
			args := make([]any, n)
			for i := range args {
				args[i] = arg()
			}
			out = append(out, fmt.Sprintf(tmpl, args...))
		}
	}
	return out
}

// TestAllowListAdversarial evaluates generated calls of every function and
// operator, with adversarial arguments and over adversarial rows, inside
// releases (as a key and as a row filter), and requires: no panic, nothing
// left in the analyst's session (warnings, LAST_INSERT_ID, variables), and
// an error only when the same statement gives the same error over an
// empty table (an error that does not depend on the data). Every function
// of the allow-list must succeed at least once.
func TestAllowListAdversarial(t *testing.T) {
	e := adversarialEngine(t, true)
	defer e.Close()
	empty := adversarialEngine(t, false)
	defer empty.Close()
	rng := rand.New(rand.NewPCG(11, 12))
	perForm := 6
	if testing.Short() {
		perForm = 2
	}
	succeeded := map[string]bool{}
	calls := generatedCalls(rng, perForm)
	word := regexp.MustCompile(`^[A-Z_0-9]+`)
	for i, call := range calls {
		var q string
		if i%2 == 0 {
			q = "SELECT DISTINCT " + call + " FROM t"
		} else {
			q = "SELECT DISTINCT uid FROM t WHERE " + call
		}
		errT, left := outcome(t, e, q)
		if len(left) > 0 {
			t.Errorf("%s left in the session: %v", q, left)
		}
		if errT != "" {
			errE, _ := outcome(t, empty, q)
			if errE != errT {
				t.Errorf("%s: error %q over the data, %q over an empty table", q, errT, errE)
			}
			continue
		}
		if m := word.FindString(call); m != "" {
			succeeded[m] = true
		}
	}
	for _, en := range sealed.Allowed() {
		for _, n := range en.Names {
			if !regexp.MustCompile(`^[A-Z_0-9]+$`).MatchString(n) || slices.Contains([]string{"AND", "OR", "XOR", "NOT", "LIKE", "BETWEEN", "CASE", "CAST", "CONVERT", "COLLATE", "BINARY", "REGEXP", "RLIKE", "INTERVAL", "MOD", "DIV", "EXTRACT", "TIMESTAMPDIFF", "TRIM"}, n) {
				continue
			}
			if !succeeded[n] {
				t.Errorf("allowed function %s never succeeded in %d generated calls", n, len(calls))
			}
		}
	}
	t.Logf("%d generated calls, %d functions succeeded at least once", len(calls), len(succeeded))
}

// fuzzExpr builds a SQL expression from fuzz input: a tree of the
// allow-list's functions and operators (and any other built-in, which the
// allow-list must refuse cleanly) over the columns and adversarial
// constants, at most depth deep.
func fuzzExpr(data []byte, pos *int, depth int) string {
	next := func(n int) int {
		if *pos >= len(data) || n <= 0 {
			return 0
		}
		b := int(data[*pos])
		*pos++
		return b % n
	}
	if depth == 0 || next(4) == 0 {
		return argCandidates[next(len(argCandidates))]
	}
	if next(2) == 0 {
		tmpl := operatorTemplates[next(len(operatorTemplates))]
		n := strings.Count(tmpl, "%s")
		args := make([]any, n)
		for i := range args {
			args[i] = fuzzExpr(data, pos, depth-1)
		}
		return "(" + fmt.Sprintf(tmpl, args...) + ")"
	}
	f := function.BuiltIns[next(len(function.BuiltIns))]
	args := make([]string, next(4))
	for i := range args {
		args[i] = fuzzExpr(data, pos, depth-1)
	}
	return strings.ToUpper(f.FunctionName()) + "(" + strings.Join(args, ", ") + ")"
}

// FuzzSealedRelease evaluates random expressions inside releases (as a key
// and as a filter) over the adversarial table, with the properties of
// TestAllowListAdversarial: no panic, nothing left in the session, errors
// only when an empty table gives the same. To fuzz:
//
//	go test -run XXX -fuzz FuzzSealedRelease -fuzztime 10m -parallel 1 ./release
func FuzzSealedRelease(f *testing.F) {
	for _, seed := range []string{"\x01\x01\x05\x02\x03", "\x01\x00\x10\x01\x01\x02", "\x03\x01\x20\x02\x00\x07\x00\x09", "\x05\x00\x33\x01\x04\x00\x11\x00\x02"} {
		f.Add([]byte(seed), false)
	}
	e := adversarialEngine(f, true)
	empty := adversarialEngine(f, false)
	f.Fuzz(func(t *testing.T, data []byte, asFilter bool) {
		pos := 0
		expr := fuzzExpr(data, &pos, 3)
		q := "SELECT DISTINCT " + expr + " FROM t"
		if asFilter {
			q = "SELECT DISTINCT uid FROM t WHERE " + expr
		}
		errT, left := outcome(t, e, q)
		if len(left) > 0 {
			t.Fatalf("%s left in the session: %v", q, left)
		}
		if errT != "" {
			if errE, _ := outcome(t, empty, q); errE != errT {
				t.Fatalf("%s: error %q over the data, %q over an empty table", q, errT, errE)
			}
		}
	})
}
