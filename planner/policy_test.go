package planner_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// fakeGov protects mydb.visits (privacy unit user_id), governs the user
// "analyst", and records charges against a budget of total ε.
type fakeGov struct {
	mu      sync.Mutex
	budget  float64
	charged []release.Request
}

func (g *fakeGov) PrivacyUnit(db, table string) (string, bool) {
	if strings.EqualFold(db, "mydb") && strings.EqualFold(table, "visits") {
		return "user_id", true
	}
	return "", false
}

func (g *fakeGov) Governed(ctx *sql.Context) bool {
	return ctx.Session.Client().User == "analyst"
}

func (g *fakeGov) spent() float64 {
	s := 0.0
	for _, c := range g.charged {
		s += c.Epsilon
	}
	return s
}

func (g *fakeGov) Check(ctx *sql.Context, r release.Request) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.Governed(ctx) {
		return nil
	}
	if g.spent()+r.Epsilon > g.budget+1e-12 {
		return errors.New("budget exhausted (check)")
	}
	return nil
}

func (g *fakeGov) Charge(ctx *sql.Context, r release.Request) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.Governed(ctx) {
		return nil
	}
	if g.spent()+r.Epsilon > g.budget+1e-12 {
		return errors.New("budget exhausted (charge)")
	}
	g.charged = append(g.charged, r)
	return nil
}

// newPolicyEngine serves mydb.visits (protected: 300 users; every user
// holds "common"; even users "even"; each user "only_<u>"; g = u % 3) and
// mydb.pages (public).
func newPolicyEngine(t *testing.T, gov *fakeGov) *sqle.Engine {
	return buildPolicyEngine(t, gov, true)
}

func buildPolicyEngine(t *testing.T, gov release.Governor, rules bool, opts ...planner.PolicyOption) *sqle.Engine {
	t.Helper()
	b, err := storage.NewTableBuilder("visits", []storage.Column{
		{Name: "user_id", Type: storage.BigInt},
		{Name: "item", Type: storage.Text},
		{Name: "g", Type: storage.BigInt},
	})
	if err != nil {
		t.Fatal(err)
	}
	for u := int64(0); u < 300; u++ {
		for _, it := range []string{"common", fmt.Sprintf("only_%d", u)} {
			if err := b.Append(u, it, u%3); err != nil {
				t.Fatal(err)
			}
		}
		if u%2 == 0 {
			b.Append(u, "even", u%3)
		}
	}
	visits, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := storage.NewTableBuilder("pages", []storage.Column{{Name: "name", Type: storage.Text}, {Name: "n", Type: storage.BigInt}})
	pb.Append("common", int64(1))
	pb.Append("public", int64(2))
	pages, _ := pb.Build()
	db := storage.NewDatabase("mydb")
	db.AddTable(visits.WithRowCounts(storage.HiddenCounts).WithScanGuard(release.ScanGuard(gov, "mydb", "visits")))
	db.AddTable(pages)
	pro, err := storage.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(0)
	rnd := func() *rand.Rand { seed++; return securerand.NewSeeded(seed) }
	cfg := engine.Config{Provider: pro, Functions: functions.Config{Rand: rnd, Governor: gov}}
	if rules {
		cfg.Rules = planner.PolicyRules(gov, append([]planner.PolicyOption{planner.WithRand(rnd)}, opts...)...)
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func query(t *testing.T, e *sqle.Engine, user, q string) ([]sql.Row, error) {
	t.Helper()
	ctx := engine.NewContext(context.Background(), user, "mydb")
	ctx = ctx.WithQuery(q)
	_, it, _, err := e.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	return sql.RowIterToRows(ctx, it)
}

func flat(rows []sql.Row) string {
	var parts []string
	for _, r := range rows {
		var cells []string
		for _, v := range r {
			if d, ok := v.(types.JSONDocument); ok {
				s, _ := d.JSONString()
				cells = append(cells, s)
				continue
			}
			cells = append(cells, fmt.Sprint(v))
		}
		parts = append(parts, strings.Join(cells, ","))
	}
	return strings.Join(parts, "|")
}

// TestAnalystReleases: the allowed forms are answered by private releases
// (only keys many users hold come out), each charged once.
func TestAnalystReleases(t *testing.T) {
	cases := []struct {
		q, want string
		charges int
	}{
		{"SELECT DISTINCT item FROM visits", "common|even", 1},
		{"select distinct item from VISITS where g = 1 order by item desc limit 1", "even", 1},
		{"SELECT item FROM visits GROUP BY item", "common|even", 1},
		{"SELECT item AS it FROM visits GROUP BY item ORDER BY it DESC", "even|common", 1},
		{"SELECT DISTINCT v.item FROM visits v WHERE v.item <> 'even'", "common", 1},
		{"SELECT DISTINCT item, g FROM visits WHERE item = 'common' ORDER BY g DESC", "common,2|common,1|common,0", 1},
		{"SELECT DISTINCT UPPER(item) AS u FROM visits WHERE item LIKE 'c%'", "COMMON", 1},
		// ORDER BY an alias, or a column spelled differently from the select
		// list: the planbuilder sorts below the DISTINCT; ORDER BY 1 over an
		// alias sorts by the alias's expression above it.
		{"SELECT DISTINCT item AS it FROM visits ORDER BY it DESC", "even|common", 1},
		{"SELECT DISTINCT UPPER(item) AS u FROM visits WHERE g = 1 ORDER BY u DESC LIMIT 3", "EVEN|COMMON", 1},
		{"SELECT DISTINCT v.item AS it FROM visits v ORDER BY v.item DESC", "even|common", 1},
		{"SELECT DISTINCT item AS it, g FROM visits WHERE item = 'common' ORDER BY g DESC, it", "common,2|common,1|common,0", 1},
		{"SELECT DISTINCT item AS it FROM visits ORDER BY 1 DESC", "even|common", 1},
		{"SELECT DISTINCT UPPER(item) FROM visits ORDER BY 1 DESC", "EVEN|COMMON", 1},
		{"SELECT * FROM (SELECT DISTINCT item FROM visits) s ORDER BY item", "common|even", 1},
		{"WITH c AS (SELECT DISTINCT item FROM visits) SELECT item FROM c WHERE item = 'even'", "even", 1},
		{"SELECT DISTINCT item FROM visits UNION SELECT name FROM pages ORDER BY 1", "common|even|public", 1},
		{"(SELECT DISTINCT item FROM visits WHERE g = 0 AND item = 'common') UNION ALL (SELECT DISTINCT item FROM visits WHERE g = 2 AND item <> 'even') ORDER BY 1", "common|common", 2},
		{"SELECT name FROM pages WHERE name IN (SELECT DISTINCT item FROM visits)", "common", 1},
		{"SELECT DP_SET_UNION(item, user_id) AS j FROM visits WHERE g = 0", `["common", "even"]`, 1},
		{"SELECT JSON_LENGTH(DP_SET_UNION(item, user_id, 'epsilon=2')) FROM visits v", "2", 1},
		{"SELECT DISTINCT user_id FROM visits", "", 1},                                  // every user id is held by one user: none released
		{"SELECT DISTINCT item FROM visits WHERE JSON_EXTRACT(item, '$.a') = 1", "", 1}, // fails on most rows: skipped, no error
		{"SELECT name FROM pages ORDER BY name", "common|public", 0},
		// A release as a scalar subquery (docs/sql.md lists it).
		{"SELECT (SELECT DP_SET_UNION(item, user_id) FROM visits WHERE g = 0)", `["common", "even"]`, 1},
		{"SELECT (SELECT DISTINCT item FROM visits WHERE item = 'even')", "even", 1},
		{"SELECT JSON_LENGTH((SELECT DP_SET_UNION(item, user_id) FROM visits)) AS n", "2", 1},
	}
	for _, c := range cases {
		gov := &fakeGov{budget: 100}
		e := newPolicyEngine(t, gov)
		rows, err := query(t, e, "analyst", c.q)
		answeredCharged(t, gov, c.q, rows, err, c.want, c.charges)
		for _, ch := range gov.charged {
			if ch.Database != "mydb" || ch.Table != "visits" || ch.Epsilon <= 0 || ch.Query != c.q {
				t.Errorf("%s: charge %+v", c.q, ch)
			}
		}
	}
}

// TestAnalystRefusals: every other read of the protected table is refused
// with MySQL error 1142 before any charge.
func TestAnalystRefusals(t *testing.T) {
	refused := []string{
		"SELECT * FROM visits",
		"SELECT item FROM visits",
		"SELECT item FROM visits WHERE user_id = 1",
		"SELECT COUNT(DISTINCT item) FROM visits",
		"SELECT MAX(user_id) FROM visits",
		"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name = v.item",
		"SELECT DISTINCT v.item FROM visits v, visits w WHERE v.user_id = w.user_id",
		"SELECT name FROM pages WHERE name IN (SELECT item FROM visits)",
		"SELECT name FROM pages WHERE EXISTS (SELECT 1 FROM visits WHERE item = name)",
		"SELECT * FROM (SELECT * FROM visits) s",
		"SELECT DISTINCT item FROM (SELECT * FROM visits LIMIT 10) s",
		"WITH c AS (SELECT item FROM visits LIMIT 5) SELECT DISTINCT item FROM c",
		"SELECT item, ROW_NUMBER() OVER (PARTITION BY item) FROM visits",
		"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages)",
		"SELECT DISTINCT item FROM visits WHERE SLEEP(0.01) = 0",
		"SELECT DISTINCT item FROM visits ORDER BY g", // MySQL: error 3065 (ORDER BY not in the select list)
		"SELECT DP_SET_UNION(item, g) FROM visits",
		"SELECT DP_SET_UNION(item, CONCAT(user_id, item)) FROM visits",
		"SELECT DP_SET_UNION(item, user_id), COUNT(*) FROM visits",
		"SELECT item FROM visits UNION SELECT name FROM pages",
		"SELECT * FROM visits LIMIT 0",
		"EXPLAIN SELECT * FROM visits",
		"EXPLAIN ANALYZE SELECT item FROM visits",
		"ANALYZE TABLE visits",
	}
	for _, q := range refused {
		gov := &fakeGov{budget: 100}
		e := newPolicyEngine(t, gov)
		rows, err := query(t, e, "analyst", q)
		var se *mysql.SQLError
		if err == nil {
			t.Errorf("%s: answered %q", q, flat(rows))
		} else if !errors.As(err, &se) || se.Num != release.ERTableAccessDenied {
			t.Errorf("%s: error %v, want 1142", q, err)
		} else if !strings.Contains(se.Message, "SELECT DISTINCT c1[, c2…] FROM visits") {
			t.Errorf("%s: message does not name the allowed forms: %s", q, se.Message)
		}
		if len(gov.charged) != 0 {
			t.Errorf("%s: charged %v", q, gov.charged)
		}
	}
}

// TestAnalystMetadata: metadata statements work and hide the row count.
func TestAnalystMetadata(t *testing.T) {
	e := newPolicyEngine(t, &fakeGov{budget: 1})
	for _, q := range []string{
		"DESCRIBE visits", "SHOW COLUMNS FROM visits", "SHOW FULL COLUMNS FROM visits LIKE 'it%'",
		"SHOW CREATE TABLE visits", "SHOW INDEX FROM visits", "SHOW TABLE STATUS",
		"SELECT table_name, table_rows FROM information_schema.tables WHERE table_schema = 'mydb' ORDER BY 1",
		"SELECT column_name FROM information_schema.columns WHERE table_name = 'visits'",
	} {
		rows, err := query(t, e, "analyst", q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if strings.Contains(flat(rows), "750") { // visits has 750 rows
			t.Errorf("%s leaks the row count: %s", q, flat(rows))
		}
	}
}

// TestAdminUnaffected: admins read protected tables freely and are not
// charged.
func TestAdminUnaffected(t *testing.T) {
	gov := &fakeGov{budget: 0}
	e := newPolicyEngine(t, gov)
	rows, err := query(t, e, "root", "SELECT COUNT(*), COUNT(DISTINCT item) FROM visits")
	if err != nil || flat(rows) != "750,302" {
		t.Fatalf("admin count: %v %v", flat(rows), err)
	}
	if _, err := query(t, e, "root", "SELECT DISTINCT item FROM visits"); err != nil || len(gov.charged) != 0 {
		t.Fatalf("admin distinct: %v, charges %v", err, gov.charged)
	}
}

// TestAnalystBudget: a release over budget is refused before any data is
// read (Check at plan time) and the ledger is charged once per release.
func TestAnalystBudget(t *testing.T) {
	gov := &fakeGov{budget: 2.5}
	e := newPolicyEngine(t, gov)
	for i := 0; i < 2; i++ {
		if _, err := query(t, e, "analyst", "SELECT DISTINCT item FROM visits"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := query(t, e, "analyst", "SELECT DISTINCT item FROM visits")
	if err == nil || !strings.Contains(err.Error(), "budget exhausted (check)") {
		t.Fatalf("third release: %v", err)
	}
	if len(gov.charged) != 2 {
		t.Fatalf("charges %d", len(gov.charged))
	}
	if _, err := query(t, e, "analyst", "SELECT DP_SET_UNION(item, user_id, 'epsilon=0.5') FROM visits"); err != nil {
		t.Fatal(err)
	}
	if got := gov.spent(); got != 2.5 {
		t.Fatalf("spent %v", got)
	}
	if !slices.ContainsFunc(gov.charged, func(r release.Request) bool { return r.Function == "DP_SET_UNION" && r.Epsilon == 0.5 }) {
		t.Fatalf("DP_SET_UNION charge missing: %+v", gov.charged)
	}
}

// TestScanGuard: without the planner's rules, the storage guard alone still
// refuses an analyst's raw reads (and admins' reads pass).
func TestScanGuard(t *testing.T) {
	e := buildPolicyEngine(t, &fakeGov{budget: 1}, false)
	for _, q := range []string{"SELECT * FROM visits", "SELECT COUNT(DISTINCT item) FROM visits", "SELECT DISTINCT item FROM visits"} {
		_, err := query(t, e, "analyst", q)
		var se *mysql.SQLError
		if !errors.As(err, &se) || se.Num != release.ERTableAccessDenied {
			t.Errorf("%s: %v, want 1142 from the scan guard", q, err)
		}
	}
	if _, err := query(t, e, "root", "SELECT * FROM visits"); err != nil {
		t.Errorf("admin: %v", err)
	}
}

// TestAnalystAggregates: GROUP BY with COUNT, COUNT(DISTINCT unit), SUM and
// AVG is one private release (one charge) returning the released keys with
// noisy aggregates; HAVING, ORDER BY and LIMIT apply to the released rows;
// other aggregates and SUM/AVG without bounds are refused before any charge.
func TestAnalystAggregates(t *testing.T) {
	near := func(got any, want, tol float64) bool {
		var x float64
		switch v := got.(type) {
		case int64:
			x = float64(v)
		case float64:
			x = v
		default:
			f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
			if err != nil {
				return false
			}
			x = f
		}
		return x >= want-tol && x <= want+tol
	}
	gov := &fakeGov{budget: 100}
	e := newPolicyEngine(t, gov)
	rows, err := query(t, e, "analyst", "SELECT /*+ SET_VAR(dp_epsilon = 5) */ item, COUNT(*), COUNT(DISTINCT user_id) AS users FROM visits GROUP BY item ORDER BY item")
	if err != nil {
		t.Fatal(err)
	}
	// 300 users hold "common", 150 "even"; every "only_<u>" is one user's.
	want := map[string]float64{"common": 300, "even": 150}
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	for _, r := range rows {
		w, ok := want[fmt.Sprint(r[0])]
		if !ok || !near(r[1], w, 60) || !near(r[2], w, 60) {
			t.Errorf("row %v, want about %v", r, w)
		}
	}
	if len(gov.charged) != 1 || gov.charged[0].Epsilon != 5 || gov.charged[0].Cost.Rho == 0 {
		t.Errorf("charges %+v", gov.charged)
	}

	// SUM and AVG without bounds have them chosen privately (a Note says
	// which); bounds given by a hint or the session win.
	if _, err := query(t, e, "analyst", "SELECT item, SUM(g) FROM visits GROUP BY item"); err != nil {
		t.Errorf("SUM without bounds: %v", err)
	}
	gov.charged = nil
	rows, err = query(t, e, "analyst", "SELECT /*+ SET_VAR(dp_contribution_bounds = '0,2') SET_VAR(dp_epsilon = 8) */ item, AVG(g) AS a, SUM(g) FROM visits GROUP BY item HAVING a >= 0 ORDER BY 3 DESC LIMIT 1")
	if err != nil {
		t.Fatal(err)
	}
	// g = u % 3 is 1 on average: AVG about 1, SUM about 300 for common.
	if len(rows) != 1 || rows[0][0] != "common" || !near(rows[0][1], 1, 0.5) || !near(rows[0][2], 300, 150) {
		t.Errorf("AVG/SUM rows %v", rows)
	}
	if len(gov.charged) != 1 || gov.charged[0].Epsilon != 8 {
		t.Errorf("charges %+v", gov.charged)
	}
	// Columns come back in the select list's order whatever order the
	// planner groups them in (go-mysql-server sorts a GROUP BY's
	// expressions): g = u % 3 takes 0, 1, 2 under both keys.
	rows, err = query(t, e, "analyst", "SELECT /*+ SET_VAR(dp_epsilon = 8) */ COUNT(g), item, g FROM visits GROUP BY g, item ORDER BY item, g")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || rows[0][1] != "common" || rows[0][2] != int64(0) || rows[5][1] != "even" || rows[5][2] != int64(2) || !near(rows[0][0], 100, 50) {
		t.Errorf("multi-key rows %v", rows)
	}

	// GROUP BY an expression, by its alias, with HAVING and ORDER BY over
	// the noisy count: go-mysql-server recomputes the key above the
	// HAVING from a raw column, which the release never shows.
	rows, err = query(t, e, "analyst", "SELECT /*+ SET_VAR(dp_epsilon = 8) */ LOWER(item) AS w, COUNT(*) AS n FROM visits GROUP BY w HAVING n > 0 ORDER BY n DESC")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0][0] != "common" || rows[1][0] != "even" || !near(rows[0][1], 300, 60) {
		t.Errorf("GROUP BY alias rows %v", rows)
	}

	// ORDER BY the first of two aggregates over an expression key sorts
	// by that aggregate (the release's columns keep the projection's ids).
	rows, err = query(t, e, "analyst", "SELECT /*+ SET_VAR(dp_epsilon = 8) */ CONCAT(item, user_id % 5) AS w, COUNT(*) AS n, COUNT(DISTINCT user_id) AS a FROM visits GROUP BY w ORDER BY n DESC LIMIT 8")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 || !slices.IsSortedFunc(rows, func(a, b sql.Row) int { return cmp.Compare(b[1].(int64), a[1].(int64)) }) {
		t.Errorf("ORDER BY n DESC LIMIT 8: %v", rows)
	}

	// Variance and standard deviation per key: g = u % 3 under both keys.
	rows, err = query(t, e, "analyst", "SELECT /*+ SET_VAR(dp_epsilon = 50) SET_VAR(dp_contribution_bounds = '0,2') */ item, VARIANCE(g), STDDEV_SAMP(g) FROM visits GROUP BY item ORDER BY item")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !near(rows[0][1], 0.667, 0.2) || !near(rows[1][2], 0.82, 0.2) {
		t.Errorf("VARIANCE/STDDEV_SAMP per key: %v", rows)
	}

	// Refusals, before any charge.
	gov.charged = nil
	for q, want := range map[string]string{
		"SELECT LOWER(item) AS w, item, COUNT(*) FROM visits GROUP BY w":                               "item is neither a group key nor an aggregate",
		"SELECT item, MAX(g) FROM visits GROUP BY item":                                                "MAX() is not offered",
		"SELECT item, COUNT(DISTINCT g) FROM visits GROUP BY item":                                     "COUNT(DISTINCT …) of anything but the privacy unit",
		"SELECT /*+ SET_VAR(dp_epsilonn = 1) */ item, COUNT(*) FROM visits GROUP BY item":              "unknown dpsql variable",
		"SELECT /*+ SET_VAR(dp_contribution_bounds = '5,1') */ item, SUM(g) FROM visits GROUP BY item": "lower is above upper",
	} {
		if _, err := query(t, e, "analyst", q); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", q, err, want)
		}
	}
	if len(gov.charged) != 0 {
		t.Errorf("refused queries were charged: %+v", gov.charged)
	}
}
