package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/gmsfix"
)

// TestBoundedStringFunctions: string functions whose result would exceed
// the engine's limit on strings (Config.MaxStringBytes, 4 MiB by default)
// return NULL with warning 1301, as MySQL does beyond max_allowed_packet,
// instead of
// allocating it (go-mysql-server v0.20.0 alone dies of a fatal
// out-of-memory error on the first statement below); within the bound they
// behave as go-mysql-server's.
func TestBoundedStringFunctions(t *testing.T) {
	e, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		q    string
		want any // nil: NULL with warning 1301
	}{
		{"SELECT REPEAT(REPEAT('xxxxxxxxxx', 1000000), 2000000)", nil},
		{"SELECT REPEAT('x', 2147483647)", nil},
		{"SELECT LENGTH(REPEAT('ab', 1000000))", int32(2000000)},
		{"SELECT LENGTH(REPEAT('x', 4 << 20))", int32(4 << 20)},
		{"SELECT REPEAT('x', (4 << 20) + 1)", nil},
		{"SELECT CONCAT(REPEAT('x', 3 << 20), REPEAT('y', 1 << 20), 'z')", nil},
		{"SELECT LENGTH(CONCAT(REPEAT('x', 3 << 20), REPEAT('y', 1 << 20)))", int32(4 << 20)},
		{"SELECT REGEXP_REPLACE(REPEAT('b', 3 << 20), 'b', 'xy')", nil},
		{"SELECT REGEXP_REPLACE('abc', 'b', 'xy')", "axyc"},
		// Nested functions that double their argument: each level sees at
		// most the limit, the level beyond it is NULL.
		{"SELECT LENGTH(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX(HEX('x')))))))))))))))))))))))))))))))))))))))))", nil},
		{"SELECT LENGTH(TO_BASE64(REPEAT(CONCAT(REPEAT('y', 2000000), REPEAT('z', 2000000)), 1)))", nil},
		{"SELECT REPEAT('ab', 3)", "ababab"},
		{"SELECT repeat('é', 2)", "éé"},
		{"SELECT SPACE(2000000000)", nil},
		{"SELECT CONCAT('[', SPACE(3), ']')", "[   ]"},
		{"SELECT LPAD('x', 2000000000, 'ab')", nil},
		{"SELECT RPAD('x', 4000000000, ' ')", nil},
		{"SELECT LPAD('x', 4, 'ab')", "abax"},
		{"SELECT RPAD('hello', 3, '!')", "hel"},
		{"SELECT REPLACE(REPEAT('x', 1000000), 'x', REPEAT('y', 1000000))", nil},
		{"SELECT REPLACE('a-b-c', '-', '+')", "a+b+c"},
		{"SELECT REPLACE('abc', '', 'zzz')", "abc"},
	}
	for _, c := range cases {
		ctx := engine.NewContext(context.Background(), "root", "")
		_, it, _, err := e.Query(ctx, c.q)
		var rows []sql.Row
		if err == nil {
			rows, err = sql.RowIterToRows(ctx, it)
		}
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if len(rows) != 1 || len(rows[0]) != 1 {
			t.Errorf("%s: rows %v", c.q, rows)
			continue
		}
		got := rows[0][0]
		if c.want == nil {
			warned := false
			for _, w := range ctx.Session.Warnings() {
				warned = warned || w.Code == gmsfix.ERWarnAllowedPacketOverflowed
			}
			if got != nil || !warned {
				t.Errorf("%s: got %.40v (warning 1301: %v), want NULL with warning 1301", c.q, got, warned)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s: got %v (%T), want %v (%T)", c.q, got, got, c.want, c.want)
		}
	}
	// NULL arguments stay NULL, as in go-mysql-server and MySQL.
	for _, q := range []string{"SELECT REPEAT(NULL, 2)", "SELECT SPACE(NULL)", "SELECT LPAD('x', NULL, 'y')", "SELECT REPLACE('x', NULL, 'y')"} {
		ctx := engine.NewContext(context.Background(), "root", "")
		_, it, _, err := e.Query(ctx, q)
		var rows []sql.Row
		if err == nil {
			rows, err = sql.RowIterToRows(ctx, it)
		}
		if err != nil || len(rows) != 1 || rows[0][0] != nil {
			t.Errorf("%s: %v %v", q, rows, err)
		}
	}
}

// TestFunctionPanicIsAnError: a panic inside one of go-mysql-server's
// functions is an error of the statement, not a dropped connection or a
// dead process, and its message carries no argument value.
func TestFunctionPanicIsAnError(t *testing.T) {
	e, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := engine.NewContext(context.Background(), "root", "")
	_, it, _, err := e.Query(ctx, "SELECT LOCATE('a', 'banana', -3224116)")
	if err == nil {
		_, err = sql.RowIterToRows(ctx, it)
	}
	if err != nil && strings.Contains(err.Error(), "3224116") {
		t.Errorf("the error carries the argument: %v", err)
	}
	// Whatever it returned, the engine answers the next statement.
	_, it, _, err = e.Query(ctx, "SELECT 1")
	if err == nil {
		_, err = sql.RowIterToRows(ctx, it)
	}
	if err != nil {
		t.Fatal(err)
	}
}
