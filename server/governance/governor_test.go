package governance

import (
	"context"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/ledger"
)

func newGovernor(t *testing.T) *Governor {
	t.Helper()
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	err = l.SetLimits(context.Background(), []ledger.Limit{
		{Analyst: "alice", Database: "shop", Budget: ledger.Amount{Epsilon: 1, Delta: 1e-5}, MaxRelease: ledger.Amount{Epsilon: 0.5}},
		{Analyst: "alice", Database: "web", Budget: ledger.Amount{Epsilon: 1, Delta: 1e-5}, MaxRelease: ledger.Amount{Epsilon: 0.25, Delta: 1e-6}},
		{Analyst: "bob", Database: "shop", Budget: ledger.Amount{Epsilon: 2, Delta: 1e-5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{
		Protected: []ProtectedTable{{Database: "Shop", Table: "Visits", PrivacyUnit: "user_id"}},
		Admins:    []string{"root"},
		Analysts:  []string{"alice", "bob"},
		Ledger:    l,
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ctxOf(user string) *sql.Context {
	sess := sql.NewBaseSessionWithClientServer("localhost", sql.Client{User: user, Address: "localhost"}, 7)
	return sql.NewContext(context.Background(), sql.WithSession(sess))
}

func rel(eps float64) release.Request {
	return release.Request{Function: "SELECT DISTINCT", Database: "shop", Table: "visits", Epsilon: eps, Delta: 1e-7, Mechanism: "policy_gaussian_l2", Query: "SELECT DISTINCT url FROM visits"}
}

func TestGovernorRolesAndTables(t *testing.T) {
	g := newGovernor(t)
	if c, ok := g.PrivacyUnit("shop", "visits"); !ok || c != "user_id" {
		t.Errorf("PrivacyUnit(shop, visits) = %q, %v", c, ok)
	}
	if _, ok := g.PrivacyUnit("shop", "products"); ok {
		t.Error("products is protected")
	}
	for user, want := range map[string]bool{"root": false, "alice": true, "bob": true, "eve": true, "": true} {
		if got := g.Governed(ctxOf(user)); got != want {
			t.Errorf("Governed(%q) = %v", user, got)
		}
	}
	if !g.Governed(nil) {
		t.Error("a nil context is not governed")
	}
	if _, err := New(Options{Admins: []string{"x"}, Analysts: []string{"x"}, Ledger: g.Ledger()}); err == nil {
		t.Error("a user both admin and analyst was accepted")
	}
}

func TestGovernorChecksAndCharges(t *testing.T) {
	g := newGovernor(t)
	alice, root, eve := ctxOf("alice"), ctxOf("root"), ctxOf("eve")
	if err := g.Check(alice, rel(0.5)); err != nil {
		t.Fatal(err)
	}
	if code := testmysql.ErrNo(g.Check(alice, rel(0.6))); code != CodeBudget {
		t.Errorf("over the cap: code %d", code)
	}
	if code := testmysql.ErrNo(g.Check(eve, rel(0.1))); code != CodeNoBudget {
		t.Errorf("unknown user: code %d", code)
	}
	for range 2 {
		if err := g.Charge(alice, rel(0.5)); err != nil {
			t.Fatal(err)
		}
	}
	err := g.Charge(alice, rel(0.5))
	if testmysql.ErrNo(err) != CodeBudget || !strings.Contains(err.Error(), "privacy budget exceeded") {
		t.Errorf("exhausted: %v", err)
	}
	// Administrators are neither checked nor charged.
	if err := g.Check(root, rel(100)); err != nil {
		t.Error(err)
	}
	if err := g.Charge(root, rel(100)); err != nil {
		t.Error(err)
	}
	recs, err := g.Ledger().Audit(ledger.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Analyst != "alice" || recs[0].Connection != 7 || recs[0].Mechanism != "policy_gaussian_l2" ||
		recs[0].Description != "SELECT DISTINCT over shop.visits: SELECT DISTINCT url FROM visits" {
		t.Errorf("audit %+v", recs)
	}
	// A canceled statement is not charged.
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code := testmysql.ErrNo(g.Charge(ctxOf("bob").WithContext(cctx), rel(0.1))); code != mysql.ERQueryInterrupted {
		t.Errorf("canceled charge: code %d", code)
	}
	// After Close nothing is checked or charged.
	g.Close()
	if code := testmysql.ErrNo(g.Charge(ctxOf("bob"), rel(0.1))); code != mysql.ERServerShutdown {
		t.Errorf("charge after Close: code %d", code)
	}
	if code := testmysql.ErrNo(g.Check(ctxOf("bob"), rel(0.1))); code != mysql.ERServerShutdown {
		t.Errorf("check after Close: code %d", code)
	}
}

func TestGovernorBudgetRowsAndCaps(t *testing.T) {
	g := newGovernor(t)
	if err := g.Charge(ctxOf("alice"), rel(0.25)); err != nil {
		t.Fatal(err)
	}
	rows, err := g.BudgetRows(ctxOf("alice"))
	if err != nil {
		t.Fatal(err)
	}
	// analyst, database, budget ε, δ, accounting, spent ε, δ, remaining ε, δ,
	// basic ε, δ, cap ε, δ, releases, last, active.
	if len(rows) != 2 || rows[0][0] != "alice" || rows[0][1] != "shop" || rows[0][4] != "basic" || rows[0][5] != 0.25 || rows[0][7] != 0.75 ||
		rows[0][9] != 0.25 || rows[0][11] != 0.5 || rows[0][12] != nil || rows[0][13] != int64(1) || rows[0][14] == nil || rows[0][15] != int8(1) ||
		rows[1][1] != "web" || rows[1][12] != 1e-6 || rows[1][14] != nil {
		t.Errorf("alice's rows %v", rows)
	}
	if rows, _ := g.BudgetRows(ctxOf("root")); len(rows) != 3 {
		t.Errorf("admin sees %d rows", len(rows))
	}
	if rows, _ := g.BudgetRows(ctxOf("eve")); len(rows) != 0 {
		t.Errorf("eve sees %v", rows)
	}
	if len(BudgetSchema()) != len(rows[0]) {
		t.Errorf("schema has %d columns, rows %d", len(BudgetSchema()), len(rows[0]))
	}
	eps, delta, err := g.maxCaps("alice")
	if err != nil || eps != 0.5 || delta <= 1 {
		t.Errorf("alice's caps: %v, %v, %v (δ uncapped on shop)", eps, delta, err)
	}
	if eps, _, _ := g.maxCaps("bob"); eps <= 1e300 {
		t.Errorf("bob has no cap, got %v", eps)
	}
}

// TestGovernorBounds: a governed release below the ε floor, or outside the
// δ range, is refused with error 1210 naming the setting, before anything
// is charged; administrators are not bound.
func TestGovernorBounds(t *testing.T) {
	g := newGovernor(t)
	for _, c := range []struct {
		eps, delta float64
		setting    string
	}{
		{5e-324, 1e-7, "limits.min_epsilon"},
		{1e-4, 1e-7, "limits.min_epsilon"},
		{0.1, 1e-20, "limits.min_delta"},
		{0.1, 0.5, "limits.max_delta"},
		{0.1, 2e-5, "limits.max_delta"},
	} {
		r := rel(c.eps)
		r.Delta = c.delta
		for _, call := range []func(*sql.Context, release.Request) error{g.Check, g.Charge} {
			err := call(ctxOf("alice"), r)
			if testmysql.ErrNo(err) != mysql.ERWrongArguments || !strings.Contains(err.Error(), c.setting) {
				t.Errorf("ε=%g δ=%g: %v, want 1210 naming %s", c.eps, c.delta, err, c.setting)
			}
		}
	}
	if b, _ := g.Ledger().Balance("alice", "shop"); b.Releases != 0 {
		t.Errorf("refused releases were charged: %+v", b)
	}
	if err := g.Charge(ctxOf("root"), rel(1e-9)); err != nil {
		t.Errorf("admin: %v", err)
	}
	if err := g.Charge(ctxOf("alice"), rel(1e-3)); err != nil {
		t.Errorf("ε at the floor: %v", err)
	}
}
