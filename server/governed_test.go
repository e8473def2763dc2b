package server_test

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/governance"
	"github.com/dpsql/dpsql/server/ledger"
)

// TestLoginWrongPasswordRefused: a wrong password, an unknown user and a
// missing password are refused with MySQL error 1045 over the wire.
func TestLoginWrongPasswordRefused(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	testmysql.WantErrNo(t, "alice, wrong password", d.login(s.Addr(), "alice", "wrong", false), 1045)
	testmysql.WantErrNo(t, "alice, no password", d.login(s.Addr(), "alice", "", false), 1045)
	// An unknown user name gets the same 1045 as a wrong password
	// (go-mysql-server v0.20.0 alone answers 2012 "No authentication
	// methods available", which reveals which names exist).
	for _, useTLS := range []bool{false, true} {
		testmysql.WantErrNo(t, fmt.Sprintf("unknown user (TLS %v)", useTLS), d.login(s.Addr(), "mallory", "x", useTLS), 1045)
		testmysql.WantErrNo(t, fmt.Sprintf("unknown user without password (TLS %v)", useTLS), d.login(s.Addr(), "mallory", "", useTLS), 1045)
	}
	testmysql.WantErrNo(t, "carol (sha2), wrong password over TLS", d.login(s.Addr(), "carol", "wrong", true), 1045)
	if err := d.login(s.Addr(), "alice", alicePass, false); err != nil {
		t.Errorf("alice, right password: %v", err)
	}
}

// TestLoginCachingSha2OverTLS: a caching_sha2_password account logs in over
// TLS; without TLS go-mysql-server cannot complete the exchange and the
// login fails.
func TestLoginCachingSha2OverTLS(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	db := d.connect(t, s.Addr(), "carol", carolPass, true)
	var user string
	if err := db.QueryRow("SELECT CURRENT_USER()").Scan(&user); err != nil {
		t.Fatalf("carol over TLS: %v", err)
	}
	if !strings.HasPrefix(user, "carol@") {
		t.Errorf("CURRENT_USER() = %q", user)
	}
	if err := d.login(s.Addr(), "carol", carolPass, false); err == nil {
		t.Error("caching_sha2_password logged in without TLS")
	}
}

// TestLoginNativePasswordWithoutTLS: mysql_native_password accounts log in
// on localhost without TLS (and with it).
func TestLoginNativePasswordWithoutTLS(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	for _, c := range []struct{ user, pass string }{{"admin", adminPass}, {"alice", alicePass}} {
		if err := d.login(s.Addr(), c.user, c.pass, false); err != nil {
			t.Errorf("%s without TLS: %v", c.user, err)
		}
		if err := d.login(s.Addr(), c.user, c.pass, true); err != nil {
			t.Errorf("%s with TLS: %v", c.user, err)
		}
	}
}

// TestLoginRequireSecureTransport: with tls.require, connections without
// TLS are refused even with the right password.
func TestLoginRequireSecureTransport(t *testing.T) {
	d := newDeployment(t, true)
	s := d.start(t)
	if err := d.login(s.Addr(), "alice", alicePass, false); err == nil {
		t.Error("plaintext login accepted with tls.require")
	}
	if err := d.login(s.Addr(), "alice", alicePass, true); err != nil {
		t.Errorf("TLS login: %v", err)
	}
}

// TestLedgerChargesEachRelease: every release an analyst obtains over the
// wire is charged (ε, δ) of the session; DP_BUDGET() shows the spent and
// remaining budget, and the ledger's audit trail holds the statement.
func TestLedgerChargesEachRelease(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	conn := sessionConn(t, d.connect(t, s.Addr(), "alice", alicePass, false), "shop")
	before := budget(t, conn)
	if len(before) != 1 || before[0].SpentEps != 0 || before[0].Releases != 0 || before[0].RemainingEps != 1 {
		t.Fatalf("fresh budget: %+v", before)
	}
	urls, err := releaseURLs(conn)
	if err != nil {
		t.Fatalf("release: %v", err)
	}
	for _, u := range urls {
		if strings.HasPrefix(u, "/private/") {
			t.Errorf("a page of one user was released: %s", u)
		}
	}
	checkSpent(t, conn, 0.1, 1e-7, 1)
	if _, err := conn.ExecContext(context.Background(), "SET dp_epsilon = 0.25, dp_delta = 1e-6"); err != nil {
		t.Fatal(err)
	}
	if _, err := releaseURLs(conn); err != nil {
		t.Fatalf("second release: %v", err)
	}
	checkSpent(t, conn, 0.35, 1.1e-6, 2)
	var j string
	if err := conn.QueryRowContext(context.Background(), "SELECT DP_SET_UNION(url, user_id) FROM visits").Scan(&j); err != nil {
		t.Fatalf("DP_SET_UNION: %v", err)
	}
	checkSpent(t, conn, 0.6, 2.1e-6, 3)

	recs, err := s.Ledger().Audit(ledger.AuditFilter{Analyst: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || !strings.Contains(recs[0].Description, "SELECT DISTINCT url FROM visits") ||
		!strings.Contains(recs[0].Description, "shop.visits") || recs[1].Epsilon != 0.25 || recs[0].Mechanism == "" {
		t.Errorf("audit records: %+v", recs)
	}
	if err := s.Ledger().Verify(); err != nil {
		t.Error(err)
	}

	// An administrator's releases are not charged.
	admin := d.connect(t, s.Addr(), "admin", adminPass, false)
	if _, err := admin.Exec("USE shop"); err != nil {
		t.Fatal(err)
	}
	if _, err := releaseURLs(admin); err != nil {
		t.Fatal(err)
	}
	if recs, _ := s.Ledger().Audit(ledger.AuditFilter{}); len(recs) != 3 {
		t.Errorf("%d audit records after an admin's release, want 3", len(recs))
	}
}

func checkSpent(t *testing.T, conn *dbsql.Conn, eps, delta float64, releases int64) {
	t.Helper()
	b := budget(t, conn)
	if len(b) != 1 {
		t.Fatalf("DP_BUDGET(): %+v", b)
	}
	r := b[0]
	if math.Abs(r.SpentEps-eps) > 1e-12 || math.Abs(r.SpentDelta-delta) > 1e-18 || r.Releases != releases ||
		math.Abs(r.RemainingEps-(r.BudgetEps-eps)) > 1e-12 || !r.Last.Valid {
		t.Errorf("after %d releases: %+v; want spent ε=%v δ=%v", releases, r, eps, delta)
	}
}

// sessionConn returns one connection of db (so that SET sticks) with db
// as its current database.
func sessionConn(t *testing.T, db *dbsql.DB, database string) *dbsql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(context.Background(), "USE "+database); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestLedgerExhaustedBudgetRefused: once the budget is spent, a release is
// refused with MySQL error 1226 and a message saying what remains, and
// nothing is charged; the per-release cap and a missing budget are refused
// too.
func TestLedgerExhaustedBudgetRefused(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	conn := sessionConn(t, d.connect(t, s.Addr(), "alice", alicePass, false), "shop")
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, "SET dp_epsilon = 0.5"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := releaseURLs(conn); err != nil {
			t.Fatalf("release %d: %v", i+1, err)
		}
	}
	_, err := releaseURLs(conn)
	testmysql.WantErrNo(t, "release over budget", err, governance.CodeBudget)
	if err == nil || !strings.Contains(err.Error(), "privacy budget exceeded") || !strings.Contains(err.Error(), "has only ε=0,") {
		t.Errorf("message: %v", err)
	}
	checkSpent(t, conn, 1, 2e-7, 2)

	// Over the per-release cap (0.5) through the options string.
	var j string
	err = conn.QueryRowContext(ctx, "SELECT DP_SET_UNION(url, user_id, 'epsilon=0.75') FROM visits").Scan(&j)
	testmysql.WantErrNo(t, "release over the cap", err, governance.CodeBudget)

	// dave has no budget at all.
	dave := sessionConn(t, d.connect(t, s.Addr(), "dave", davePass, false), "shop")
	_, err = releaseURLs(dave)
	testmysql.WantErrNo(t, "analyst without budget", err, governance.CodeNoBudget)
	if err == nil || !strings.Contains(err.Error(), "no privacy budget") {
		t.Errorf("message: %v", err)
	}
	if err := s.Ledger().Verify(); err != nil {
		t.Error(err)
	}
}

// TestLedgerSurvivesRestart: spent budget is the same after the server is
// stopped and started again on the same data directory.
func TestLedgerSurvivesRestart(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	conn := sessionConn(t, d.connect(t, s.Addr(), "bob", bobPass, false), "shop")
	for range 3 {
		if _, err := releaseURLs(conn); err != nil {
			t.Fatal(err)
		}
	}
	before := budget(t, conn)
	conn.Close()
	if _, err := s.Shutdown(2 * time.Second); err != nil {
		t.Fatal(err)
	}

	s2 := d.start(t)
	conn2 := sessionConn(t, d.connect(t, s2.Addr(), "bob", bobPass, false), "shop")
	after := budget(t, conn2)
	if len(after) != 1 || after[0].Releases != 3 || after[0].SpentEps != before[0].SpentEps ||
		after[0].SpentDelta != before[0].SpentDelta || after[0].Last != before[0].Last {
		t.Errorf("before restart %+v\nafter %+v", before, after)
	}
	if _, err := releaseURLs(conn2); err != nil {
		t.Fatal(err)
	}
	checkSpent(t, conn2, 0.4, 4e-7, 4)
}

// TestLedgerConcurrentReleasesNeverOverspend: many connections of one
// analyst release at once; exactly as many releases succeed as the budget
// allows (1 / 0.1 = 10, exact decimal accounting), the rest are refused
// with 1226, and the ledger stays consistent.
func TestLedgerConcurrentReleasesNeverOverspend(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	db := d.connect(t, s.Addr(), "alice", alicePass, false)
	db.SetMaxOpenConns(8)
	var (
		mu      sync.Mutex
		ok      int
		refused int
		other   []error
		wg      sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(context.Background())
			if err != nil {
				mu.Lock()
				other = append(other, err)
				mu.Unlock()
				return
			}
			defer conn.Close()
			if _, err := conn.ExecContext(context.Background(), "USE shop"); err != nil {
				mu.Lock()
				other = append(other, err)
				mu.Unlock()
				return
			}
			for range 4 {
				_, err := releaseURLs(conn)
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case testmysql.ErrNo(err) == governance.CodeBudget:
					refused++
				default:
					other = append(other, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("unexpected errors: %v", other)
	}
	if ok != 10 || refused != 22 {
		t.Errorf("%d releases succeeded and %d were refused; want 10 and 22", ok, refused)
	}
	bal, err := s.Ledger().Balance("alice", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if bal.Spent.Epsilon != 1 || bal.Releases != int64(ok) || bal.Spent.Epsilon > bal.Budget.Epsilon {
		t.Errorf("balance %+v after %d successful releases", bal, ok)
	}
	if err := s.Ledger().Verify(); err != nil {
		t.Error(err)
	}
}

// TestBudgetFunctionAnalystVsAdmin: DP_BUDGET() shows an analyst their own
// accounts only and an administrator every analyst's; its columns are as
// documented.
func TestBudgetFunctionAnalystVsAdmin(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	alice := d.connect(t, s.Addr(), "alice", alicePass, false)
	rows, err := alice.Query("SELECT * FROM DP_BUDGET()")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	rows.Close()
	want := []string{"analyst", "database_name", "budget_epsilon", "budget_delta", "accounting", "spent_epsilon", "spent_delta",
		"remaining_epsilon", "remaining_delta", "basic_epsilon", "basic_delta", "max_release_epsilon", "max_release_delta",
		"releases", "last_release", "active"}
	if !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	a := budget(t, alice)
	if len(a) != 1 || a[0].Analyst != "alice" || a[0].Database != "shop" || a[0].BudgetEps != 1 || a[0].BudgetDelta != 1e-5 ||
		a[0].CapEps.Float64 != 0.5 || a[0].CapDelta.Float64 != 1e-6 || a[0].Last.Valid || !a[0].Active {
		t.Errorf("alice sees %+v", a)
	}
	bob := d.connect(t, s.Addr(), "bob", bobPass, false)
	if b := budget(t, bob); len(b) != 1 || b[0].Analyst != "bob" || b[0].CapEps.Valid || b[0].CapDelta.Valid {
		t.Errorf("bob sees %+v", b)
	}
	dave := d.connect(t, s.Addr(), "dave", davePass, false)
	if _, err := dave.Exec("USE shop"); err != nil {
		t.Fatal(err)
	}
	if b := budget(t, dave); len(b) != 0 {
		t.Errorf("dave (no budget) sees %+v", b)
	}
	admin := d.connect(t, s.Addr(), "admin", adminPass, false)
	var names []string
	for _, r := range budget(t, admin) {
		names = append(names, r.Analyst+"/"+r.Database)
	}
	if !slices.Equal(names, []string{"alice/shop", "bob/shop", "carol/shop"}) {
		t.Errorf("admin sees %v", names)
	}
	// Filters and lower-case names work.
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM dp_budget() WHERE analyst = 'bob'").Scan(&n); err != nil || n != 1 {
		t.Errorf("filtered: %d, %v", n, err)
	}
	_, err = admin.Query("SELECT * FROM DP_BUDGET('shop')")
	if err == nil || !strings.Contains(err.Error(), "no arguments") {
		t.Errorf("DP_BUDGET('shop'): %v", err)
	}
}

// TestSetGlobalRefusedForAnalysts: analysts may not change global system
// variables (any of them, by any syntax) nor set dp_epsilon/dp_delta above
// their per-release cap; administrators may change globals.
func TestSetGlobalRefusedForAnalysts(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	alice := sessionConn(t, d.connect(t, s.Addr(), "alice", alicePass, false), "shop")
	ctx := context.Background()
	for _, q := range []string{
		"SET GLOBAL dp_epsilon = 5",
		"SET @@global.dp_epsilon = 5",
		"SET @@GLOBAL.dp_delta = 0.5",
		"SET PERSIST dp_epsilon = 5",
		"SET PERSIST_ONLY dp_max_items = 5",
		"SET GLOBAL max_connections = 1",
		"SET GLOBAL sql_mode = ''",
		"SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE",
		"SET dp_epsilon = 0.1, GLOBAL dp_mechanism = 'count_laplace'",
	} {
		_, err := alice.ExecContext(ctx, q)
		testmysql.WantErrNo(t, q, err, 1227)
	}
	var g float64
	if err := alice.QueryRowContext(ctx, "SELECT @@global.dp_epsilon").Scan(&g); err != nil || g != 0.1 {
		t.Errorf("@@global.dp_epsilon = %v (%v), want the configured default 0.1", g, err)
	}
	// Own session: allowed within the cap, refused above it.
	if _, err := alice.ExecContext(ctx, "SET dp_epsilon = 0.5"); err != nil {
		t.Errorf("SET dp_epsilon = 0.5 (the cap): %v", err)
	}
	for _, q := range []string{"SET dp_epsilon = 0.6", "SET SESSION dp_delta = 1e-5", "SET @@dp_epsilon = 0.25 * 4"} {
		_, err := alice.ExecContext(ctx, q)
		testmysql.WantErrNo(t, q, err, 1231)
	}
	var e float64
	if err := alice.QueryRowContext(ctx, "SELECT @@dp_epsilon").Scan(&e); err != nil || e != 0.5 {
		t.Errorf("@@dp_epsilon = %v (%v), want 0.5", e, err)
	}
	// A SET_VAR hint cannot get around the cap: the ledger checks every
	// release's actual ε.
	rows, err := alice.QueryContext(ctx, "SELECT /*+ SET_VAR(dp_epsilon=0.9) */ DISTINCT url FROM visits")
	if err == nil {
		rows.Close()
	}
	recs, _ := s.Ledger().Audit(ledger.AuditFilter{Analyst: "alice"})
	for _, r := range recs {
		if r.Epsilon > 0.5 {
			t.Errorf("charged a release of ε=%v above alice's cap", r.Epsilon)
		}
	}
	t.Logf("SET_VAR(dp_epsilon=0.9) hint: %v; %d charges", err, len(recs))
	// bob has no cap: any valid value.
	bob := sessionConn(t, d.connect(t, s.Addr(), "bob", bobPass, false), "shop")
	if _, err := bob.ExecContext(ctx, "SET dp_epsilon = 10"); err != nil {
		t.Errorf("bob: %v", err)
	}
	// The admin changes globals.
	admin := sessionConn(t, d.connect(t, s.Addr(), "admin", adminPass, false), "shop")
	if _, err := admin.ExecContext(ctx, "SET GLOBAL dp_max_items = 20"); err != nil {
		t.Errorf("admin SET GLOBAL: %v", err)
	}
	if _, err := admin.ExecContext(ctx, "SET GLOBAL dp_max_items = 10"); err != nil {
		t.Error(err)
	}
}

// TestProtectedCountsHidden: analysts see no row count of protected tables
// in SHOW TABLE STATUS or information_schema (public tables keep theirs).
func TestProtectedCountsHidden(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	alice := d.connect(t, s.Addr(), "alice", alicePass, false)
	rows, err := alice.Query("SELECT table_name, table_rows, data_length FROM information_schema.tables WHERE table_schema = 'shop' ORDER BY table_name")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int64{}
	for rows.Next() {
		var name string
		var n, l int64
		if err := rows.Scan(&name, &n, &l); err != nil {
			t.Fatal(err)
		}
		got[name] = [2]int64{n, l}
	}
	rows.Close()
	if got["visits"] != [2]int64{0, 0} || got["products"][0] != 3 {
		t.Errorf("information_schema.tables: %v", got)
	}
	rows, err = alice.Query("SHOW TABLE STATUS FROM shop")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	status := map[string][]dbsql.NullString{}
	for rows.Next() {
		vals := make([]dbsql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		status[vals[0].String] = vals
	}
	rows.Close()
	for i, c := range cols {
		if c == "Rows" || c == "Data_length" || c == "Avg_row_length" {
			if v := status["visits"][i].String; v != "0" {
				t.Errorf("SHOW TABLE STATUS: visits %s = %s", c, v)
			}
		}
	}
	var comment string
	if err := alice.QueryRow("SELECT table_comment FROM information_schema.tables WHERE table_schema = 'shop' AND table_name = 'visits'").Scan(&comment); err != nil || !strings.Contains(comment, "privacy unit user_id") {
		t.Errorf("comment %q, %v", comment, err)
	}
	// Raw reads are refused (the planner's guard; the storage guard behind it).
	var n int
	testmysql.WantErrNo(t, "raw read as analyst", alice.QueryRow("SELECT user_id FROM shop.visits LIMIT 1").Scan(&n), 1142)
	admin := d.connect(t, s.Addr(), "admin", adminPass, false)
	if err := admin.QueryRow("SELECT COUNT(*) FROM shop.visits").Scan(&n); err != nil || n != 1600 {
		t.Errorf("admin COUNT(*) = %d, %v", n, err)
	}
}

// TestSecondServerOnSameDataDirRefused: a second server on a data
// directory in use fails at start with a message naming the directory.
func TestSecondServerOnSameDataDirRefused(t *testing.T) {
	d := newDeployment(t, false)
	d.start(t)
	_, err := d.tryStart(t)
	if !errors.Is(err, ledger.ErrInUse) || !strings.Contains(err.Error(), "another dpsql") {
		t.Errorf("second server: %v", err)
	}
}

// TestShutdownGraceful: Shutdown lets a running statement finish within the
// timeout, disconnects idle clients, cancels statements still running
// after it, refuses new releases and closes the ledger (another process
// may open it at once).
func TestShutdownGraceful(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	admin := d.connect(t, s.Addr(), "admin", adminPass, false)
	idle := sessionConn(t, d.connect(t, s.Addr(), "alice", alicePass, false), "shop")

	finished := make(chan error, 1)
	go func() {
		var x int
		finished <- admin.QueryRow("SELECT SLEEP(1) + 1").Scan(&x)
	}()
	waitRunning(t, s, "SLEEP(1)")
	start := time.Now()
	canceled, err := s.Shutdown(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-finished; err != nil || canceled != 0 {
		t.Errorf("running statement: %v, %d canceled; want it to finish", err, canceled)
	}
	// Shutdown returns when the statement ends, not at its timeout (a
	// minute: far from the one second the statement takes, on any load).
	if time.Since(start) > 30*time.Second {
		t.Errorf("shutdown took %v", time.Since(start))
	}
	if _, err := releaseURLs(idle); err == nil {
		t.Error("the idle connection still works after shutdown")
	}
	if err := d.login(s.Addr(), "alice", alicePass, false); err == nil {
		t.Error("a new connection was accepted after shutdown")
	}
	l, err := ledger.Open(d.dir+"/data", ledger.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("ledger not released: %v", err)
	}
	l.Close()

	// A statement that outlives the timeout is canceled.
	d2 := newDeployment(t, false)
	s2 := d2.start(t)
	admin2 := d2.connect(t, s2.Addr(), "admin", adminPass, false)
	go func() {
		var x int
		finished <- admin2.QueryRow("SELECT SLEEP(30) + 1").Scan(&x)
	}()
	waitRunning(t, s2, "SLEEP(30)")
	start = time.Now()
	canceled, _ = s2.Shutdown(200 * time.Millisecond)
	if canceled != 1 || time.Since(start) > 20*time.Second {
		t.Errorf("canceled %d statements in %v; want 1, well before the statement's 30 s", canceled, time.Since(start))
	}
	select {
	case err := <-finished:
		if err == nil {
			t.Error("the canceled statement returned a result")
		}
	case <-time.After(time.Minute):
		t.Error("the canceled statement's client was not released")
	}
	// No release is charged after shutdown.
	rel := release.Request{Function: "SELECT DISTINCT", Database: "shop", Table: "visits", Epsilon: 0.1, Delta: 1e-7}
	if err := s2.Governor().Check(nil, rel); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("check after shutdown: %v", err)
	}
}

// TestExampleConfigServes: a server starts from examples/dpsql.yaml (its
// corpus taken from the shared data when the relative path does not
// resolve, as in a worktree), and its accounts work as documented.
func TestExampleConfigServes(t *testing.T) {
	cfg, err := config.Load(filepath.Join(testenv.ModuleRoot(), "examples", "dpsql.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for i, ds := range cfg.Datasets {
		if _, err := os.Stat(ds.File); err != nil {
			cfg.Datasets[i].File = testenv.DataFile(t, filepath.Base(ds.File))
		}
	}
	cfg.DataDir = t.TempDir()
	cfg.Listen = "127.0.0.1:0"
	s, err := server.NewGoverned(server.GovernedOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	defer s.Shutdown(time.Second)
	d := &deployment{}
	alice := d.connect(t, s.Addr(), "alice", "alice-example", false)
	if _, err := alice.Exec("USE rails"); err != nil {
		t.Fatal(err)
	}
	rows, err := alice.Query("SELECT DISTINCT word FROM stopwords LIMIT 1")
	if err != nil {
		t.Fatalf("public table: %v", err)
	}
	rows.Close()
	if _, err := alice.Query("SELECT * FROM commits LIMIT 1"); testmysql.ErrNo(err) != 1142 {
		t.Errorf("raw read of the protected table: %v", err)
	}
}

// TestAccountManagement: administrators create users and grant with SQL
// (until the server stops); such users are governed without a budget. The
// read-only storage refuses DDL and writes for everyone; analysts cannot
// manage accounts.
func TestAccountManagement(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	admin := sessionConn(t, d.connect(t, s.Addr(), "admin", adminPass, false), "shop")
	ctx := context.Background()
	for _, q := range []string{
		"CREATE USER 'eve'@'%' IDENTIFIED BY 'eve-secret'",
		"GRANT SELECT ON shop.* TO 'eve'@'%'",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{"CREATE DATABASE other", "CREATE TABLE shop.t (x INT)", "INSERT INTO products VALUES ('D4', 'date')", "DROP TABLE products"} {
		if _, err := admin.ExecContext(ctx, q); err == nil {
			t.Errorf("admin: %s succeeded on the read-only storage", q)
		} else {
			t.Logf("admin: %s → %v", q, err)
		}
	}
	eve := sessionConn(t, d.connect(t, s.Addr(), "eve", "eve-secret", false), "shop")
	var name string
	if err := eve.QueryRowContext(ctx, "SELECT name FROM products WHERE sku = 'A1'").Scan(&name); err != nil || name != "apple" {
		t.Errorf("eve reads the public table: %q, %v", name, err)
	}
	var n int
	testmysql.WantErrNo(t, "eve reads the protected table", eve.QueryRowContext(ctx, "SELECT user_id FROM visits LIMIT 1").Scan(&n), 1142)
	_, err := releaseURLs(eve)
	testmysql.WantErrNo(t, "eve's release (no budget)", err, governance.CodeNoBudget)

	alice := sessionConn(t, d.connect(t, s.Addr(), "alice", alicePass, false), "shop")
	for _, q := range []string{
		"CREATE USER 'x'@'%' IDENTIFIED BY 'y'",
		"GRANT SELECT ON *.* TO 'alice'@'%'",
		"DROP USER 'bob'@'%'",
		"ALTER USER 'bob'@'%' IDENTIFIED BY 'z'",
		"SELECT * FROM mysql.user",
		"INSERT INTO products VALUES ('D4', 'date')",
		"SHOW PROCESSLIST",
		"SELECT LOAD_FILE('/etc/hostname')",
		"SELECT * FROM products INTO OUTFILE '/tmp/dpsql-outfile-test'",
	} {
		if _, err := alice.ExecContext(ctx, q); err == nil {
			t.Errorf("analyst: %s succeeded", q)
		} else {
			t.Logf("analyst: %s → %v", q, err)
		}
	}
	// information_schema.processlist: own connections only, no progress.
	rows, err := alice.QueryContext(ctx, "SELECT user, state FROM information_schema.processlist")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var user, state string
		if err := rows.Scan(&user, &state); err != nil {
			t.Fatal(err)
		}
		if user != "alice" || state != "" {
			t.Errorf("analyst sees process of %q with state %q", user, state)
		}
	}
	rows.Close()
}

// TestFilesRefusedForAnalysts: analysts cannot read or write server files
// (LOAD_FILE, INTO OUTFILE/DUMPFILE, LOAD DATA) in any position; the
// administrators' file functions are confined to the data directory's
// files/ directory (secure_file_priv), away from the ledger and the data.
func TestFilesRefusedForAnalysts(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	alice := sessionConn(t, d.connect(t, s.Addr(), "alice", alicePass, false), "shop")
	ctx := context.Background()
	visits := filepath.Join(d.dir, "visits.tsv")
	out := filepath.Join(t.TempDir(), "out.txt")
	for _, q := range []string{
		"SELECT LOAD_FILE('" + visits + "')",
		"SELECT LENGTH(LOAD_FILE('" + visits + "')) > 0",
		"SELECT (SELECT LOAD_FILE('" + visits + "'))",
		"SELECT name FROM products WHERE name = LOAD_FILE('" + visits + "')",
		"SET @x = LOAD_FILE('" + visits + "')",
		"SELECT * FROM products INTO OUTFILE '" + out + "'",
		"SELECT name FROM products LIMIT 1 INTO DUMPFILE '" + out + "'",
		"SELECT DISTINCT url FROM visits INTO OUTFILE '" + out + "'",
	} {
		_, err := alice.ExecContext(ctx, q)
		testmysql.WantErrNo(t, q, err, 1227)
	}
	// LOAD DATA is refused by go-mysql-server's INSERT privilege check
	// first (1105 "command denied").
	if _, err := alice.ExecContext(ctx, "LOAD DATA INFILE '"+visits+"' INTO TABLE products"); err == nil {
		t.Error("LOAD DATA succeeded")
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("an analyst wrote %s", out)
	}
	admin := sessionConn(t, d.connect(t, s.Addr(), "admin", adminPass, false), "shop")
	var data dbsql.NullString
	if err := admin.QueryRowContext(ctx, "SELECT LOAD_FILE('"+visits+"')").Scan(&data); err != nil || data.Valid {
		t.Errorf("admin LOAD_FILE outside secure_file_priv: %v, %v", data.Valid, err)
	}
	if err := admin.QueryRowContext(ctx, "SELECT LOAD_FILE('"+filepath.Join(d.dir, "data", ledger.FileName)+"')").Scan(&data); err != nil || data.Valid {
		t.Errorf("admin LOAD_FILE of the ledger: %v, %v", data.Valid, err)
	}
	var dir string
	if err := admin.QueryRowContext(ctx, "SELECT @@secure_file_priv").Scan(&dir); err != nil || dir != filepath.Join(d.dir, "data", server.FilesDir) {
		t.Errorf("secure_file_priv = %q, %v", dir, err)
	}
}

// TestLedgerChargesEveryReleaseOfAStatement: a statement with two releases
// is charged twice; a server-side prepared statement is charged at every
// execution; a statement refused at planning is not charged.
func TestLedgerChargesEveryReleaseOfAStatement(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	bob := sessionConn(t, d.connect(t, s.Addr(), "bob", bobPass, false), "shop")
	ctx := context.Background()
	rows, err := bob.QueryContext(ctx, "SELECT DISTINCT url FROM visits WHERE user_id < 200 UNION SELECT DISTINCT url FROM visits WHERE user_id >= 200")
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	checkSpent(t, bob, 0.2, 2e-7, 2)
	// go-sql-driver prepares statements with arguments on the server.
	for range 2 {
		rows, err := bob.QueryContext(ctx, "SELECT DISTINCT url FROM visits WHERE user_id > ?", 10)
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	checkSpent(t, bob, 0.4, 4e-7, 4)
	if _, err := bob.ExecContext(ctx, "SET dp_epsilon = 1.7"); err != nil {
		t.Fatal(err)
	}
	_, err = releaseURLs(bob)
	testmysql.WantErrNo(t, "over budget", err, governance.CodeBudget)
	checkSpent(t, bob, 0.4, 4e-7, 4)
}

// TestLedgerChargesNgrams: DP_NGRAMS over a protected table is charged to
// the analyst like any release.
func TestLedgerChargesNgrams(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	bob := sessionConn(t, d.connect(t, s.Addr(), "bob", bobPass, false), "shop")
	rows, err := bob.QueryContext(context.Background(), "SELECT * FROM DP_NGRAMS('shop.visits', 'url', 'user_id', 'epsilon=0.3, max_n=2')")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	checkSpent(t, bob, 0.3, 1e-7, 1)
}

// TestAnalystKillsOwnStatements: an analyst may KILL (QUERY or CONNECTION)
// their own connections from another of their connections, and may not
// kill an administrator's or another analyst's (MySQL error 1095).
func TestAnalystKillsOwnStatements(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	ctx := context.Background()
	connID := func(c *dbsql.Conn) int64 {
		var id int64
		if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	alice := d.connect(t, s.Addr(), "alice", alicePass, false)
	a1, a2 := sessionConn(t, alice, "shop"), sessionConn(t, alice, "shop")
	admin := sessionConn(t, d.connect(t, s.Addr(), "admin", adminPass, false), "shop")
	bob := sessionConn(t, d.connect(t, s.Addr(), "bob", bobPass, false), "shop")
	for _, q := range []string{"KILL QUERY %d", "KILL CONNECTION %d"} {
		if _, err := a1.ExecContext(ctx, fmt.Sprintf(q, connID(admin))); testmysql.ErrNo(err) != 1095 {
			t.Errorf("alice: %s of the admin's connection: %v, want 1095", q, err)
		}
		if _, err := a1.ExecContext(ctx, fmt.Sprintf(q, connID(bob))); testmysql.ErrNo(err) != 1095 {
			t.Errorf("alice: %s of bob's connection: %v, want 1095", q, err)
		}
	}
	if _, err := a1.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", connID(a2))); err != nil {
		t.Errorf("alice: KILL QUERY of her own connection: %v", err)
	}
	id2 := connID(a2)
	if _, err := a1.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id2)); err != nil {
		t.Errorf("alice: KILL CONNECTION of her own connection: %v", err)
	}
	if err := a2.PingContext(ctx); err == nil {
		var one int
		if err := a2.QueryRowContext(ctx, "SELECT 1").Scan(&one); err == nil {
			t.Error("alice's killed connection still answers")
		}
	}
	// The administrator may kill anyone's.
	if _, err := admin.ExecContext(ctx, fmt.Sprintf("KILL QUERY %d", connID(bob))); err != nil {
		t.Errorf("admin: KILL QUERY of bob's connection: %v", err)
	}
}

// TestZCDPAccountingOverTheWire: with the configuration's default
// accounting (zcdp), bob's budget of ε = 2, δ = 1e-5 takes many more
// releases at ε = 0.5, δ = 1e-6 than the 4 basic composition allows;
// DP_BUDGET() shows both accountings, and the refusal says why.
func TestZCDPAccountingOverTheWire(t *testing.T) {
	d := newDeploymentWith(t, false, "zcdp")
	s := d.start(t)
	bob := sessionConn(t, d.connect(t, s.Addr(), "bob", bobPass, false), "shop")
	if _, err := bob.ExecContext(context.Background(), "SET dp_epsilon = 0.5, dp_delta = 1e-6"); err != nil {
		t.Fatal(err)
	}
	n := 0
	var last error
	for ; n < 200; n++ {
		if _, last = releaseURLs(bob); last != nil {
			break
		}
	}
	testmysql.WantErrNo(t, "release beyond the zCDP budget", last, governance.CodeBudget)
	if n <= 8 {
		t.Errorf("%d releases at ε = 0.5 fit a budget of ε = 2 under zCDP; basic composition fits 4", n)
	}
	if !strings.Contains(last.Error(), "zCDP") {
		t.Errorf("refusal: %v", last)
	}
	b := budget(t, bob)
	if len(b) != 1 || b[0].Accounting != "zcdp" || b[0].Releases != int64(n) || b[0].SpentEps > 2 ||
		b[0].BasicEps < 0.5*float64(n)-1e-9 || b[0].BasicEps > 0.5*float64(n)+1e-9 {
		t.Errorf("bob's budget after %d releases: %+v", n, b)
	}
	t.Logf("%d releases at ε = 0.5, δ = 1e-6 within (2, 1e-5) under zCDP (basic composition: 4); spent ε=%.3f, δ=%.3g; basic Σε=%.1f",
		n, b[0].SpentEps, b[0].SpentDelta, b[0].BasicEps)
}

// waitRunning waits until a statement containing text runs on the server
// (its process list shows it), up to a minute: a statement sent from
// another goroutine reaches the server after a delay that a loaded machine
// makes long, and a fixed sleep would race it.
func waitRunning(t *testing.T, s *server.Governed, text string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		for _, p := range s.Engine().ProcessList.Processes() {
			if strings.Contains(p.Query, text) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no statement with %q ran on the server within a minute", text)
		}
	}
}
