package release_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/storage"
)

// plainEngine serves adv.t with the adversarial rows of adversarialEngine,
// unprotected: its queries evaluate the analysed expressions directly.
func plainEngine(t *testing.T) *sqle.Engine {
	t.Helper()
	b, err := storage.NewTableBuilder("t", []storage.Column{
		{Name: "uid", Type: storage.Text}, {Name: "s", Type: storage.Text}, {Name: "n", Type: storage.BigInt},
		{Name: "f", Type: storage.Double}, {Name: "d", Type: storage.Datetime},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 24 {
		row := []string{fmt.Sprintf("u%d", i%5), []string{"x", "%a", "a%b_c\\", "2020-01-01", "\xff\xfe", "ünï", "12:30:00", "{\"a\": 1}"}[i%8],
			fmt.Sprint(i - 7), fmt.Sprint(float64(i) / 3), []string{"2024-02-29 12:00:00", "1970-01-01 00:00:00", "2020-01-01 00:00:00"}[i%3]}
		fields := make([][]byte, len(row))
		for k, v := range row {
			fields[k] = []byte(v)
		}
		if err := b.AppendText(fields); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	db := storage.NewDatabase("adv")
	db.AddTable(tbl)
	pro, err := storage.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Provider: pro})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// keyVariants are expressions that differ in one field a printer may drop
// or a text-based key may confuse: escapes, collations, cast lengths and
// scales, literal types and introducers.
var keyVariants = []string{
	"s LIKE 'x%'", "s LIKE 'x%' ESCAPE 'x'", "s LIKE 'x%' ESCAPE '!'", "s LIKE 'x%' ESCAPE '\\\\'", "s NOT LIKE 'x%' ESCAPE 'x'",
	"s LIKE '%a'", "s LIKE '%a' ESCAPE '%'",
	"s COLLATE utf8mb4_0900_ai_ci = 'X'", "s COLLATE utf8mb4_0900_bin = 'X'", "s COLLATE utf8mb4_general_ci = 'X'",
	"s = 'X' COLLATE utf8mb4_0900_ai_ci", "s = 'X'", "s = _latin1'X'", "s = _binary'X'", "s = X'58'", "s = 0x58",
	"CAST(f AS DECIMAL(10,2))", "CAST(f AS DECIMAL(10,3))", "CAST(f AS DECIMAL(11,2))", "CAST(f AS SIGNED)", "CAST(f AS UNSIGNED)",
	"CAST(f AS CHAR)", "CAST(f AS CHAR(2))", "CAST(f AS CHAR(3))", "CAST(f AS BINARY(2))", "CAST(f AS BINARY(3))",
	"CAST(d AS DATETIME(0))", "CAST(d AS DATETIME(6))", "CAST(d AS DATE)", "CAST(s AS TIME)",
	"n = 1", "n = 1.0", "n = 1.00", "n = '1'", "n = 1e0", "n = TRUE", "n + 1", "n + 1.0", "n + '1'", "n / 3", "n / 3.0", "n DIV 3",
	"f = 0.1", "f = 1e-1", "d = '2020-01-01'", "d = '2020-01-01 00:00:00'", "d = '2020-01-01 00:00:01'", "d < '2020-01-01'",
	"CONVERT(s USING latin1)", "CONVERT(s USING utf8mb4)", "HEX(s)", "HEX(CONVERT(s USING latin1))", "LEFT(s, 1)", "LEFT(s, 2)",
	"TRIM(BOTH 'x' FROM s)", "TRIM(LEADING 'x' FROM s)", "TRIM(TRAILING 'x' FROM s)", "SUBSTRING(s, 1, 2)", "SUBSTRING(s, 2, 1)",
	"s REGEXP 'a'", "REGEXP_LIKE(s, 'a', 'i')", "REGEXP_LIKE(s, 'a', 'c')", "DATE_FORMAT(d, '%Y')", "DATE_FORMAT(d, '%y')",
	"d + INTERVAL 1 DAY", "d + INTERVAL 1 HOUR", "d - INTERVAL 1 DAY", "EXTRACT(YEAR FROM d)", "EXTRACT(MONTH FROM d)",
	"ROUND(f, 1)", "ROUND(f, 2)", "IF(n > 0, 'a', 'b')", "IF(n > 0, 'b', 'a')", "CASE WHEN n > 0 THEN 1 END", "CASE WHEN n > 0 THEN 1 ELSE NULL END",
	"n IN (1, 2)", "n IN (2, 1)", "n IN (1, 2, 3)", "n NOT IN (1, 2)", "s -> '$.a'", "s ->> '$.a'", "JSON_EXTRACT(s, '$.b')",
}

// TestCanonKeysAllowList: over generated calls of every function and
// operator (release/allowlist_test.go's generator, which walks go-mysql-
// server's built-ins and the allow-list's operators) and keyVariants, the
// canonical key of each allowed expression is the same when the statement
// is analysed again, and two expressions that share a key evaluate to the
// same values on every row of an adversarial table (a shared key between
// structurally different expressions is a collision unless the two are
// the same function; the ones this finds are constant folding and the
// documented normalisations).
func TestCanonKeysAllowList(t *testing.T) {
	e := plainEngine(t)
	defer e.Close()
	rng := rand.New(rand.NewPCG(31, 32))
	perForm := 3
	if testing.Short() {
		perForm = 1
	}
	calls := append(generatedCalls(rng, perForm), keyVariants...)
	type seen struct{ sql, rows string }
	byKey := map[string]seen{}
	allowed, unencodable := 0, 0
	for _, call := range calls {
		q := "SELECT " + call + ", uid, s, n, f, d FROM t" // every column: no pruning, so columns are indexes of the full schema, as in a release
		k1, ok := analysedKey(t, e, q)
		if !ok {
			continue
		}
		allowed++
		if k1 == "" {
			unencodable++
			t.Errorf("%s: allowed but not encodable", call)
			continue
		}
		if k2, _ := analysedKey(t, e, q); k2 != k1 {
			t.Errorf("%s: another key when analysed again", call)
		}
		rows, err := rowsOf(e, q)
		if err != nil {
			continue
		}
		if prev, ok := byKey[k1]; ok && prev.sql != call && prev.rows != rows {
			t.Errorf("%q and %q share a key but evaluate differently:\n%s\n%s", prev.sql, call, prev.rows, rows)
		}
		byKey[k1] = seen{call, rows}
	}
	if allowed < len(keyVariants) {
		t.Fatalf("only %d of %d generated expressions allowed", allowed, len(calls))
	}
	t.Logf("%d generated expressions, %d allowed, %d distinct keys, %d not encodable", len(calls), allowed, len(byKey), unencodable)
}

// analysedKey analyses q and returns the canonical key of its (first)
// selected expression; ok is false when q fails or the expression is not
// allowed in a release.
func analysedKey(t *testing.T, e *sqle.Engine, q string) (key string, ok bool) {
	defer func() {
		if recover() != nil {
			key, ok = "", false
		}
	}()
	ctx := engine.NewContext(context.Background(), "root", "adv")
	n, err := e.AnalyzeQuery(ctx, q)
	if err != nil {
		return "", false
	}
	var ex sql.Expression
	transform.Inspect(n, func(n sql.Node) bool {
		// The projection that reads the table (a Project above a GroupBy
		// or another Project reads their outputs, by index).
		if p, ok := n.(*plan.Project); ok && ex == nil && len(p.Projections) > 0 {
			switch p.Child.(type) {
			case *plan.ResolvedTable, *plan.TableAlias:
				ex = p.Projections[0]
			}
		}
		return ex == nil
	})
	if a, ok := ex.(*expression.Alias); ok {
		ex = a.Child
	}
	if ex == nil {
		return "", false
	}
	if _, err := sealed.Compile(ctx, []sql.Expression{ex}, 5, sealed.Limits{}); err != nil {
		return "", false
	}
	k, err := release.CanonKey(ctx, ex)
	if err != nil {
		t.Logf("%s: %v", q, err)
		return "", true
	}
	// Evaluating the expression (which fills its caches) changes no key.
	for _, row := range []sql.Row{{"u1", "x", int64(1), 1.5, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}, {nil, "12:30:00", nil, nil, nil}} {
		func() {
			defer func() { _ = recover() }()
			_ = ex.Type()
			_, _ = ex.Eval(ctx, row)
		}()
	}
	if again, err := release.CanonKey(ctx, ex); err != nil || again != k {
		t.Errorf("%s: the key changed once the expression was evaluated (%v)", q, err)
	}
	return k, true
}

// rowsOf runs q and returns its rows as text.
func rowsOf(e *sqle.Engine, q string) (_ string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	ctx := engine.NewContext(context.Background(), "root", "adv")
	_, it, _, err := e.Query(ctx, q)
	if err != nil {
		return "", err
	}
	rows, err := sql.RowIterToRows(ctx, it)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%v|", r)
	}
	return b.String(), nil
}
