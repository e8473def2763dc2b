package integration

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
)

// Release reuse over the wire: an identical release within the window is
// returned again from the ledger, at no charge, with a Note (1003) and a
// DP_AUDIT record marked reused; a data reload, the end of the window,
// other options or another analyst make a new release; a restart keeps
// the stored releases.

// alicePassword is resources_harness_test.go's.
const (
	bobPassword   = "bob-pw-0"
	carolPassword = "carol-pw-0"
	davePassword  = "dave-pw-0"
)

// reuseDeployment is a governed server over shop.events, restartable on the
// same data directory.
type reuseDeployment struct {
	dir, data, cfg string
	srv            *server.Governed
}

// writeEvents writes the protected table: 300 users, each with 3 of 10
// common items (value u mod 7) and one item of their own.
func writeEvents(t testing.TB, path string) {
	t.Helper()
	var b strings.Builder
	for u := 1; u <= 300; u++ {
		for k := range 3 {
			fmt.Fprintf(&b, "u%03d\titem%d\t%d\tthe common words of item%d\n", u, (u+k)%10, u%7, (u+k)%10)
		}
		fmt.Fprintf(&b, "u%03d\tprivate-%03d\t1\tsecret of u%03d\n", u, u, u)
	}
	testmysql.WriteFile(t, path, b.String())
}

// newReuseDeployment writes the deployment with the given reuse section
// ("" for none: the defaults) and starts it.
func newReuseDeployment(t testing.TB, reuse string) *reuseDeployment {
	t.Helper()
	dir := t.TempDir()
	d := &reuseDeployment{dir: dir, data: filepath.Join(dir, "events.tsv")}
	writeEvents(t, d.data)
	h := func(pw string) string { return testserver.HashPassword(t, config.NativePassword, pw) }
	d.cfg = fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
%s
datasets:
  - database: shop
    table: events
    file: %s
    columns:
      - {name: user_id, type: VARCHAR(16)}
      - {name: item, type: VARCHAR(32)}
      - {name: v, type: BIGINT}
      - {name: body, type: TEXT}
    privacy_unit: user_id
accounts:
  admins:
    - {user: admin, password_hash: '%s'}
  analysts:
    - user: alice
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 50, delta: 1e-4}
    - user: bob
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 50, delta: 1e-4}
    - user: carol
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 1.5, delta: 1e-5}
    - user: dave
      password_hash: '%s'
`, reuse, d.data, h(adminPassword), h(alicePassword), h(bobPassword), h(carolPassword), h(davePassword))
	d.start(t)
	return d
}

func (d *reuseDeployment) start(t testing.TB) {
	t.Helper()
	d.srv = testserver.GovernedYAML(t, d.dir, d.cfg)
}

// restart stops the server and starts it again on the same data directory.
func (d *reuseDeployment) restart(t testing.TB) {
	t.Helper()
	if _, err := d.srv.Shutdown(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	d.start(t)
}

func (d *reuseDeployment) target(t testing.TB, user, password string) clients.Target {
	host, port := splitAddr(t, d.srv.Addr())
	return clients.Target{Host: host, Port: port, User: user, Password: password, Database: "shop"}
}

// conn opens one connection (server-side prepared statements, so that
// SHOW WARNINGS follows the statement on the same session).
func (d *reuseDeployment) conn(t testing.TB, user, password string) *dbsql.Conn {
	t.Helper()
	return testmysql.Session(t, testmysql.Login{Addr: d.srv.Addr(), User: user, Password: password, DB: "shop", Timeout: 10 * time.Second, ReadTimeout: 60 * time.Second})
}

// release is what one statement returned and what it cost.
type release struct {
	rows     [][]string
	err      error
	warnings [][]string
	releases string // DP_BUDGET().releases after it
	spent    string // DP_BUDGET().spent_epsilon after it
}

func (r release) reused() bool {
	for _, w := range r.warnings {
		if len(w) == 3 && w[0] == "Note" && w[1] == "1003" && strings.Contains(w[2], "returned again at no charge") {
			return true
		}
	}
	return false
}

// run runs q (with args: as a server-side prepared statement) and reads its
// warnings and the analyst's budget.
func run(t testing.TB, c *dbsql.Conn, q string, args ...any) release {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var r release
	r.rows, r.err = readAll(ctx, c, q, args...)
	var err error
	if r.warnings, err = readAll(ctx, c, "SHOW WARNINGS"); err != nil {
		t.Fatalf("SHOW WARNINGS: %v", err)
	}
	b, err := readAll(ctx, c, "SELECT releases, spent_epsilon FROM DP_BUDGET() WHERE database_name = 'shop'")
	if err != nil {
		t.Fatalf("DP_BUDGET: %v", err)
	}
	if len(b) == 1 {
		r.releases, r.spent = b[0][0], b[0][1]
	}
	return r
}

// mustNew and mustReuse check that r is a new, charged release (releases
// went from before to before+1) or a reused one (no charge, a Note).
func mustNew(t testing.TB, what string, r release, before string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v", what, r.err)
	}
	if r.reused() || r.releases == before {
		t.Errorf("%s: want a new, charged release; got reused=%v, releases %s → %s, warnings %v", what, r.reused(), before, r.releases, r.warnings)
	}
}

func mustReuse(t testing.TB, what string, r release, before string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v", what, r.err)
	}
	if !r.reused() || r.releases != before {
		t.Errorf("%s: want a reused release at no charge; got reused=%v, releases %s → %s, warnings %v", what, r.reused(), before, r.releases, r.warnings)
	}
}

func TestReuseOverTheWire(t *testing.T) {
	d := newReuseDeployment(t, "")
	alice := d.conn(t, "alice", alicePassword)
	const q = "SELECT DISTINCT item FROM events"

	// DP_EXPLAIN says whether a release would be reused, charging nothing.
	explainCost := func(q string) map[string]string {
		t.Helper()
		rows, err := readAll(context.Background(), alice, "SELECT parameter, value FROM DP_EXPLAIN(?) WHERE release_no = 0", q)
		if err != nil {
			t.Fatalf("DP_EXPLAIN: %v", err)
		}
		m := map[string]string{}
		for _, r := range rows {
			m[r[0]] = r[1]
		}
		return m
	}
	if e := explainCost(q); !strings.HasPrefix(e["shop.charge"], "ε=1 ") || e["shop.reuse_window"] != "24h0m0s" || e["shop.reused"] != "" {
		t.Errorf("DP_EXPLAIN before the first release: %v", e)
	}
	first := run(t, alice, q)
	mustNew(t, "first release", first, "0")
	if e := explainCost(q + " LIMIT 3"); e["charge"] != "none" || !strings.HasSuffix(e["shop.reused"], "UTC (audit record 1)") || e["shop.charge"] != "" {
		t.Errorf("DP_EXPLAIN of a release that would be reused: %v", e)
	}
	if len(first.rows) < 5 || len(first.warnings) != 0 {
		t.Fatalf("first release: %d rows, warnings %v", len(first.rows), first.warnings)
	}
	again := run(t, alice, q)
	mustReuse(t, "the same statement", again, first.releases)
	if !reflect.DeepEqual(again.rows, first.rows) || again.spent != first.spent {
		t.Errorf("reused release: rows %v, spent %s; first %v, spent %s", again.rows, again.spent, first.rows, first.spent)
	}
	if w := again.warnings; len(w) != 1 || !strings.Contains(w[0][2], "UTC (audit record 1)") {
		t.Errorf("Note of a reused release: %v", w)
	}

	// What is above the release, and how the statement is spelled, are not
	// part of it.
	for _, v := range []string{
		"select   distinct ITEM from EVENTS",
		"SELECT DISTINCT item FROM events LIMIT 1",
		"SELECT DISTINCT item AS x FROM events ORDER BY x DESC",
		"SELECT * FROM (SELECT DISTINCT item FROM events) AS t",
	} {
		r := run(t, alice, v)
		mustReuse(t, v, r, first.releases)
		for _, row := range r.rows {
			if !slices.ContainsFunc(first.rows, func(f []string) bool { return slices.Equal(f, row) }) {
				t.Errorf("%s: row %v is not in the stored release", v, row)
			}
		}
	}

	// Other options are another release; hints are options.
	if _, err := alice.ExecContext(context.Background(), "SET dp_epsilon = 0.5"); err != nil {
		t.Fatal(err)
	}
	half := run(t, alice, q)
	mustNew(t, "dp_epsilon = 0.5", half, first.releases)
	if _, err := alice.ExecContext(context.Background(), "SET dp_epsilon = 1"); err != nil {
		t.Fatal(err)
	}
	hinted := run(t, alice, "SELECT /*+ SET_VAR(dp_epsilon = 0.5) */ DISTINCT item FROM events")
	mustReuse(t, "the ε = 0.5 release through a SET_VAR hint", hinted, half.releases)
	filtered := run(t, alice, "SELECT DISTINCT item FROM events WHERE v > 2")
	mustNew(t, "another filter", filtered, half.releases)

	// dp_reuse = OFF asks for a new release, which later requests reuse.
	if _, err := alice.ExecContext(context.Background(), "SET dp_reuse = OFF"); err != nil {
		t.Fatal(err)
	}
	fresh := run(t, alice, q)
	mustNew(t, "dp_reuse = OFF", fresh, filtered.releases)
	if _, err := alice.ExecContext(context.Background(), "SET dp_reuse = ON"); err != nil {
		t.Fatal(err)
	}
	latest := run(t, alice, q)
	mustReuse(t, "after dp_reuse = OFF", latest, fresh.releases)
	if !reflect.DeepEqual(latest.rows, fresh.rows) {
		t.Errorf("reuse after dp_reuse = OFF returned %v, want the newest release %v", latest.rows, fresh.rows)
	}

	// Server-side prepared statements: the bound value is part of the
	// release.
	p1 := run(t, alice, "SELECT DISTINCT item FROM events WHERE v >= ?", 3)
	mustNew(t, "prepared, v >= 3", p1, latest.releases)
	p2 := run(t, alice, "SELECT DISTINCT item FROM events WHERE v >= ?", 3)
	mustReuse(t, "prepared again, v >= 3", p2, p1.releases)
	p3 := run(t, alice, "SELECT DISTINCT item FROM events WHERE v >= ?", 4)
	mustNew(t, "prepared, v >= 4", p3, p2.releases)

	// Every kind of release: aggregates (noisy values included),
	// DP_SET_UNION, DP_NGRAMS.
	before := p3.releases
	for _, k := range []string{
		"SELECT /*+ SET_VAR(dp_contribution_bounds = '0,10') SET_VAR(dp_max_groups_contributed = 3) SET_VAR(dp_max_rows_per_group = 1) SET_VAR(dp_epsilon = 4) */ item, COUNT(*) AS n, SUM(v) AS s FROM events GROUP BY item", // ε = 4: ~90 users per item, so some keys come out whatever the noise
		"SELECT DP_SET_UNION(item, user_id) AS items, DP_SET_UNION(body, user_id) AS bodies FROM events",
		"SELECT ngram, n FROM DP_NGRAMS('shop.events', 'body', 'user_id', 'max_n=2')",
	} {
		r1 := run(t, alice, k)
		mustNew(t, k, r1, before)
		r2 := run(t, alice, k)
		mustReuse(t, k+" again", r2, r1.releases)
		if !reflect.DeepEqual(r1.rows, r2.rows) || len(r1.rows) == 0 {
			t.Errorf("%s: reused rows differ or are empty:\n%v\n%v", k, r1.rows, r2.rows)
		}
		before = r1.releases
	}

	// Another analyst: a release of their own (scope analyst, the default).
	bob := d.conn(t, "bob", bobPassword)
	mustNew(t, "bob", run(t, bob, q), "0")

	// An analyst with no budget left still gets a release they already
	// have; anything else is refused.
	carol := d.conn(t, "carol", carolPassword)
	c1 := run(t, carol, q)
	mustNew(t, "carol's release of her whole budget", c1, "0")
	mustReuse(t, "carol again, budget spent", run(t, carol, q), c1.releases)
	if r := run(t, carol, "SELECT DISTINCT item FROM events WHERE v = 1"); testmysql.ErrNo(r.err) != 1226 {
		t.Errorf("carol's new release beyond her budget: %v, want 1226", r.err)
	}
	// dave has no budget on shop: nothing, reused or not.
	wantNothing(t, d, "dave", davePassword)

	// DP_AUDIT: alice sees her records only, reused ones marked with the
	// record of the release they reused; an administrator sees all.
	ctx := context.Background()
	audit, err := readAll(ctx, alice, "SELECT seq, account, operation, table_name, statement, reused, reused_seq, charged_epsilon, epsilon FROM DP_AUDIT()")
	if err != nil {
		t.Fatal(err)
	}
	charged := map[string]bool{}
	var nReused int
	for _, a := range audit {
		if a[1] != "alice" {
			t.Errorf("alice sees another account's record: %v", a)
		}
		switch a[5] {
		case "0":
			charged[a[0]] = true
		case "1":
			nReused++
			if !charged[a[6]] || a[7] != "0" || a[8] == "0" {
				t.Errorf("reused record %v: reused_seq must name an earlier charged record, charged_epsilon 0", a)
			}
		}
	}
	if nReused < 10 || len(charged) < 8 || audit[0][2] != "SELECT DISTINCT" || audit[0][3] != "events" || audit[0][4] != q {
		t.Errorf("alice's audit (%d charged, %d reused): %v", len(charged), nReused, audit)
	}
	admin := d.conn(t, "admin", adminPassword)
	all, err := readAll(ctx, admin, "SELECT DISTINCT account FROM DP_AUDIT() ORDER BY account")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(all) != "[[alice] [bob] [carol]]" {
		t.Errorf("admin's DP_AUDIT accounts: %v", all)
	}

	// A restart keeps the stored releases; rewriting the data file (even
	// with the same content) is a new load generation, so a new release.
	balance := ledgerBalance(t, d.srv.Ledger(), "alice", "shop").Releases
	d.restart(t)
	alice = d.conn(t, "alice", alicePassword)
	after := run(t, alice, q)
	mustReuse(t, "after a restart", after, fmt.Sprint(balance))
	if !reflect.DeepEqual(after.rows, fresh.rows) {
		t.Errorf("after a restart: %v, want %v", after.rows, fresh.rows)
	}
	writeEvents(t, d.data)
	d.restart(t)
	alice = d.conn(t, "alice", alicePassword)
	mustNew(t, "after the data file was rewritten", run(t, alice, q), fmt.Sprint(balance))
	if err := d.srv.Ledger().Verify(); err != nil {
		t.Errorf("ledger after reuse: %v", err)
	}
}

// TestReuseScopeDatabase: with scope database, an analyst reuses another
// analyst's release of the same database.
func TestReuseScopeDatabase(t *testing.T) {
	fullRunOnly(t)
	d := newReuseDeployment(t, "reuse: {scope: database}")
	const q = "SELECT DISTINCT item FROM events"
	a := run(t, d.conn(t, "alice", alicePassword), q)
	mustNew(t, "alice", a, "0")
	bob := d.conn(t, "bob", bobPassword)
	b := run(t, bob, q)
	mustReuse(t, "bob, alice's release", b, "0")
	if !reflect.DeepEqual(a.rows, b.rows) {
		t.Errorf("bob got %v, alice %v", b.rows, a.rows)
	}
	audit, err := readAll(context.Background(), bob, "SELECT account, reused, reused_seq FROM DP_AUDIT()")
	if err != nil || fmt.Sprint(audit) != "[[bob 1 1]]" {
		t.Errorf("bob's audit: %v, %v", audit, err)
	}
	wantNothing(t, d, "dave", davePassword)
}

// wantNothing checks that user, who has no budget on shop, cannot even
// select from it (it is not among their databases), reused or not.
func wantNothing(t *testing.T, d *reuseDeployment, user, password string) {
	t.Helper()
	db := openGo(t, clients.Target{Host: "127.0.0.1", Port: func() int { _, p := splitAddr(t, d.srv.Addr()); return p }(), User: user, Password: password})
	if _, err := readAllDB(db, "SELECT DISTINCT item FROM shop.events"); err == nil {
		t.Errorf("%s without a budget obtained a release", user)
	}
}

func readAllDB(db *dbsql.DB, q string) ([][]string, error) {
	c, err := db.Conn(context.Background())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return readAll(context.Background(), c, q)
}

// TestReuseWindowAndOff: after the window a release is new; with reuse
// disabled every release is.
func TestReuseWindowAndOff(t *testing.T) {
	fullRunOnly(t)
	const q = "SELECT DISTINCT item FROM events"
	d := newReuseDeployment(t, "reuse: {window: 1s}")
	alice := d.conn(t, "alice", alicePassword)
	r1 := run(t, alice, q)
	mustNew(t, "first", r1, "0")
	time.Sleep(1500 * time.Millisecond)
	mustNew(t, "after the window", run(t, alice, q), r1.releases)

	off := newReuseDeployment(t, "reuse: {enabled: false}")
	alice = off.conn(t, "alice", alicePassword)
	r1 = run(t, alice, q)
	mustNew(t, "first", r1, "0")
	mustNew(t, "reuse disabled", run(t, alice, q), r1.releases)
}

// TestReuseConcurrent: identical releases sent at the same moment on
// several connections of one analyst are made and charged once; the others
// wait for it and return it again, with the Note, at no charge.
func TestReuseConcurrent(t *testing.T) {
	fullRunOnly(t)
	d := newReuseDeployment(t, "")
	const n = 6
	conns := make([]*dbsql.Conn, n)
	for i := range conns {
		conns[i] = d.conn(t, "alice", alicePassword)
	}
	for _, q := range []string{
		"SELECT DISTINCT item FROM events",
		"SELECT ngram FROM DP_NGRAMS('shop.events', 'item', 'user_id', 'max_n=1')",
	} {
		start := make(chan struct{})
		got := make([][][]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], errs[i] = readAll(context.Background(), c, q)
			}()
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("%s on connection %d: %v", q, i, errs[i])
			}
			if fmt.Sprint(got[i]) != fmt.Sprint(got[0]) {
				t.Errorf("%s: connection %d got other rows than connection 0", q, i)
			}
		}
	}
	b, err := readAll(context.Background(), conns[0], "SELECT releases FROM DP_BUDGET() WHERE database_name = 'shop'")
	if err != nil || len(b) != 1 || b[0][0] != "2" {
		t.Fatalf("after %d identical releases of 2 statements at once: releases %v (%v), want 2", n, b, err)
	}
}

// TestReuseClients: the mysql command line client and pandas see a reused
// release as the same rows, at no charge, marked in DP_AUDIT.
func TestReuseClients(t *testing.T) {
	fullRunOnly(t)
	d := newReuseDeployment(t, "")
	const q = "SELECT DISTINCT item FROM events ORDER BY item"
	stmts := []clients.Statement{
		clients.Query(q),
		clients.Query(q),
		clients.Query("SELECT releases FROM DP_BUDGET()"),
		clients.Query("SELECT seq, reused, reused_seq FROM DP_AUDIT() ORDER BY seq"),
	}
	check := func(t *testing.T, name string, res []clients.Result, who string) {
		t.Helper()
		for i, r := range res {
			if r.Error != nil {
				t.Fatalf("%s: statement %d: %v", name, i, r.Error)
			}
		}
		if len(res[0].Rows) < 5 || !reflect.DeepEqual(res[0].Cells(), res[1].Cells()) {
			t.Errorf("%s: the reused release differs:\n%v\n%v", name, res[0].Cells(), res[1].Cells())
		}
		if got := fmt.Sprint(res[2].Cells()); got != "[[1]]" {
			t.Errorf("%s: releases charged %s, want 1", name, got)
		}
		// The second record reuses the first (pandas renders the nullable
		// integer column as a float).
		a := res[3].Cells()
		if len(a) != 2 || a[0][1] != "0" || a[0][2] != "NULL" || a[1][1] != "1" || strings.TrimSuffix(a[1][2], ".0") != a[0][0] {
			t.Errorf("%s: %s's DP_AUDIT %v, want a charged record and one reusing it", name, who, a)
		}
	}
	t.Run("mysql CLI", func(t *testing.T) {
		// The runner separates statements by marker queries, which clear
		// the warnings: SHOW WARNINGS goes on the release's line. Its
		// output follows the rows (a header line, then the Note).
		cli := mysqlCLI(t)
		withWarnings := clients.Query(q + "; SHOW WARNINGS")
		res := runClient(t, clients.MariaDBCLI{Path: cli, Stdin: true}, d.target(t, "alice", alicePassword),
			[]clients.Statement{withWarnings, withWarnings, stmts[2], stmts[3]})
		first, second := res[0].Cells(), res[1].Cells()
		if len(second) != len(first)+2 || fmt.Sprint(second[len(first)]) != "[Level Code Message]" ||
			second[len(first)+1][1] != "1003" || !strings.Contains(second[len(first)+1][2], "returned again at no charge") {
			t.Errorf("the reused release and its warnings: %v\nfirst release: %v", second, first)
		}
		res[1].Rows = res[1].Rows[:len(first)]
		check(t, "mysql CLI", res, "alice")
	})
	t.Run("pandas", func(t *testing.T) {
		res := runClient(t, pythonRunner(t), d.target(t, "bob", bobPassword), stmts)
		check(t, "pandas", res, "bob")
	})
}

// noteTime is the time in a reuse Note, which differs between deployments
// by when they ran.
var noteTime = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} UTC`)

// TestReuseIsolation: whether a release is reused, and what the analyst
// sees of it, is the same on two deployments that differ by one person —
// also across a reload that changes the data in one (the victim is added)
// and rewrites identical data in the other: reuse depends on load
// generations, never on the content.
func TestReuseIsolation(t *testing.T) {
	fullRunOnly(t)
	type step struct {
		name   string
		reload bool // restart after rewriting the data file (with the victim in deployment 1)
		stmts  []string
	}
	eps := "SET dp_epsilon = 0.001"
	steps := []step{
		{name: "first", stmts: []string{eps, "SELECT DISTINCT note FROM people"}},
		{name: "again", stmts: []string{eps, "SELECT DISTINCT note FROM people"}},
		{name: "limit", stmts: []string{eps, "SELECT DISTINCT note FROM people ORDER BY note LIMIT 1"}},
		{name: "victim filter", stmts: []string{eps, "SELECT DISTINCT note FROM people WHERE user_id = 'victim'"}},
		{name: "victim filter again", stmts: []string{eps, "SELECT DISTINCT note FROM people WHERE user_id = 'victim'"}},
		{name: "aggregates", stmts: []string{eps, "SELECT note, COUNT(*) FROM people GROUP BY note"}},
		{name: "aggregates again", stmts: []string{eps, "SELECT note, COUNT(*) FROM people GROUP BY note"}},
		{name: "after restart", reload: false, stmts: []string{eps, "SELECT DISTINCT note FROM people"}},
		{name: "after reload", reload: true, stmts: []string{eps, "SELECT DISTINCT note FROM people"}},
		{name: "after reload again", stmts: []string{eps, "SELECT DISTINCT note FROM people"}},
		{name: "victim after reload", stmts: []string{eps, "SELECT DISTINCT note FROM people WHERE user_id = 'victim'"}},
	}
	type deployment struct {
		dir, data string
		srv       *server.Governed
	}
	deps := make([]*deployment, 2)
	for i := range deps {
		dir := t.TempDir()
		d := &deployment{dir: dir, data: filepath.Join(dir, "people.tsv")}
		writeIsolationTable(t, d.data, false)
		srv := startIsolationAt(t, dir, d.data)
		d.srv = srv
		deps[i] = d
	}
	for si, st := range steps {
		if si == 7 || st.reload {
			for i, d := range deps {
				if _, err := d.srv.Shutdown(5 * time.Second); err != nil {
					t.Fatal(err)
				}
				if st.reload {
					writeIsolationTable(t, d.data, i == 1)
				}
				d.srv = startIsolationAt(t, d.dir, d.data)
			}
		}
		var obs [2]observation
		var audit [2][][]string
		for i, d := range deps {
			obs[i] = observe(t, d.srv.Addr(), attack{name: st.name, stmts: append([]string{"SET @x = NULL", "SET @y = NULL"}, st.stmts...)})
			a, err := readAll(context.Background(), isoConn(t, d.srv.Addr()), "SELECT seq, operation, reused, reused_seq, charged_epsilon FROM DP_AUDIT() ORDER BY seq")
			if err != nil {
				t.Fatal(err)
			}
			audit[i] = a
		}
		t.Run(st.name, func(t *testing.T) {
			compareObservations(t, obs[0], obs[1])
			if !reflect.DeepEqual(audit[0], audit[1]) {
				t.Errorf("DP_AUDIT differs with the victim:\nwithout %v\nwith    %v", audit[0], audit[1])
			}
			wantReused := strings.Contains(st.name, "again") || st.name == "limit" || st.name == "after restart"
			// Beside the Note of a reused release, an empty release says
			// that it released no key.
			gotReused := slices.ContainsFunc(obs[0].Warnings, func(w []string) bool { return len(w) > 1 && w[1] == "1003" })
			if gotReused != wantReused {
				t.Errorf("reused = %v, want %v (warnings %v)", gotReused, wantReused, obs[0].Warnings)
			}
		})
	}
}

// BenchmarkReuse compares, on the demo over the wire, a new release on a
// deployment without reuse, a new release that is also stored (dp_reuse =
// OFF on a deployment with reuse) and a reused one, per kind of release:
//
//	go test -run X -bench Reuse -benchtime 5x ./integration/
func BenchmarkReuse(b *testing.B) {
	start := func(reuse bool) *dbsql.Conn {
		opts, _, err := server.Demo(server.DemoOptions{Listen: "127.0.0.1:0", DataDir: b.TempDir(), AnalystPassword: analystPassword, AdminPassword: adminPassword})
		if err != nil {
			b.Fatal(err)
		}
		opts.Config.Accounts.Analysts[0].Budgets[0].Epsilon = 1e4
		opts.Config.Accounts.Analysts[0].Budgets[0].Delta = 1e-3
		opts.Config.Reuse.Enabled = &reuse
		host, port := splitAddr(b, testserver.Governed(b, opts).Addr())
		c, err := openGo(b, clients.Target{Host: host, Port: port, User: "analyst", Password: analystPassword, Database: "demo"}).Conn(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	on, off := start(true), start(false)
	for _, k := range []struct{ name, q string }{
		{"distinct", "SELECT DISTINCT word FROM words"},
		{"aggregates", "SELECT word, COUNT(*) FROM words GROUP BY word"},
		{"ngrams", "SELECT * FROM DP_NGRAMS('demo.posts', 'body', 'user_id', 'max_n=2')"},
	} {
		hinted := k.q[:len("SELECT")] + " /*+ SET_VAR(dp_reuse = OFF) */" + k.q[len("SELECT"):]
		for _, m := range []struct {
			name string
			c    *dbsql.Conn
			q    string
		}{{"new", off, k.q}, {"new+store", on, hinted}, {"reused", on, k.q}} {
			b.Run(k.name+"/"+m.name, func(b *testing.B) {
				if _, err := readAll(context.Background(), m.c, m.q); err != nil { // stores a release for "reused"
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					if _, err := readAll(context.Background(), m.c, m.q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
