package server_test

import (
	dbsql "database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testdb"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// eventsRows are the rows of the events table of the push-down tests:
// 300 users, items that differ only by case or a trailing space (which
// MariaDB's default collation would merge, and dpsql does not), NULLs,
// and amounts on both sides of the filters' literals.
func eventsRows() string {
	var v []string
	items := []string{"item0", "Item0", "item0 ", "item1", "item2", "item3", "it'em4", "item5"}
	countries := []string{"'fr'", "'FR'", "'de'", "NULL"}
	for u := 1; u <= 300; u++ {
		for k := 0; k < 1+u%4; k++ {
			it := items[(u*(k+1)+k)%len(items)]
			v = append(v, fmt.Sprintf("(%d, '%s', %s, %d.%d)", u, strings.ReplaceAll(it, "'", "''"), countries[(u+k)%len(countries)], (u*k)%9, u%10))
		}
		if u%5 == 0 {
			v = append(v, fmt.Sprintf("(%d, NULL, 'de', NULL)", u))
		}
	}
	return strings.Join(v, ", ")
}

// pushdownDeployment serves events from one database three ways: push-down
// (events), and loaded into memory in the orders of first occurrence a
// push-down release groups by (events_ic: by user, item, country;
// events_c: by user, country, amount), so that seeded releases must be
// identical.
func pushdownDeployment(t *testing.T, db *testdb.Server, extra string) (*server.Governed, *dbsql.DB, *dbsql.DB, *testserver.Log) {
	t.Helper()
	db.Exec(t, "CREATE TABLE events (user_id BIGINT, item VARCHAR(32), country VARCHAR(8), amount DECIMAL(10,2))",
		"INSERT INTO events VALUES "+eventsRows())
	bin := func(c string) string { return "CAST(" + c + " AS BINARY)" }
	if db.Driver == "postgres" {
		bin = func(c string) string { return c + ` COLLATE "C"` }
	}
	dir := t.TempDir()
	t.Setenv("DPSQL_TEST_PUSH_DSN", db.DSN)
	cfgPath := filepath.Join(dir, "dpsql.yaml")
	testmysql.WriteFile(t, cfgPath, fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
accounting: {method: basic}
defaults: {epsilon: 4, delta: 1e-6, max_items: 3}
datasets:
  - database: shop
    table: events
    source: {driver: %[1]s, dsn_env: DPSQL_TEST_PUSH_DSN, table: events}
    privacy_unit: user_id
    mode: pushdown
  - database: shop
    table: events_ic
    source: {driver: %[1]s, dsn_env: DPSQL_TEST_PUSH_DSN, query: 'SELECT * FROM events ORDER BY user_id, %[2]s, %[3]s'}
    privacy_unit: user_id
  - database: shop
    table: events_c
    source: {driver: %[1]s, dsn_env: DPSQL_TEST_PUSH_DSN, query: 'SELECT * FROM events ORDER BY user_id, %[3]s, amount'}
    privacy_unit: user_id
%[4]saccounts:
  admins:
    - {user: admin, password_hash: '%[5]s'}
  analysts:
    - user: alice
      password_hash: '%[6]s'
      budgets:
        - {database: shop, epsilon: 1000, delta: 1e-4}
`, db.Driver, bin("item"), bin("country"), extra, testserver.HashPassword(t, config.NativePassword, adminPass), testserver.HashPassword(t, config.NativePassword, alicePass)))
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &testserver.Log{}
	s, err := server.NewGoverned(server.GovernedOptions{Config: cfg, Listener: ln, Log: log, LedgerLockTimeout: 5 * time.Second,
		Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(7) }}})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Shutdown(time.Second) })
	var dep deployment
	admin := dep.connect(t, s.Addr(), "admin", adminPass, false)
	alice := dep.connect(t, s.Addr(), "alice", alicePass, false)
	alice.SetMaxOpenConns(1)
	return s, admin, alice, log
}

// rowsOf runs q and returns its rows as text, or its error.
func rowsOf(db *dbsql.DB, q string) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]dbsql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		var f []string
		for _, v := range vals {
			if v.Valid {
				f = append(f, fmt.Sprintf("%q", v.String))
			} else {
				f = append(f, "NULL")
			}
		}
		out = append(out, strings.Join(f, "|"))
	}
	return out, rows.Err()
}

// TestPushdownEqualsMemory: seeded push-down releases over MariaDB and
// PostgreSQL equal the in-memory releases of the same rows in the same
// order of first occurrence — DISTINCT with one and two keys, GROUP BY with
// COUNT, SUM and AVG (bounds chosen privately: two passes), DP_SET_UNION,
// with filters — and release something; identical requests are reused;
// unsupported shapes are refused with what is supported, before any
// charge; a literal full of SQL metacharacters is a parameter.
func TestPushdownEqualsMemory(t *testing.T) {
	for _, driver := range []string{"mysql", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			var db *testdb.Server
			if driver == "mysql" {
				db = testdb.MariaDB(t)
			} else {
				db = testdb.PostgreSQL(t)
			}
			_, admin, alice, log := pushdownDeployment(t, db, "")
			same := []struct {
				q, mem string // mem: the in-memory table (events_ic by default)
			}{
				{q: "SELECT DISTINCT item FROM %s"},
				{q: "SELECT DISTINCT item, country FROM %s"},
				{q: "SELECT DISTINCT item FROM %s WHERE country = 'fr' AND amount > 2"},
				{q: "SELECT DISTINCT item FROM %s WHERE country IN ('fr', 'de') OR country IS NULL OR NOT (amount <= 5)"},
				{q: "SELECT DISTINCT item FROM %s WHERE amount BETWEEN 1 AND 5 AND item <> 'item1'"},
				{q: "SELECT item, COUNT(*) FROM %s WHERE item >= 'item' AND item < 'item3' GROUP BY item"},
				{q: "SELECT DP_SET_UNION(item, user_id) FROM %s WHERE country <> 'FR'"},
				{q: "SELECT country, COUNT(*), SUM(amount), AVG(amount), COUNT(amount) FROM %s GROUP BY country", mem: "events_c"},
				{q: "SELECT country, COUNT(*) FROM %s WHERE user_id > 20 GROUP BY country", mem: "events_c"},
				{q: "SELECT country, COUNT(*), DP_INTERVAL_LOW(COUNT(*)), DP_INTERVAL_HIGH(SUM(amount)) FROM %s GROUP BY country", mem: "events_c"},
				{q: "SELECT COUNT(*), SUM(amount) FROM %s WHERE country = 'de'", mem: "events_c"},
				{q: "SELECT DISTINCT item FROM %s WHERE item = 'x'' OR ''1''=''1'"},
				{q: "SELECT DISTINCT item FROM %s WHERE item = 'it''em4' OR item = 'a\\'); DROP TABLE events; --'"},
			}
			for _, c := range same {
				mem := c.mem
				if mem == "" {
					mem = "events_ic"
				}
				want, err := rowsOf(alice, fmt.Sprintf(c.q, mem))
				if err != nil {
					t.Fatalf("%s in memory: %v", c.q, err)
				}
				before := spent(t, alice)
				got, err := rowsOf(alice, fmt.Sprintf(c.q, "events"))
				if err != nil {
					t.Fatalf("%s push-down: %v\nlog:\n%s", c.q, err, log.String())
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s: push-down released\n%s\nin memory\n%s", c.q, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if spent(t, alice) <= before {
					t.Errorf("%s: the push-down release was not charged", c.q)
				}
				if !strings.Contains(c.q, "DROP") && !strings.Contains(c.q, "'1'") && len(got) == 0 {
					t.Errorf("%s released nothing: the comparison shows little", c.q)
				}
				t.Logf("%s: %d rows", c.q, len(got))
			}
			if n := count(t, dbsqlFrom(db), "events"); n == 0 {
				t.Fatal("events lost its rows")
			}

			// Reuse: the same request again charges nothing.
			before := spent(t, alice)
			if _, err := rowsOf(alice, "SELECT DISTINCT item FROM events"); err != nil {
				t.Fatal(err)
			}
			if after := spent(t, alice); after != before {
				t.Errorf("an identical push-down release was charged again: %v → %v", before, after)
			}

			// A reload reads the schema again, without rows, and starts a
			// new generation (generation: source): the request is charged
			// anew.
			if err := reload(admin, "events"); err != nil {
				t.Fatalf("DP_RELOAD of a push-down table: %v", err)
			}
			if !strings.Contains(log.String(), "push-down: its rows stay in the source") {
				t.Errorf("the reload's log does not say push-down:\n%s", log.String())
			}
			before = spent(t, alice)
			if _, err := rowsOf(alice, "SELECT DISTINCT item FROM events"); err != nil {
				t.Fatal(err)
			}
			if after := spent(t, alice); after <= before {
				t.Errorf("after a reload the push-down release was reused: %v → %v", before, after)
			}

			// Refused shapes: 1142 with what is supported, nothing charged.
			before = spent(t, alice)
			for _, q := range []string{
				"SELECT DISTINCT UPPER(item) FROM events",
				"SELECT DISTINCT item FROM events WHERE item LIKE 'a%'",
				"SELECT DISTINCT item FROM events WHERE amount + 1 > 2",
				"SELECT DISTINCT item FROM events WHERE item = country",
				"SELECT DISTINCT item FROM events WHERE amount = 'x'",
				"SELECT DISTINCT item FROM events WHERE country = 5",
				"SELECT country, SUM(amount * 2) FROM events GROUP BY country",
				"SELECT * FROM DP_NGRAMS('shop.events', 'item', 'user_id')",
			} {
				_, err := rowsOf(alice, q)
				var me *gomysql.MySQLError
				if !errors.As(err, &me) || me.Number != 1142 {
					t.Errorf("%s: want error 1142, got %v", q, err)
					continue
				}
				if !strings.Contains(me.Message, "mode: pushdown") || !strings.Contains(me.Message, "supported: ") {
					t.Errorf("%s: the error does not say what is supported: %s", q, me.Message)
				}
			}
			if _, err := rowsOf(alice, "SELECT * FROM events"); err == nil {
				t.Error("an analyst read the push-down table's rows")
			}
			if after := spent(t, alice); after != before {
				t.Errorf("refused releases were charged: %v → %v", before, after)
			}
		})
	}
}

// dbsqlFrom is the source's administrator pool.
func dbsqlFrom(s *testdb.Server) *dbsql.DB { return s.Admin }

// TestPushdownSourceFailure: a source that goes down in the middle of a
// release's read gives the analyst a generic error that quotes nothing of
// the source, charges nothing, and logs the cause for the operator; the
// server keeps serving.
func TestPushdownSourceFailure(t *testing.T) {
	db := testdb.MariaDB(t)
	extra := `  - database: shop
    table: slow
    source: {driver: mysql, dsn_env: DPSQL_TEST_PUSH_DSN, query: "SELECT user_id, item FROM events WHERE SLEEP(0.01) = 0"}
    privacy_unit: user_id
    mode: pushdown
`
	_, _, alice, log := pushdownDeployment(t, db, extra)
	before := spent(t, alice)
	done := make(chan error, 1)
	go func() {
		_, err := rowsOf(alice, "SELECT DISTINCT item FROM slow")
		done <- err
	}()
	time.Sleep(1500 * time.Millisecond) // the read takes ≈ 8 s
	db.Kill()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the release did not end after its source died")
	}
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || !strings.Contains(me.Message, "did not answer; nothing was charged") {
		t.Fatalf("want the generic source error, got %v", err)
	}
	for _, leak := range []string{"invalid connection", "SLEEP", "events", "dpsql@", testdb.Password} {
		if strings.Contains(me.Message, leak) {
			t.Errorf("the analyst's error quotes the source (%q): %s", leak, me.Message)
		}
	}
	if after := spent(t, alice); after != before {
		t.Errorf("a failed push-down release was charged: %v → %v", before, after)
	}
	if !strings.Contains(log.String(), "push-down release on shop.slow failed, nothing charged") {
		t.Errorf("the log does not say why:\n%s", log.String())
	}
	if strings.Contains(log.String(), testdb.Password) {
		t.Error("the log holds the source's password")
	}
	// The server still serves: the in-memory copy answers.
	if _, err := rowsOf(alice, "SELECT DISTINCT item FROM events_ic"); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}
}
