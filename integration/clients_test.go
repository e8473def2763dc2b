package integration

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testenv"
)

// The statements every client runs against the plain go-mysql-server, and
// what each must report. They cover a SELECT with NULL, non-ASCII text, a
// tab and a newline in values; a prepared statement with a parameter; a
// session variable carried across statements; an unknown table (1146) and a
// write the SELECT-only account may not make (1142).
var commonStatements = []clients.Statement{
	clients.Query("SELECT id, name, price, note FROM items ORDER BY id"),
	clients.Prepare("SELECT name FROM items WHERE id = ?", 2),
	clients.Query("SET @dpsql_probe = 41"),
	clients.Query("SELECT @dpsql_probe + 1 AS answer"),
	clients.Query("SELECT * FROM no_such_table"),
	clients.Query("INSERT INTO items (id, name, added) VALUES (9, 'x', NOW())"),
}

var wantItems = [][]string{
	{"1", "apple", "1.50", "NULL"},
	{"2", "crème brûlée", "7.25", "tab\there"},
	{"3", "kiwi", "NULL", "line1\nline2"},
}

// plainDeniedCode is what go-mysql-server v0.20.0 returns for a write the
// account has no privilege for: 1105 (HY000) "command denied to user", where
// MySQL returns 1142 (42000).
const plainDeniedCode = 1105

// checkCommon checks the results of commonStatements; prepared says whether
// the client ran the prepared statement.
func checkCommon(t *testing.T, res []clients.Result, prepared bool) {
	t.Helper()
	checkCommonRows(t, res, prepared, wantItems)
}

// checkCommonRows is checkCommon for a client that renders the items table
// its own way.
func checkCommonRows(t *testing.T, res []clients.Result, prepared bool, wantItems [][]string) {
	t.Helper()
	if len(res) != len(commonStatements) {
		t.Fatalf("%d results for %d statements", len(res), len(commonStatements))
	}
	for i, r := range res {
		t.Logf("%v → columns %v types %v rows %q error %v", commonStatements[i], r.Columns, r.Types, r.Cells(), r.Error)
	}
	if r := res[0]; r.Error != nil || !reflect.DeepEqual(r.Columns, []string{"id", "name", "price", "note"}) ||
		!reflect.DeepEqual(r.Cells(), wantItems) {
		t.Errorf("SELECT: got columns %v rows %q error %v; want rows %q", r.Columns, r.Cells(), r.Error, wantItems)
	}
	if prepared {
		if r := res[1]; r.Error != nil || !reflect.DeepEqual(r.Cells(), [][]string{{"crème brûlée"}}) {
			t.Errorf("prepared SELECT: got rows %q error %v", r.Cells(), r.Error)
		}
	}
	if r := res[2]; r.Error != nil || len(r.Rows) != 0 {
		t.Errorf("SET: got rows %q error %v", r.Cells(), r.Error)
	}
	if r := res[3]; r.Error != nil || !reflect.DeepEqual(r.Cells(), [][]string{{"42"}}) {
		t.Errorf("session variable: got rows %q error %v, want 42", r.Cells(), r.Error)
	}
	wantClientError(t, "unknown table", res[4], 1146)
	wantClientError(t, "INSERT as a SELECT-only account", res[5], plainDeniedCode)
}

func wantClientError(t *testing.T, what string, r clients.Result, code int) {
	t.Helper()
	if r.Error == nil || r.Error.Code != code {
		t.Errorf("%s: got rows %q error %v, want MySQL error %d", what, r.Cells(), r.Error, code)
	}
}

// runClient runs the statements through the client and logs its runtime.
func runClient(t *testing.T, c clients.Runner, target clients.Target, stmts []clients.Statement) []clients.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := c.Run(ctx, target, stmts)
	t.Logf("%s: %d statements in %v", c.Name(), len(stmts), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s: %v", c.Name(), err)
	}
	return res
}

// wantLoginRefused checks that a wrong password is refused with 1045.
func wantLoginRefused(t *testing.T, c clients.Runner, target clients.Target) {
	t.Helper()
	target.Password = "wrong-password"
	_, err := c.Run(context.Background(), target, []clients.Statement{clients.Query("SELECT 1")})
	var e *clients.Error
	if !errors.As(err, &e) || e.Code != 1045 {
		t.Errorf("wrong password: got %v, want MySQL error 1045", err)
	}
}

// wantTLSOnly checks that the client logs in over TLS to a server that
// requires it (so a client that silently skipped TLS would be refused).
func wantTLSOnly(t *testing.T, c clients.Runner) {
	t.Helper()
	target := startPlainGMS(t, plainOptions{TLS: true, RequireTLS: true})
	res := runClient(t, c, target, []clients.Statement{clients.Query("SELECT name FROM items WHERE id = 1")})
	if r := res[0]; r.Error != nil || !reflect.DeepEqual(r.Cells(), [][]string{{"apple"}}) {
		t.Errorf("over TLS: got rows %q error %v", r.Cells(), r.Error)
	}
	target.TLS = false
	if _, err := c.Run(context.Background(), target, []clients.Statement{clients.Query("SELECT 1")}); err == nil {
		t.Errorf("without TLS the server that requires it accepted the client")
	} else {
		t.Logf("without TLS: %v", err)
	}
}

func TestGoDriverPlainGMS(t *testing.T) {
	target := startPlainGMS(t, plainOptions{})
	checkCommon(t, runClient(t, clients.GoDriver{}, target, commonStatements), true)
	wantLoginRefused(t, clients.GoDriver{}, target)
}

func TestGoDriverTLSPlainGMS(t *testing.T) { wantTLSOnly(t, clients.GoDriver{}) }

func TestMariaDBCLIBatchStdinPlainGMS(t *testing.T) {
	c := clients.MariaDBCLI{Path: mysqlCLI(t), Stdin: true}
	target := startPlainGMS(t, plainOptions{})
	checkCommon(t, runClient(t, c, target, commonStatements), false)
	wantLoginRefused(t, c, target)
}

func TestMariaDBCLIBatchExecutePlainGMS(t *testing.T) {
	c := clients.MariaDBCLI{Path: mysqlCLI(t)}
	target := startPlainGMS(t, plainOptions{})
	// -e stops at the first error: the two failing statements come last,
	// so the first of them runs and the second is reported as not run.
	res := runClient(t, c, target, commonStatements)
	if e := res[5].Error; e == nil || e.Code != 0 || !strings.Contains(e.Message, "not run") {
		t.Errorf("statement after the first error in -e mode: got %v, want not run", e)
	}
	res[5].Error = &clients.Error{Code: plainDeniedCode}
	checkCommon(t, res, false)
	wantLoginRefused(t, c, target)
}

func TestMariaDBCLITLSPlainGMS(t *testing.T) {
	wantTLSOnly(t, clients.MariaDBCLI{Path: mysqlCLI(t), Stdin: true})
}

func mysqlCLI(t *testing.T) string {
	return testenv.Tool(t, "mysql", "apt-get install mariadb-client")
}
