package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/internal/testengine"
	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/demo"
	"github.com/dpsql/dpsql/server/storage"
)

// startServer serves the test tables (database mydb) and the demo database
// on a random loopback port and returns its address.
func startServer(t *testing.T) string {
	t.Helper()
	p := testengine.Provider(t)
	db, _, err := demo.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AddDatabase(db); err != nil {
		t.Fatal(err)
	}
	e, err := server.NewEngine(server.Config{Provider: p, Functions: testengine.Seeded()})
	if err != nil {
		t.Fatal(err)
	}
	s := testserver.Serve(t, e, server.ServerConfig{DefaultDatabase: "mydb"})
	return s.Addr()
}

func openDB(t *testing.T, addr, db string) *sql.DB {
	t.Helper()
	return testmysql.Connect(t, testmysql.Login{Addr: addr, User: "anyone", DB: db})
}

// TestServerGoDriver runs DP_SET_UNION through go-sql-driver/mysql on a
// real loopback connection: plain and prepared statements, session
// variables, and bad input that must come back as MySQL errors on a
// connection that stays usable.
func TestServerGoDriver(t *testing.T) {
	addr := startServer(t)
	db := openDB(t, addr, "")
	ctx := context.Background()
	conn, err := db.Conn(ctx) // one session, so SET sticks
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	var j string
	if err := conn.QueryRowContext(ctx, "SELECT DP_SET_UNION(item, user_id) FROM visits").Scan(&j); err != nil {
		t.Fatal(err)
	}
	var items []string
	if err := json.Unmarshal([]byte(j), &items); err != nil {
		t.Fatalf("result %q is not a JSON array: %v", j, err)
	}
	if !slices.Equal(items, []string{"common", "even"}) {
		t.Fatalf("released %v", items)
	}

	// Server-side prepared statement with the options as a parameter.
	if err := conn.QueryRowContext(ctx, "SELECT JSON_LENGTH(DP_SET_UNION(item, user_id, ?)) FROM visits WHERE user_id < ?", "epsilon=2", 400).Scan(&j); err != nil {
		t.Fatal(err)
	}
	if j != "2" {
		t.Fatalf("prepared: %s", j)
	}

	// The demo database.
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT JSON_LENGTH(DP_SET_UNION(word, user_id)) FROM demo.words").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d demo words released", n)
	}

	// Session variables.
	if _, err := conn.ExecContext(ctx, "SET dp_epsilon = 0.25"); err != nil {
		t.Fatal(err)
	}
	var eps float64
	if err := conn.QueryRowContext(ctx, "SELECT @@dp_epsilon").Scan(&eps); err != nil || eps != 0.25 {
		t.Fatalf("@@dp_epsilon = %v, %v", eps, err)
	}

	for _, c := range []struct {
		query string
		code  uint16
		msg   string
	}{
		{"SET dp_epsilon = 0", 1231, "epsilon must be a finite number greater than 0"},
		{"SELECT DP_SET_UNION(DISTINCT item, user_id) FROM visits", 1105, "DP_SET_UNION does not take DISTINCT"},
		{"SELECT DP_SET_UNION(item, user_id) OVER () FROM visits", 1105, "window function"},
		{"SELECT DP_SET_UNION(item, user_id, 'nope=1') FROM visits", 1210, `unknown option "nope"`},
		{"SELECT g, DP_SET_UNION(item, user_id) FROM visits GROUP BY g", 1235, "SELECT DISTINCT g, item"},
		{"SELECT DP_SET_UNION(item) FROM visits", 1582, "takes 2 or 3 arguments"},
		{"SELECT DP_SET_UNION(item, user_id, item) FROM visits", 1210, "must be a constant string"},
	} {
		_, err := conn.ExecContext(ctx, c.query)
		var me *gomysql.MySQLError
		if !errors.As(err, &me) || me.Number != c.code || !strings.Contains(me.Message, c.msg) {
			t.Errorf("%s: got %v, want error %d containing %q", c.query, err, c.code, c.msg)
		}
		// The connection survives.
		if err := conn.PingContext(ctx); err != nil {
			t.Fatalf("after %s: connection lost: %v", c.query, err)
		}
	}
	// LIMIT 0 (what BI tools send to learn columns) returns no rows.
	rows, err := conn.QueryContext(ctx, "SELECT DP_SET_UNION(item, user_id) AS j FROM visits LIMIT 0")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	if rows.Next() || len(cols) != 1 || cols[0] != "j" {
		t.Fatalf("LIMIT 0: columns %v", cols)
	}
	rows.Close()
	var comment string
	if err := conn.QueryRowContext(ctx, "SELECT @@version_comment").Scan(&comment); err != nil || comment != "dpsql" {
		t.Fatalf("@@version_comment = %q, %v", comment, err)
	}
}

// TestServerMariaDBClient runs the mysql command-line client (Debian's
// mariadb-client) against the server and reads the JSON array back.
func TestServerMariaDBClient(t *testing.T) {
	mysqlBin := testenv.Tool(t, "mysql", "apt-get install mariadb-client")
	addr := startServer(t)
	host, port, _ := net.SplitHostPort(addr)
	run := func(query string) (string, error) {
		cmd := exec.Command(mysqlBin, "-h", host, "-P", port, "-u", "analyst", "--protocol=TCP",
			"--batch", "--skip-column-names", "--skip-ssl", "-e", query, "mydb")
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, err := run("SELECT DP_SET_UNION(item, user_id, 'epsilon=1, delta=1e-6, max_items=50') FROM visits")
	if err != nil {
		t.Fatalf("mysql: %v\n%s", err, out)
	}
	var items []string
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatalf("output %q is not a JSON array: %v", out, err)
	}
	if !slices.Equal(items, []string{"common", "even"}) {
		t.Fatalf("released %v", items)
	}
	out, err = run("SELECT jt.w FROM (SELECT DP_SET_UNION(word, user_id) AS j FROM demo.words) s, JSON_TABLE(s.j, '$[*]' COLUMNS (w VARCHAR(64) PATH '$')) jt ORDER BY jt.w LIMIT 3")
	if err != nil || len(strings.Split(out, "\n")) != 3 {
		t.Fatalf("unnesting: %v\n%s", err, out)
	}
	// Bad input: an error message, exit status 1, no lost connection.
	out, err = run("SELECT DP_SET_UNION(DISTINCT item, user_id) FROM visits")
	if err == nil || !strings.Contains(out, "ERROR 1105") || !strings.Contains(out, "does not take DISTINCT") || strings.Contains(out, "Lost connection") {
		t.Fatalf("DISTINCT: %v\n%s", err, out)
	}
	out, err = run("SET dp_epsilon = 0")
	if err == nil || !strings.Contains(out, "ERROR 1231") {
		t.Fatalf("SET dp_epsilon = 0: %v\n%s", err, out)
	}
}

// TestStorageMetadata checks what information_schema and SHOW TABLE STATUS
// say about tables, and that a table with hidden counts reports none.
func TestStorageMetadata(t *testing.T) {
	p := testengine.Provider(t)
	mydb, _ := p.Lookup("mydb")
	visits, _ := mydb.Table("visits")
	mydb.ReplaceTable(visits.WithRowCounts(storage.HiddenCounts))
	e, err := server.NewEngine(server.Config{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := testserver.Serve(t, e, server.ServerConfig{DefaultDatabase: "mydb"})
	db := openDB(t, s.Addr(), "mydb")
	var rows int64
	if err := db.QueryRow("SELECT table_rows FROM information_schema.tables WHERE table_schema = 'mydb' AND table_name = 'visits'").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("information_schema shows %d rows of a table with hidden counts", rows)
	}
	var count int64
	if err := db.QueryRow("SELECT COUNT(*) FROM visits").Scan(&count); err != nil || count != 2210 {
		t.Fatalf("COUNT(*) = %d, %v (a scan, not the hidden statistic)", count, err)
	}
	if _, err := db.Exec("INSERT INTO visits (user_id) VALUES (1)"); err == nil {
		t.Fatal("INSERT into a read-only table succeeded")
	}
	var tables []string
	r, err := db.Query("SHOW TABLES")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var name string
		r.Scan(&name)
		tables = append(tables, name)
	}
	if !slices.Equal(tables, []string{"no_rows", "visits"}) {
		t.Fatalf("SHOW TABLES: %v", tables)
	}
}
