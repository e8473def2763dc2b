package planner_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/lookup"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// publicGov is fakeGov with mydb.secrets protected too and mydb.pages
// declared public (mydb.other is neither: readable, but not public).
type publicGov struct{ fakeGov }

func (g *publicGov) PrivacyUnit(db, table string) (string, bool) {
	if strings.EqualFold(db, "mydb") && strings.EqualFold(table, "secrets") {
		return "user_id", true
	}
	return g.fakeGov.PrivacyUnit(db, table)
}

func (g *publicGov) Public(db, table string) bool {
	return strings.EqualFold(db, "mydb") && strings.EqualFold(table, "pages")
}

func (g *publicGov) Check(ctx *sql.Context, r release.Request) error {
	if !g.Governed(ctx) {
		return nil
	}
	return g.fakeGov.Check(ctx, r)
}

// newPublicEngine serves visits (300 users: "common", "only_<u>", and
// "even" for even users; g = u mod 3), secrets (protected, the same
// shape), pages (public, (name, n, user_id): (common, 1, 1), (public, 2,
// 1), (even, 3, 2), (NULL, 4, 2))
// and other (unprotected, undeclared: (common)).
func newPublicEngine(t *testing.T, gov release.Governor, opts ...planner.PolicyOption) *sqle.Engine {
	t.Helper()
	table := func(name string) *storage.Table {
		b, err := storage.NewTableBuilder(name, []storage.Column{
			{Name: "user_id", Type: storage.BigInt}, {Name: "item", Type: storage.Text}, {Name: "g", Type: storage.BigInt}})
		if err != nil {
			t.Fatal(err)
		}
		for u := int64(0); u < 300; u++ {
			for _, it := range []string{"common", "only_" + string(rune('a'+u%26)) + strings.Repeat("x", int(u))} {
				if err := b.Append(u, it, u%3); err != nil {
					t.Fatal(err)
				}
			}
			if u%2 == 0 {
				if err := b.Append(u, "even", u%3); err != nil {
					t.Fatal(err)
				}
			}
		}
		tb, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return tb.WithRowCounts(storage.HiddenCounts).WithScanGuard(release.ScanGuard(gov, "mydb", name))
	}
	pb, err := storage.NewTableBuilder("pages", []storage.Column{{Name: "name", Type: storage.Text}, {Name: "n", Type: storage.BigInt}, {Name: "user_id", Type: storage.BigInt}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][3]any{{"common", int64(1), int64(1)}, {"public", int64(2), int64(1)}, {"even", int64(3), int64(2)}, {nil, int64(4), int64(2)}} {
		if err := pb.Append(r[0], r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
	pages, err := pb.Build()
	if err != nil {
		t.Fatal(err)
	}
	ob, _ := storage.NewTableBuilder("other", []storage.Column{{Name: "name", Type: storage.Text}})
	if err := ob.Append("common"); err != nil {
		t.Fatal(err)
	}
	other, _ := ob.Build()
	db := storage.NewDatabase("mydb")
	for _, tb := range []*storage.Table{table("visits"), table("secrets"), pages, other} {
		if err := db.AddTable(tb); err != nil {
			t.Fatal(err)
		}
	}
	pro, err := storage.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(0)
	rnd := func() *rand.Rand { seed++; return securerand.NewSeeded(seed) }
	e, err := engine.New(engine.Config{Provider: pro, Functions: functions.Config{Rand: rnd, Governor: gov},
		Rules: planner.PolicyRules(gov, append([]planner.PolicyOption{planner.WithRand(rnd)}, opts...)...)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestPublicLookups: IN and EXISTS over a public table filter a release
// row by row, with SQL's three-valued logic, each release charged once.
func TestPublicLookups(t *testing.T) {
	cases := []struct{ q, want string }{
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages)", "common|even"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages WHERE n = 1)", "common"},
		// The public column's collation (utf8mb4_0900_bin): COMMON ≠ common.
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT DISTINCT UPPER(name) FROM pages WHERE n < 3)", ""},
		{"SELECT DISTINCT item FROM visits WHERE UPPER(item) IN (SELECT DISTINCT UPPER(name) FROM pages WHERE n < 3)", "common"},
		{"SELECT DISTINCT item FROM visits WHERE item NOT IN (SELECT name FROM pages WHERE n = 1)", "even"},
		// NULL in the set: NOT IN is NULL for every non-member.
		{"SELECT DISTINCT item FROM visits WHERE item NOT IN (SELECT name FROM pages)", ""},
		{"SELECT DISTINCT item FROM visits WHERE item NOT IN (SELECT name FROM pages WHERE name IS NOT NULL AND n <> 3)", "even"},
		// An empty set: IN is false, NOT IN true.
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages WHERE n > 10)", ""},
		{"SELECT DISTINCT item FROM visits WHERE item NOT IN (SELECT name FROM pages WHERE n > 10)", "common|even"},
		{"SELECT DISTINCT v.item FROM visits v WHERE EXISTS (SELECT 1 FROM pages p WHERE p.name = v.item AND p.n = 1)", "common"},
		{"SELECT DISTINCT v.item FROM visits v WHERE NOT EXISTS (SELECT * FROM pages p WHERE v.item = p.name AND p.n = 1)", "even"},
		{"SELECT DISTINCT item FROM visits WHERE NOT EXISTS (SELECT name FROM pages WHERE pages.name = LOWER(visits.item))", ""},
		{"SELECT DISTINCT item FROM visits WHERE g IN (SELECT n FROM pages WHERE n < 3) AND item = 'common'", "common"},
		{"SELECT DISTINCT g FROM visits WHERE g IN (SELECT n - 0.5 + 0.5 FROM pages)", "1|2"},
		{"SELECT item FROM visits WHERE item IN (SELECT name FROM pages) GROUP BY item", "common|even"},
		{"SELECT DP_SET_UNION(item, user_id) FROM visits WHERE item IN (SELECT name FROM pages WHERE n = 3)", `["even"]`},
		{"SELECT DISTINCT item FROM visits WHERE item = 'common' OR item IN (SELECT name FROM pages WHERE n = 3)", "common|even"},
	}
	for _, c := range cases {
		gov := &publicGov{fakeGov{budget: 100}}
		e := newPublicEngine(t, gov)
		rows, err := query(t, e, "analyst", c.q)
		answeredCharged(t, &gov.fakeGov, c.q, rows, err, c.want, 1)
	}
}

// TestPublicLookupRefusals: every other use of a subquery in a release —
// over a protected table, correlated, not a declared public table, not an
// equality, not deterministic, ordered or limited — is refused with 1142
// before any charge and before any row is read.
func TestPublicLookupRefusals(t *testing.T) {
	cases := []struct{ q, want string }{
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT item FROM secrets)", "reads the protected table mydb.secrets"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT item FROM visits WHERE g = 1)", "reads the protected table mydb.visits"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT DISTINCT item FROM visits WHERE g = 1)", "reads the protected table mydb.visits,"}, // the inner DISTINCT is itself a release
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT DISTINCT item FROM secrets)", "protected table"},
		{"SELECT DISTINCT v.item FROM visits v WHERE EXISTS (SELECT 1 FROM secrets s WHERE s.item = v.item)", "reads the protected table mydb.secrets"},
		{"SELECT DISTINCT v.item FROM visits v WHERE EXISTS (SELECT 1 FROM secrets s WHERE s.user_id = v.user_id AND s.item = 'even')", "reads the protected table mydb.secrets"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM other)", "declares public"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages WHERE n = visits.g)", "correlated"},
		{"SELECT DISTINCT v.item FROM visits v WHERE EXISTS (SELECT 1 FROM pages p WHERE p.name > v.item)", "one equality"},
		{"SELECT DISTINCT v.item FROM visits v WHERE EXISTS (SELECT 1 FROM pages p WHERE p.name = v.item OR p.n = v.g)", "one equality"},
		{"SELECT DISTINCT v.item FROM visits v WHERE EXISTS (SELECT 1 FROM pages p WHERE p.name = v.item AND p.n = v.g)", "one equality"},
		{"SELECT DISTINCT v.item FROM visits v WHERE EXISTS (SELECT 1 FROM pages p WHERE p.n = 1)", "must match a public column"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages ORDER BY n LIMIT 1)", "ORDER BY or LIMIT"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages WHERE RAND() < 0.5)", "not deterministic"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages WHERE NOW() > '2000-01-01')", "NOW"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT p.name FROM pages p JOIN other o ON o.name = p.name)", "no join"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM (SELECT name FROM pages) d)", "derived table"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT MAX(name) FROM pages)", "GROUP BY"},
		{"SELECT DISTINCT item FROM visits WHERE g IN (SELECT name FROM pages)", "compares number"},
		{"SELECT DISTINCT item FROM visits WHERE 'common' IN (SELECT name FROM pages)", "must use the table's columns"},
		{"SELECT DISTINCT item FROM visits WHERE item = (SELECT name FROM pages WHERE n = 1)", "not a public lookup"},
		{"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages WHERE name IN (SELECT item FROM secrets))", "protected table"},
		// Joins with protected tables stay refused by the guard.
		{"SELECT DISTINCT v.item FROM visits v JOIN secrets s ON s.item = v.item", "joins the protected tables mydb.secrets and mydb.visits"},
		{"SELECT DISTINCT v.item FROM visits v JOIN visits w ON w.user_id = v.user_id", "joins the protected table mydb.visits with itself"},
	}
	for _, c := range cases {
		gov := &publicGov{fakeGov{budget: 100}}
		e := newPublicEngine(t, gov)
		_, err := query(t, e, "analyst", c.q)
		refusedUncharged(t, &gov.fakeGov, c.q, err, c.want)
	}
}

// TestPublicLookupLimit: a public side beyond the lookup limits fails
// before anything is charged, with an error naming the limit.
func TestPublicLookupLimit(t *testing.T) {
	gov := &publicGov{fakeGov{budget: 100}}
	e := newPublicEngine(t, gov, planner.WithLookupLimits(lookup.Limits{MaxRows: 3}))
	_, err := query(t, e, "analyst", "SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages)")
	if err == nil || !strings.Contains(err.Error(), "more than 3 rows") {
		t.Errorf("got %v, want the row limit", err)
	}
	if len(gov.charged) != 0 {
		t.Errorf("charged %d", len(gov.charged))
	}
	if _, err := query(t, e, "analyst", "SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages WHERE n < 3)"); err != nil {
		t.Errorf("within the limit: %v", err)
	}
}

// TestPublicLookupWithoutDeclaration: a governor that declares no table
// public allows no lookup (fail closed).
func TestPublicLookupWithoutDeclaration(t *testing.T) {
	gov := &fakeGov{budget: 100}
	e := newPolicyEngine(t, gov)
	_, err := query(t, e, "analyst", "SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages)")
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Num != release.ERTableAccessDenied {
		t.Errorf("got %v, want 1142", err)
	}
}

// TestPublicJoins: T JOIN P ON P.c = T.col (inner, in either order, and
// LEFT) with keys, filters, GROUP BY keys and aggregates over both tables.
func TestPublicJoins(t *testing.T) {
	cases := []struct{ q, want string }{
		{"SELECT DISTINCT v.item, p.n FROM visits v JOIN pages p ON p.name = v.item ORDER BY 1", "common,1|even,3"},
		{"SELECT DISTINCT p.n FROM pages p JOIN visits v ON v.item = p.name WHERE v.g = 1", "1|3"},
		{"SELECT DISTINCT v.item, p.n FROM visits v JOIN pages p ON p.name = v.item AND p.n > 1", "even,3"},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name = v.item WHERE p.n < 2 OR v.item = 'even'", "common|even"},
		{"SELECT DISTINCT v.item, p.n FROM visits v LEFT JOIN pages p ON p.name = v.item AND p.n = 1 ORDER BY v.item", "common,1|even,<nil>"},
		{"SELECT DISTINCT v.item FROM visits v LEFT JOIN pages p ON p.name = v.item WHERE p.n IS NULL", ""},
		{"SELECT p.n FROM visits v JOIN pages p ON p.name = v.item GROUP BY p.n", "1|3"},
		{"SELECT DP_SET_UNION(CONCAT(v.item, '/', p.n), v.user_id) FROM visits v JOIN pages p ON p.name = v.item", `["common/1", "even/3"]`},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name = v.item WHERE p.name IN (SELECT name FROM pages WHERE n = 3)", "even"},
		{"SELECT DISTINCT UPPER(p.name) AS u FROM visits v JOIN pages p ON p.name = LOWER(v.item) ORDER BY u DESC", "EVEN|COMMON"},
	}
	// Two joins that differ only by their public conditions are two
	// releases, not one (the statement's release memo).
	gov := &publicGov{fakeGov{budget: 100}}
	q := "SELECT DISTINCT v.item, p.n FROM visits v JOIN pages p ON p.name = v.item AND p.n = 1 UNION ALL SELECT DISTINCT v.item, p.n FROM visits v JOIN pages p ON p.name = v.item AND p.n = 3 ORDER BY 2"
	if rows, err := query(t, newPublicEngine(t, gov), "analyst", q); err != nil || flat(rows) != "common,1|even,3" || len(gov.charged) != 2 {
		t.Errorf("%s: %q %v, %d charges", q, flat(rows), err, len(gov.charged))
	}
	for _, c := range cases {
		gov := &publicGov{fakeGov{budget: 100}}
		e := newPublicEngine(t, gov)
		rows, err := query(t, e, "analyst", c.q)
		answeredCharged(t, &gov.fakeGov, c.q, rows, err, c.want, 1)
	}
	// Aggregates count joined rows, one per matching protected row: the
	// same release (same seed) as the equivalent filter over T alone.
	run := func(q string) string {
		gov := &publicGov{fakeGov{budget: 100}}
		rows, err := query(t, newPublicEngine(t, gov), "analyst", q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return flat(rows)
	}
	joined := run("SELECT /*+ SET_VAR(dp_contribution_bounds = '0,10') */ v.item, COUNT(*) AS c, SUM(p.n) FROM visits v JOIN pages p ON p.name = v.item GROUP BY v.item ORDER BY v.item")
	alone := run("SELECT /*+ SET_VAR(dp_contribution_bounds = '0,10') */ item, COUNT(*) AS c, SUM(CASE item WHEN 'common' THEN 1 ELSE 3 END) FROM visits WHERE item IN ('common', 'even') GROUP BY item ORDER BY item")
	if joined != alone || joined == "" {
		t.Errorf("aggregates over the join %q, over the table alone %q", joined, alone)
	}
}

// TestPublicJoinRefusals: joins with protected tables, undeclared tables,
// non-equalities, outer joins the wrong way round and non-unique keys are
// refused with 1142 before any charge.
func TestPublicJoinRefusals(t *testing.T) {
	cases := []struct{ q, want string }{
		{"SELECT DISTINCT v.item FROM visits v JOIN secrets s ON s.item = v.item", "joins the protected tables mydb.secrets and mydb.visits; a private release reads one protected table"},
		{"SELECT DISTINCT v.item FROM visits v JOIN visits w ON w.item = v.item", "joins the protected table mydb.visits with itself"},
		{"SELECT DISTINCT v.item FROM visits v JOIN other o ON o.name = v.item", "joined with mydb.other, which the server's configuration does not declare public"},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name > v.item", "neither public_table.c = T.col"},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name = v.item OR p.n = 1", "neither public_table.c = T.col"},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.n = v.g AND p.name = v.item", "neither public_table.c = T.col"},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.n = 1", "no equality"},
		{"SELECT DISTINCT v.item FROM visits v, pages p WHERE p.name = v.item", "this join is not one a private release takes; a private release may join its protected table T with one table"},
		// The public side first: a GROUP BY over public keys needs
		// aggregates (publickeys_test.go).
		{"SELECT DISTINCT v.item FROM pages p LEFT JOIN visits v ON p.name = v.item", "add COUNT(*)"},
		{"SELECT DISTINCT v.item FROM visits v RIGHT JOIN pages p ON p.name = v.item", "add COUNT(*)"},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name = v.item JOIN secrets s ON s.user_id = v.user_id", "joins the protected tables mydb.secrets and mydb.visits"},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.n = v.item", "compares text"},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name = v.item WHERE p.name = (SELECT MAX(name) FROM pages)", "not a public lookup"},
		{"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name = v.item AND RAND() < 0.5", "not deterministic"},
		// A public column named like the privacy unit is not the unit.
		{"SELECT p.name, COUNT(DISTINCT p.user_id) FROM visits v JOIN pages p ON p.name = v.item GROUP BY p.name", "COUNT(DISTINCT …) of anything but the privacy unit"},
	}
	for _, c := range cases {
		gov := &publicGov{fakeGov{budget: 100}}
		e := newPublicEngine(t, gov)
		_, err := query(t, e, "analyst", c.q)
		refusedUncharged(t, &gov.fakeGov, c.q, err, c.want)
	}
	// A join key that repeats among the public rows read: refused when the
	// public side is read, before the charge.
	gov := &publicGov{fakeGov{budget: 100}}
	e := newPublicEngine(t, gov)
	_, err := query(t, e, "analyst", "SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.user_id = v.g")
	if err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("non-unique key: %v", err)
	}
	if len(gov.charged) != 0 {
		t.Errorf("non-unique key: charged %d", len(gov.charged))
	}
}
