package engine_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"

	sqle "github.com/dolthub/go-mysql-server"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testengine"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/ngrams"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// governedEngine returns an engine set up as the governed server will be:
// its Governor protects mydb.notes (privacy unit user_id) and governs the
// user alice, the planner's analyst rules are installed, and notes has the
// storage scan guard that lets analysts read it only inside a release.
func governedEngine(t *testing.T) (*sqle.Engine, *testengine.FakeGov) {
	t.Helper()
	reads := new(atomic.Int64)
	gov := &testengine.FakeGov{
		Analysts: map[string]bool{"alice": true},
		Units:    map[string]string{"mydb.notes": "user_id"},
		Reads:    reads,
	}
	seeded := func() *rand.Rand { return securerand.NewSeeded(42) }
	e, err := engine.New(engine.Config{
		Provider:  testengine.CountingProvider{Provider: testengine.NgramsProvider(t, release.ScanGuard(gov, "mydb", "notes")), Reads: reads},
		Functions: functions.Config{Rand: seeded, Governor: gov},
		Rules:     planner.PolicyRules(gov, planner.WithRand(seeded)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, gov
}

// query runs q as user in a fresh session (current database mydb) with
// q as the context's query text, as the server sets it.
func query(e *sqle.Engine, user, q string) ([]sql.Row, error) {
	ctx := engine.NewContext(context.Background(), user, "mydb").WithQuery(q)
	_, it, _, err := e.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	return sql.RowIterToRows(ctx, it)
}

func TestNgramsGoverned(t *testing.T) {
	e, gov := governedEngine(t)
	const ok = "SELECT * FROM DP_NGRAMS('notes', 'body', 'USER_ID', 'epsilon=4, delta=1e-7, eta=1e-9, alpha=6')"

	// The privacy unit must be the declared one.
	_, err := query(e, "alice", "SELECT * FROM DP_NGRAMS('notes', 'body', 'uname')")
	want := errs("DP_NGRAMS command denied to user 'alice'@'localhost' for table 'notes': the privacy unit of the protected table mydb.notes is the column 'user_id'; pass 'user_id' as the privacy_unit_column argument", 1142, "42000")
	if err == nil || err.Error() != want {
		t.Fatalf("wrong privacy unit: %v, want %s", err, want)
	}
	if c, ch, r := gov.Counts(); c+ch+int(r) != 0 {
		t.Fatalf("refused call: %d checks, %d charges, %d scans", c, ch, r)
	}

	// A governed release: checked at plan time, charged before the scan.
	rows, err := query(e, "alice", ok)
	if err != nil || len(rows) != len(allNotes) {
		t.Fatalf("governed release: %d rows, %v", len(rows), err)
	}
	wantRel := release.Request{Function: "DP_NGRAMS", Database: "mydb", Table: "notes", Epsilon: 4, Delta: 1e-7, Mechanism: string(ngrams.Defaults().Mechanism), Query: ok}
	wantOpts := ngrams.Defaults()
	wantOpts.Epsilon, wantOpts.Delta, wantOpts.Alpha, wantOpts.Eta = 4, 1e-7, setunion.Float(6), 1e-9
	if c, err := accounting.Ngrams(wantOpts); err != nil {
		t.Fatal(err)
	} else {
		wantRel.Cost = c
	}
	gov.Mu.Lock()
	// The reuse specification: the scan's and the options'.
	for _, rs := range [][]release.Request{gov.Checks, gov.Charges} {
		for i := range rs {
			if spec := rs[i].Reuse.Spec; !strings.HasPrefix(spec, "ngrams scan") || !strings.Contains(spec, "\x04mydb\x05notes") || !strings.Contains(spec, `"Eta":1e-9`) {
				t.Errorf("reuse specification %q", spec)
			}
			rs[i].Reuse = release.ReuseKey{}
		}
	}
	if len(gov.Checks) != 1 || gov.Checks[0] != wantRel {
		t.Errorf("checks %+v, want one %+v", gov.Checks, wantRel)
	}
	if len(gov.Charges) != 1 || gov.Charges[0] != wantRel {
		t.Errorf("charges %+v, want one %+v", gov.Charges, wantRel)
	}
	if len(gov.ReadsAtCharge) != 1 || gov.ReadsAtCharge[0] != 0 {
		t.Errorf("scans started before the charge: %v", gov.ReadsAtCharge)
	}
	gov.Mu.Unlock()
	if _, _, r := gov.Counts(); r != 1 {
		t.Errorf("%d scans, want 1", r)
	}

	// The analyst's raw reads stay refused (planner guard); a scan outside
	// a release is refused by the storage guard too, which DP_NGRAMS's
	// scan passes.
	if _, err := query(e, "alice", "SELECT body FROM notes LIMIT 1"); err == nil || !strings.Contains(err.Error(), "errno 1142") {
		t.Fatalf("raw read: %v", err)
	}
	gov.Counts()

	// Over budget at plan time: nothing is charged or read.
	gov.CheckErr = errors.New("privacy budget exceeded: test")
	if _, err := query(e, "alice", ok); err == nil || !strings.Contains(err.Error(), "privacy budget exceeded: test") {
		t.Fatalf("Check refusal: %v", err)
	}
	if c, ch, r := gov.Counts(); c != 1 || ch != 0 || r != 0 {
		t.Fatalf("Check refusal: %d checks, %d charges, %d scans", c, ch, r)
	}
	gov.CheckErr = nil

	// The charge fails: its error and nothing else, nothing read.
	gov.ChargeErr = errors.New("ledger: disk full")
	rows, err = query(e, "alice", ok)
	if err == nil || err.Error() != "ledger: disk full" || rows != nil {
		t.Fatalf("Charge refusal: %v, %v", rows, err)
	}
	gov.Mu.Lock()
	attempts := gov.ReadsAtCharge
	gov.Mu.Unlock()
	if c, ch, r := gov.Counts(); c != 1 || ch != 0 || r != 0 || len(attempts) != 1 {
		t.Fatalf("Charge refusal: %d checks, %d charges, %d scans, %d attempts", c, ch, r, len(attempts))
	}
	gov.ChargeErr = nil

	// One charge per DP_NGRAMS call of a query, however often the executor
	// builds its iterator; EXPLAIN checks but neither charges nor reads.
	for q, want := range map[string][3]int{
		"SELECT COUNT(*) FROM glossary gl, DP_NGRAMS('notes', 'body', 'user_id') g":                                                     {1, 1, 1},
		"SELECT gl.term, g.n FROM glossary gl LEFT JOIN DP_NGRAMS('notes', 'body', 'user_id') g ON g.ngram = gl.term":                   {1, 1, 1},
		"SELECT (SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id')) FROM glossary":                                             {1, 1, 1},
		"SELECT a.ngram FROM DP_NGRAMS('notes', 'body', 'user_id') a JOIN DP_NGRAMS('notes', 'body', 'user_id') b ON a.ngram = b.ngram": {2, 2, 2},
		"EXPLAIN SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id')":                                                                   {1, 0, 0},
	} {
		if _, err := query(e, "alice", q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if c, ch, r := gov.Counts(); c != want[0] || ch != want[1] || int(r) != want[2] {
			t.Errorf("%s: %d checks, %d charges, %d scans; want %v", q, c, ch, r, want)
		}
	}

	// Prepared with ?: nothing is checked at PREPARE (no values yet); the
	// EXECUTE checks and charges once.
	// One session for the prepared statement and its variables.
	ctx := engine.NewContext(context.Background(), "alice", "mydb")
	for _, q := range []string{
		"PREPARE p FROM 'SELECT COUNT(*) FROM DP_NGRAMS(?, ?, ?, ?)'",
		"SET @t = 'notes', @c = 'body', @u = 'user_id', @o = 'epsilon=0.25'",
		"EXECUTE p USING @t, @c, @u, @o",
	} {
		ctx = ctx.WithQuery(q)
		_, it, _, err := e.Query(ctx, q)
		if err == nil {
			_, err = sql.RowIterToRows(ctx, it)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		c, ch, _ := gov.Counts()
		if strings.HasPrefix(q, "EXECUTE") {
			if c != 1 || ch != 1 {
				t.Errorf("EXECUTE: %d checks, %d charges", c, ch)
			}
		} else if c+ch != 0 {
			t.Errorf("%s: %d checks, %d charges", q, c, ch)
		}
	}

	// Not governed (an admin), or not protected: no checks, no charges, and
	// any privacy-unit column.
	for _, c := range []struct{ user, q string }{
		{"admin", "SELECT * FROM DP_NGRAMS('notes', 'body', 'uname')"},
		{"alice", "SELECT * FROM DP_NGRAMS('glossary', 'meaning', 'term')"},
		{"alice", "SELECT * FROM DP_NGRAMS('visits', 'item', 'uname')"},
	} {
		if _, err := query(e, c.user, c.q); err != nil {
			t.Fatalf("%s as %s: %v", c.q, c.user, err)
		}
		if n, ch, _ := gov.Counts(); n+ch != 0 {
			t.Errorf("%s as %s: %d checks, %d charges", c.q, c.user, n, ch)
		}
	}
}

// TestNgramsPrivileges: DP_NGRAMS reads only tables the account may SELECT
// from (accounts enabled).
func TestNgramsPrivileges(t *testing.T) {
	e, err := engine.New(engine.Config{
		Provider:  testengine.NgramsProvider(t),
		Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(42) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	mdb := e.Analyzer.Catalog.MySQLDb
	mdb.SetPersister(&mysql_db.NoopPersister{})
	mdb.AddRootAccount()
	for _, q := range []string{
		"CREATE USER 'reader'@'localhost'",
		"GRANT SELECT ON mydb.notes TO 'reader'@'localhost'",
		"CREATE USER 'writer'@'localhost'",
		"GRANT INSERT ON mydb.notes TO 'writer'@'localhost'",
	} {
		if _, err := query(e, "root", q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	q := "SELECT * FROM DP_NGRAMS('mydb.notes', 'body', 'user_id', " + ng4 + ")"
	if rows, err := query(e, "reader", q); err != nil || len(rows) != len(allNotes) {
		t.Fatalf("reader: %d rows, %v", len(rows), err)
	}
	_, err = query(e, "writer", q)
	want := errs("SELECT command denied to user 'writer'@'localhost' for table 'notes': DP_NGRAMS reads only tables the account may SELECT from", 1142, "42000")
	if err == nil || err.Error() != want {
		t.Fatalf("writer: %v, want %s", err, want)
	}
	_, err = query(e, "reader", "SELECT * FROM DP_NGRAMS('visits', 'item', 'user_id')")
	if err == nil || !strings.Contains(err.Error(), "Access denied for user 'reader'@'localhost' to table 'visits'") {
		t.Fatalf("reader on visits: %v", err)
	}
}
