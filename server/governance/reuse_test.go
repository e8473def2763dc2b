package governance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/ledger"
)

func newReuseGovernor(t *testing.T, r Reuse, protected ...ProtectedTable) *Governor {
	t.Helper()
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	err = l.SetLimits(context.Background(), []ledger.Limit{
		{Analyst: "alice", Database: "shop", Budget: ledger.Amount{Epsilon: 2, Delta: 1e-5}},
		{Analyst: "bob", Database: "shop", Budget: ledger.Amount{Epsilon: 2, Delta: 1e-5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(protected) == 0 {
		protected = []ProtectedTable{{Database: "shop", Table: "visits", PrivacyUnit: "user_id", Source: "file v1"}}
	}
	g, err := New(Options{Protected: protected, Admins: []string{"root"}, Analysts: []string{"alice", "bob"}, Ledger: l, Reuse: r})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func reusable(eps float64, spec string) release.Request {
	r := rel(eps)
	r.Reuse = release.ReuseKey{Spec: spec}
	return r
}

// chargeOrReuse runs one release of spec for user and stores data when it
// is new; it returns whether it was reused and its data.
func chargeOrReuse(t *testing.T, g *Governor, user string, r release.Request, data string) (bool, string) {
	t.Helper()
	u, err := g.ChargeOrReuse(ctxOf(user), []release.Request{r})
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	if u.Reused() {
		var got release.Released
		if err := got.UnmarshalBinary(u.Data); err != nil {
			t.Fatal(err)
		}
		return true, got.Sets[0][0]
	}
	u.Keep(release.Released{Sets: [][]string{{data}}})
	u.Done()
	return false, data
}

func TestReuseScopes(t *testing.T) {
	for _, tc := range []struct {
		reuse          Reuse
		aliceAgain     bool
		bobReusesAlice bool
	}{
		{Reuse{}, false, false},
		{DefaultReuse(), true, false},
		{Reuse{Enabled: true, Window: time.Hour, Scope: ScopeDatabase}, true, true},
	} {
		g := newReuseGovernor(t, tc.reuse)
		r := reusable(0.25, "spec A")
		if reused, _ := chargeOrReuse(t, g, "alice", r, "first"); reused {
			t.Fatalf("%+v: the first release was reused", tc.reuse)
		}
		reused, got := chargeOrReuse(t, g, "alice", r, "second")
		if reused != tc.aliceAgain || (reused && got != "first") {
			t.Errorf("%+v: alice again: reused %v, %q", tc.reuse, reused, got)
		}
		reused, got = chargeOrReuse(t, g, "bob", r, "bob's")
		if reused != tc.bobReusesAlice || (reused && got != "first") {
			t.Errorf("%+v: bob: reused %v, %q", tc.reuse, reused, got)
		}
		// Another specification, or no specification: a new release.
		if reused, _ := chargeOrReuse(t, g, "alice", reusable(0.25, "spec B"), "b"); reused {
			t.Errorf("%+v: another specification reused", tc.reuse)
		}
		if reused, _ := chargeOrReuse(t, g, "alice", reusable(0.25, ""), "none"); reused {
			t.Errorf("%+v: a release without specification reused", tc.reuse)
		}
		// Fresh asks for a new release.
		fresh := r
		fresh.Reuse.Fresh = true
		if reused, _ := chargeOrReuse(t, g, "alice", fresh, "fresh"); reused {
			t.Errorf("%+v: a fresh release was reused", tc.reuse)
		}
		if err := g.Ledger().Verify(); err != nil {
			t.Error(err)
		}
	}
}

// TestReuseCheckAndBounds: Check lets a reusable release through on a spent
// budget; the configured bounds refuse it whether or not it is reusable.
func TestReuseCheckAndBounds(t *testing.T) {
	g := newReuseGovernor(t, DefaultReuse())
	alice := ctxOf("alice")
	r := reusable(2, "spec")
	chargeOrReuse(t, g, "alice", r, "x")
	other := reusable(0.5, "other")
	if code := testmysql.ErrNo(g.Check(alice, other)); code != CodeBudget {
		t.Errorf("another release on a spent budget: code %d", code)
	}
	if err := g.Check(alice, r); err != nil {
		t.Errorf("a reusable release on a spent budget: %v", err)
	}
	if reused, got := chargeOrReuse(t, g, "alice", r, "y"); !reused || got != "x" {
		t.Errorf("reuse on a spent budget: %v %q", reused, got)
	}
	tooBig := r
	tooBig.Delta = 0.5
	if err := g.Check(alice, tooBig); err == nil {
		t.Error("δ above the ceiling passed Check")
	}
	if _, err := g.ChargeOrReuse(alice, []release.Request{tooBig}); err == nil {
		t.Error("δ above the ceiling was reused")
	}
	// Administrators are not governed: nothing stored, nothing reused.
	u, err := g.ChargeOrReuse(ctxOf("root"), []release.Request{r})
	if err != nil || u.Reused() || u.Store != nil {
		t.Errorf("admin: %+v %v", u, err)
	}
}

// TestReuseGenerations: a new load source is a new table version, so a new
// release; the same source (a restart) keeps it; an unknown source never
// does.
func TestReuseGenerations(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetLimits(context.Background(), []ledger.Limit{{Analyst: "alice", Database: "shop", Budget: ledger.Amount{Epsilon: 10, Delta: 1e-5}}}); err != nil {
		t.Fatal(err)
	}
	start := func(source, unit string) *Governor {
		g, err := New(Options{Protected: []ProtectedTable{{Database: "shop", Table: "visits", PrivacyUnit: unit, Source: source}},
			Analysts: []string{"alice"}, Ledger: l, Reuse: DefaultReuse()})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	r := reusable(0.25, "spec")
	steps := []struct {
		source, unit string
		reused       bool
	}{
		{"file v1", "user_id", false},
		{"file v1", "user_id", true},  // restart
		{"file v2", "user_id", false}, // reload
		{"file v2", "user_id", true},
		{"file v2", "USER_ID", true},  // the same unit
		{"file v2", "account", false}, // another privacy unit
		{"", "account", false},        // unknown source
		{"", "account", false},        // … at every start
		{"file v2", "account", false}, // a known source after an unknown one: a new generation
		{"file v2", "account", true},
	}
	for i, st := range steps {
		g := start(st.source, st.unit)
		if reused, _ := chargeOrReuse(t, g, "alice", r, "data"); reused != st.reused {
			t.Errorf("step %d (%q, %s): reused %v, want %v", i, st.source, st.unit, reused, st.reused)
		}
	}
}

func TestReuseValidate(t *testing.T) {
	for _, bad := range []Reuse{{Enabled: true}, {Enabled: true, Window: time.Hour, Scope: "world"}} {
		if bad.validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	for _, ok := range []Reuse{{}, DefaultReuse(), {Enabled: true, Window: time.Second, Scope: ScopeDatabase}} {
		if err := ok.validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestAuditRows(t *testing.T) {
	g := newReuseGovernor(t, DefaultReuse())
	r := reusable(0.25, "spec")
	chargeOrReuse(t, g, "alice", r, "x")
	chargeOrReuse(t, g, "alice", r, "x")
	chargeOrReuse(t, g, "bob", r, "y")
	rows, err := g.AuditRows(ctxOf("alice"))
	if err != nil || len(rows) != 2 {
		t.Fatalf("alice: %v %v", rows, err)
	}
	a, b := rows[0], rows[1]
	// seq, time, account, database_name, table_name, operation, statement,
	// statement_sha256, epsilon, delta, mechanism, reused, reused_seq,
	// charged_epsilon, charged_delta, rho, threshold_fail, connection_id
	if a[0] != uint64(1) || a[2] != "alice" || a[3] != "shop" || a[4] != "visits" || a[5] != "SELECT DISTINCT" ||
		a[6] != "SELECT DISTINCT url FROM visits" || a[7] != nil || a[8] != 0.25 || a[11] != int8(0) || a[12] != nil ||
		a[13] != 0.25 || a[17] != uint32(7) {
		t.Errorf("charged record: %v", a)
	}
	if b[11] != int8(1) || b[12] != uint64(1) || b[13] != 0.0 || b[14] != 0.0 || b[8] != 0.25 {
		t.Errorf("reused record: %v", b)
	}
	if len(rows[0]) != len(AuditSchema()) {
		t.Errorf("%d values for %d columns", len(rows[0]), len(AuditSchema()))
	}
	all, err := g.AuditRows(ctxOf("root"))
	if err != nil || len(all) != 3 || all[2][2] != "bob" {
		t.Errorf("admin: %v %v", all, err)
	}
	if none, err := g.AuditRows(ctxOf("eve")); err != nil || len(none) != 0 {
		t.Errorf("an unknown account: %v %v", none, err)
	}
}

// TestReusePreview: DP_EXPLAIN's budget rows name a release that would be
// reused and charge nothing for it, even on a spent budget; a new release
// is charged and says the reuse window.
func TestReusePreview(t *testing.T) {
	g := newReuseGovernor(t, DefaultReuse())
	alice := ctxOf("alice")
	facts := func(reqs ...release.Request) map[string]string {
		t.Helper()
		fs, err := g.Preview(alice, reqs)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, f := range fs {
			m[f.Name] = f.Value
		}
		return m
	}
	r := reusable(2, "spec")
	if f := facts(r); f["shop.charge"] == "" || f["shop.reuse_window"] != "24h0m0s" || f["shop.reused"] != "" {
		t.Errorf("before the release: %v", f)
	}
	chargeOrReuse(t, g, "alice", r, "x")
	if f := facts(r); f["charge"] != "none" || f["shop.charge"] != "" || !strings.HasSuffix(f["shop.reused"], "UTC (audit record 1)") {
		t.Errorf("a release that would be reused: %v", f)
	}
	// With another release the statement is charged for that one only
	// (and refused: the budget is spent).
	if f := facts(r, reusable(0.5, "other")); f["shop.reused"] == "" || !strings.HasPrefix(f["shop.charge"], "ε=0.5 ") || f["shop.refused"] == "" {
		t.Errorf("a reused and a new release: %v", f)
	}
	fresh := r
	fresh.Reuse.Fresh = true
	if f := facts(fresh); f["shop.reused"] != "" || !strings.HasPrefix(f["shop.charge"], "ε=2 ") {
		t.Errorf("dp_reuse = OFF: %v", f)
	}
}

// ctxOfSession is ctxOf for session id.
func ctxOfSession(user string, id uint32) *sql.Context {
	sess := sql.NewBaseSessionWithClientServer("localhost", sql.Client{User: user, Address: "localhost"}, id)
	return sql.NewContext(context.Background(), sql.WithSession(sess))
}

// TestReuseConcurrentIdentical: an identical request that arrives while a
// release is being made waits for it and reuses it, at no charge, instead
// of paying for a second one; when the first fails, the waiter is made and
// charged itself; a waiter whose statement ends stops waiting; a second
// identical release of the same session does not wait for itself.
func TestReuseConcurrentIdentical(t *testing.T) {
	g := newReuseGovernor(t, DefaultReuse())
	r := reusable(0.5, "spec A")
	first, err := g.ChargeOrReuse(ctxOfSession("alice", 1), []release.Request{r})
	if err != nil || first.Reused() {
		t.Fatalf("first: %v reused=%v", err, first.Reused())
	}
	type answer struct {
		u   *release.Reuse
		err error
	}
	got := make(chan answer, 1)
	go func() {
		u, err := g.ChargeOrReuse(ctxOfSession("alice", 2), []release.Request{r})
		got <- answer{u, err}
	}()
	select {
	case a := <-got:
		t.Fatalf("the identical request did not wait: %+v", a)
	case <-time.After(100 * time.Millisecond):
	}
	// The same session (a second identical release of its statement) goes on.
	same, err := g.ChargeOrReuse(ctxOfSession("alice", 1), []release.Request{r})
	if err != nil || same.Reused() {
		t.Fatalf("same session: %v reused=%v", err, same.Reused())
	}
	same.Done()
	first.Keep(release.Released{Sets: [][]string{{"kept"}}})
	first.Done()
	a := <-got
	if a.err != nil || !a.u.Reused() {
		t.Fatalf("the waiter: %v reused=%v", a.err, a.u.Reused())
	}
	bal, _ := g.Ledger().Balance("alice", "shop")
	if bal.Releases != 2 { // first and same; not the waiter
		t.Fatalf("%d releases charged, want 2", bal.Releases)
	}

	// A first release that fails (no Keep): the waiter is made and charged.
	r2 := reusable(0.25, "spec B")
	failing, err := g.ChargeOrReuse(ctxOfSession("alice", 1), []release.Request{r2})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		u, err := g.ChargeOrReuse(ctxOfSession("alice", 2), []release.Request{r2})
		got <- answer{u, err}
	}()
	time.Sleep(50 * time.Millisecond)
	failing.Done()
	failing.Done() // a second call does nothing
	if a := <-got; a.err != nil || a.u.Reused() {
		t.Fatalf("after a failed first release: %v reused=%v", a.err, a.u != nil && a.u.Reused())
	} else {
		a.u.Done()
	}

	// A waiter whose statement ends stops waiting.
	r3 := reusable(0.125, "spec C")
	owner, err := g.ChargeOrReuse(ctxOfSession("alice", 1), []release.Request{r3})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	wctx := ctxOfSession("alice", 3).WithContext(cctx)
	go func() {
		u, err := g.ChargeOrReuse(wctx, []release.Request{r3})
		got <- answer{u, err}
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if a := <-got; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("a cancelled waiter: %v", a.err)
	}
	owner.Done()
}
