package server_test

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testdb"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
)

// ordersRows are INSERT values for users from..to: every user orders item
// k%5 and item (k+1)%5.
func ordersRows(from, to int) string {
	var v []string
	for u := from; u <= to; u++ {
		v = append(v, fmt.Sprintf("(%d, 'item%d', %d.5)", u, u%5, u%7), fmt.Sprintf("(%d, 'item%d', 1)", u, (u+1)%5))
	}
	return strings.Join(v, ", ")
}

// sourceDeployment serves, from one MariaDB and one PostgreSQL server:
// shop.orders (mysql, generation: source), shop.orders_c (the same table,
// generation: content), shop.pg_orders (postgres, generation: content,
// refresh: 1s), shop.broken (a mysql table that does not exist) and
// shop.visits (a file).
type sourceDeployment struct {
	my, pg *testdb.Server
	dir    string
	cfg    string
	log    *testserver.Log
}

func newSourceDeployment(t *testing.T) *sourceDeployment {
	t.Helper()
	d := &sourceDeployment{my: testdb.MariaDB(t), pg: testdb.PostgreSQL(t), dir: t.TempDir(), log: &testserver.Log{}}
	create := "CREATE TABLE orders (user_id BIGINT NOT NULL, item VARCHAR(32) NOT NULL, amount DECIMAL(10,2))"
	d.my.Exec(t, create, "INSERT INTO orders VALUES "+ordersRows(1, 400))
	d.pg.Exec(t, create, "INSERT INTO orders VALUES "+ordersRows(1, 400))
	t.Setenv("DPSQL_TEST_MYSQL_DSN", d.my.DSN)
	os.Unsetenv("DPSQL_TEST_UNSET_DSN")
	testmysql.WriteFile(t, filepath.Join(d.dir, "pg.dsn"), d.pg.DSN+"\n")
	testmysql.WriteFile(t, filepath.Join(d.dir, "visits.tsv"), "1\t/a\n2\t/b\n")
	hash := func(pw string) string { return testserver.HashPassword(t, config.NativePassword, pw) }
	d.cfg = filepath.Join(d.dir, "dpsql.yaml")
	testmysql.WriteFile(t, d.cfg, fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
accounting: {method: basic}
defaults: {epsilon: 1, delta: 1e-7, max_items: 10}
datasets:
  - database: shop
    table: orders
    source: {driver: mysql, dsn_env: DPSQL_TEST_MYSQL_DSN, table: orders}
    privacy_unit: user_id
  - database: shop
    table: orders_c
    source: {driver: mysql, dsn_env: DPSQL_TEST_MYSQL_DSN, table: orders}
    privacy_unit: user_id
    generation: content
  - database: shop
    table: orders_k
    source: {driver: mysql, dsn_env: DPSQL_TEST_MYSQL_DSN, table: orders}
    privacy_unit: user_id
    generation: config
  - database: shop
    table: visits_c
    file: visits.tsv
    columns: [{name: user_id, type: BIGINT}, {name: url, type: TEXT}]
    privacy_unit: user_id
    generation: content
  - database: shop
    table: pg_orders
    source: {driver: postgres, dsn_file: pg.dsn, query: "SELECT user_id, item, amount FROM orders"}
    privacy_unit: user_id
    generation: content
    refresh: 1s
  - database: shop
    table: broken
    source: {driver: mysql, dsn_env: DPSQL_TEST_MYSQL_DSN, table: nosuch}
    privacy_unit: user_id
  - database: shop
    table: broken_env
    source: {driver: mysql, dsn_env: DPSQL_TEST_UNSET_DSN, table: orders}
    public: true
  - database: shop
    table: broken_type
    source: {driver: mysql, dsn_env: DPSQL_TEST_MYSQL_DSN, query: "SELECT user_id, POINT(1, 2) AS p FROM orders"}
    privacy_unit: user_id
  - database: shop
    table: visits
    file: visits.tsv
    columns: [{name: user_id, type: BIGINT}, {name: url, type: TEXT}]
    privacy_unit: user_id
accounts:
  admins:
    - {user: admin, password_hash: '%s'}
  analysts:
    - user: alice
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 100, delta: 1e-5}
`, hash(adminPass), hash(alicePass)))
	return d
}

func (d *sourceDeployment) start(t *testing.T) (*server.Governed, *dbsql.DB, *dbsql.DB) {
	t.Helper()
	s := testserver.Governed(t, server.GovernedOptions{Config: testserver.Load(t, d.cfg), Log: d.log, LedgerLockTimeout: 5 * time.Second})
	var dep deployment
	admin := dep.connect(t, s.Addr(), "admin", adminPass, false)
	alice := dep.connect(t, s.Addr(), "alice", alicePass, false)
	alice.SetMaxOpenConns(1) // session variables hold
	return s, admin, alice
}

// spent returns alice's spent ε on shop.
func spent(t *testing.T, db queryer) float64 {
	t.Helper()
	for _, b := range budget(t, db) {
		if b.Database == "shop" {
			return b.SpentEps
		}
	}
	t.Fatal("no budget on shop")
	return 0
}

// datasetRow is DP_DATASETS()'s row of one table: generation, rows, last error.
func datasetRow(t *testing.T, admin *dbsql.DB, table string) (gen dbsql.NullString, rows dbsql.NullInt64, lastErr dbsql.NullString) {
	t.Helper()
	err := admin.QueryRow("SELECT generation, row_count, last_error FROM DP_DATASETS() WHERE table_name = ?", table).Scan(&gen, &rows, &lastErr)
	if err != nil {
		t.Fatalf("DP_DATASETS() of %s: %v", table, err)
	}
	return gen, rows, lastErr
}

func count(t *testing.T, admin *dbsql.DB, table string) int {
	t.Helper()
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatalf("COUNT(*) of %s: %v", table, err)
	}
	return n
}

func reload(admin *dbsql.DB, table string) error {
	rows, err := admin.Query("SELECT * FROM DP_RELOAD(?)", "shop."+table)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// TestDatabaseSources: datasets read from MariaDB and PostgreSQL; a
// broken one does not stop the others; reloads after INSERT, UPDATE and
// DELETE; an identical reload keeps releases reusable under generation:
// content and not under the default; a periodic refresh; a source that
// goes down keeps the old snapshot served with the ledger intact; analysts
// can neither reload nor see the sources.
func TestDatabaseSources(t *testing.T) {
	d := newSourceDeployment(t)
	s, admin, alice := d.start(t)
	ctx := context.Background()

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", d.log.String())
		}
	})
	// The broken dataset: logged, shown, absent; the others serve.
	if log := d.log.String(); !strings.Contains(log, "ERROR dataset shop.broken was NOT loaded") || !strings.Contains(log, "no such table") {
		t.Errorf("log of a missing source table:\n%s", log)
	}
	for table, want := range map[string]string{
		"broken_env":  "environment variable DPSQL_TEST_UNSET_DSN is unset or empty",
		"broken_type": "column p has type",
	} {
		if _, _, e := datasetRow(t, admin, table); !strings.Contains(e.String, want) {
			t.Errorf("DP_DATASETS last_error of %s: %q, want %q", table, e.String, want)
		}
	}
	if strings.Contains(d.log.String(), testdb.Password) {
		t.Errorf("the log shows a DSN's password")
	}
	if _, _, e := datasetRow(t, admin, "broken"); !strings.Contains(e.String, "no such table") {
		t.Errorf("DP_DATASETS last_error of broken: %q", e.String)
	}
	if n := count(t, admin, "orders"); n != 800 {
		t.Errorf("orders: %d rows, want 800", n)
	}
	if n := count(t, admin, "pg_orders"); n != 800 {
		t.Errorf("pg_orders: %d rows, want 800", n)
	}
	if _, err := releaseURLs(alice); err != nil {
		t.Errorf("the file dataset beside a broken source: %v", err)
	}

	// Analysts may not reload nor see the sources.
	testmysql.WantErrNo(t, "analyst DP_RELOAD", reload(alice, "orders"), 1142)
	_, err := alice.QueryContext(ctx, "SELECT * FROM DP_DATASETS()")
	testmysql.WantErrNo(t, "analyst DP_DATASETS", err, 1142)

	release := func(table string) []string {
		t.Helper()
		rows, err := alice.QueryContext(ctx, "SELECT DISTINCT item FROM "+table)
		if err != nil {
			t.Fatalf("release over %s: %v", table, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("release over %s: %v", table, err)
		}
		return out
	}
	// charged reports whether the release over table was charged.
	charged := func(table string) bool {
		t.Helper()
		before := spent(t, alice)
		if got := release(table); len(got) != 5 {
			t.Errorf("release over %s: %v, want the 5 items", table, got)
		}
		return spent(t, alice) > before
	}
	for _, tbl := range []string{"orders", "orders_c", "orders_k"} {
		if !charged(tbl) {
			t.Errorf("first release over %s not charged", tbl)
		}
		if charged(tbl) {
			t.Errorf("second release over %s charged, want it reused", tbl)
		}
	}

	// An identical reload: generation: content keeps the generation and
	// the reuse; the default starts a new generation.
	genC, _, _ := datasetRow(t, admin, "orders_c")
	genS, _, _ := datasetRow(t, admin, "orders")
	for _, tbl := range []string{"orders", "orders_c"} {
		if err := reload(admin, tbl); err != nil {
			t.Fatalf("DP_RELOAD(%s): %v", tbl, err)
		}
	}
	if g, _, _ := datasetRow(t, admin, "orders_c"); g != genC {
		t.Errorf("identical reload under generation: content: %v, was %v", g, genC)
	}
	if g, _, _ := datasetRow(t, admin, "orders"); g == genS {
		t.Errorf("reload under generation: source kept %v", g)
	}
	if charged("orders_c") {
		t.Errorf("release after an identical reload (generation: content) charged")
	}
	if !charged("orders") {
		t.Errorf("release after a reload (generation: source) reused")
	}

	// INSERT, UPDATE, DELETE, then reload: the new snapshot is served and
	// is a new generation.
	d.my.Exec(t, "INSERT INTO orders VALUES "+ordersRows(401, 410),
		"UPDATE orders SET item = 'item9' WHERE user_id <= 3",
		"DELETE FROM orders WHERE user_id BETWEEN 11 AND 15")
	if err := reload(admin, "orders_c"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, admin, "orders_c"); n != 800+20-10 {
		t.Errorf("orders_c after INSERT, DELETE and reload: %d rows, want 810", n)
	}
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM orders_c WHERE item = 'item9'").Scan(&n); err != nil || n != 6 {
		t.Errorf("orders_c after UPDATE: %d rows of item9 (%v), want 6", n, err)
	}
	if g, _, _ := datasetRow(t, admin, "orders_c"); g == genC {
		t.Errorf("reload of changed content kept generation %v", g)
	}
	if n := count(t, admin, "orders"); n != 800 {
		t.Errorf("orders, not reloaded, has %d rows, want the old snapshot's 800", n)
	}
	// generation: config keeps the generation and the reuse across a
	// reload that changed the rows: the answer is the older snapshot's.
	genK, _, _ := datasetRow(t, admin, "orders_k")
	if err := reload(admin, "orders_k"); err != nil {
		t.Fatal(err)
	}
	if g, _, _ := datasetRow(t, admin, "orders_k"); g != genK || count(t, admin, "orders_k") != 810 {
		t.Errorf("orders_k after a reload of changed rows: generation %v (was %v), %d rows", g, genK, count(t, admin, "orders_k"))
	}
	if charged("orders_k") {
		t.Errorf("release after a reload under generation: config charged")
	}

	// Files: rewriting the same bytes keeps a content generation, not the
	// default one (the file's identity changed).
	genF, _, _ := datasetRow(t, admin, "visits")
	genFC, _, _ := datasetRow(t, admin, "visits_c")
	// A later modification time: file times come from the kernel's coarse
	// clock, which advances by a tick (up to 10 ms); wait several.
	time.Sleep(50 * time.Millisecond)
	testmysql.WriteFile(t, filepath.Join(d.dir, "visits.tsv"), "1\t/a\n2\t/b\n")
	for _, tbl := range []string{"visits", "visits_c"} {
		if err := reload(admin, tbl); err != nil {
			t.Fatal(err)
		}
	}
	if g, _, _ := datasetRow(t, admin, "visits_c"); g != genFC {
		t.Errorf("identical file under generation: content: %v, was %v", g, genFC)
	}
	if g, _, _ := datasetRow(t, admin, "visits"); g == genF {
		t.Errorf("rewritten file under generation: source kept %v", g)
	}

	// A restart on identical content keeps orders_c's generation and its
	// stored release; orders (generation: source) starts a new one.
	genC, _, _ = datasetRow(t, admin, "orders_c")
	genS, _, _ = datasetRow(t, admin, "orders")
	charged("orders_c") // the first release under the current generation, stored
	if _, err := s.Shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	s, admin, alice = d.start(t)
	if g, _, _ := datasetRow(t, admin, "orders_c"); g != genC {
		t.Errorf("restart on identical content (generation: content): %v, was %v", g, genC)
	}
	if g, _, _ := datasetRow(t, admin, "orders"); g == genS {
		t.Errorf("restart under generation: source kept %v", g)
	}
	if charged("orders_c") {
		t.Errorf("release after a restart on identical content charged")
	}

	// The periodic refresh of pg_orders picks a change up.
	d.pg.Exec(t, "DELETE FROM orders WHERE user_id = 1")
	deadline := time.Now().Add(2 * time.Minute) // ends when refreshed: generous for a loaded machine
	for count(t, admin, "pg_orders") != 798 {
		if time.Now().After(deadline) {
			t.Fatalf("pg_orders not refreshed within 2 minutes:\n%s", d.log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The source goes down: the reload fails, the old snapshot stays
	// served and charged releases still work; the ledger verifies.
	before := spent(t, alice)
	d.my.Kill()
	err = reload(admin, "orders_c")
	if err == nil || !strings.Contains(err.Error(), "previous snapshot is still served") || strings.Contains(err.Error(), testdb.Password) {
		t.Errorf("reload from a source that is down: %v", err)
	}
	if n := count(t, admin, "orders_c"); n != 810 {
		t.Errorf("orders_c after a failed reload: %d rows, want the old snapshot's 810", n)
	}
	// Under generation: source the failed attempt is a new generation all
	// the same: reuse does not tell whether a load failed.
	genS, _, _ = datasetRow(t, admin, "orders")
	if reload(admin, "orders") == nil {
		t.Errorf("reload of orders from a source that is down succeeded")
	}
	if g, _, _ := datasetRow(t, admin, "orders"); g == genS {
		t.Errorf("failed reload under generation: source kept generation %v", g)
	}
	if _, _, e := datasetRow(t, admin, "orders_c"); !e.Valid {
		t.Errorf("DP_DATASETS shows no error after a failed reload")
	}
	if !strings.Contains(d.log.String(), "still serving the snapshot loaded at") {
		t.Errorf("log of a failed reload:\n%s", d.log.String())
	}
	if _, err := alice.ExecContext(ctx, "SET dp_reuse = OFF"); err == nil {
		if !charged("orders_c") {
			t.Errorf("fresh release over the old snapshot not charged")
		}
		alice.ExecContext(ctx, "SET dp_reuse = ON")
	}
	if spent(t, alice) <= before {
		t.Errorf("nothing charged since the source went down")
	}
	if err := s.Ledger().Verify(); err != nil {
		t.Errorf("ledger after a failed reload: %v", err)
	}
	if strings.Contains(d.log.String(), testdb.Password) {
		t.Errorf("the log shows a DSN's password")
	}
}
