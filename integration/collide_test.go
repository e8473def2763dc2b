package integration

import (
	"strconv"
	"strings"
	"testing"
)

// Cache keys over the wire (docs/privacy.md §33): releases of one
// statement that differ in their aggregates or in which end of an interval
// they output are not answered from one another; a statement that gives
// one option two values is refused before any charge; two spellings of
// one DP_SET_UNION release are one stored release.
func TestCacheKeysOverTheWire(t *testing.T) {
	d := newReuseDeployment(t, "")
	alice := d.conn(t, "alice", alicePassword)
	before := run(t, alice, "SELECT 1").releases

	// COUNT and SUM of one column in one statement: two releases (global:
	// one row each, always released; about 1,200 rows against a sum near
	// 3,600).
	r := run(t, alice, "SELECT /*+ SET_VAR(dp_contribution_bounds = '0,10') */ COUNT(v) AS x FROM events UNION ALL "+
		"SELECT SUM(v) FROM events")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if n := atoi(t, r.releases) - atoi(t, before); n != 2 {
		t.Errorf("COUNT and SUM: %d releases, want 2", n)
	}
	if len(r.rows) != 2 || r.rows[0][0] == r.rows[1][0] {
		t.Errorf("COUNT and SUM answered alike: %v", r.rows)
	}

	// The two ends of an interval in a UNION ALL.
	r = run(t, alice, "SELECT DP_INTERVAL_LOW(COUNT(*)) AS e FROM events UNION ALL SELECT DP_INTERVAL_HIGH(COUNT(*)) FROM events")
	if r.err != nil || len(r.rows) != 2 {
		t.Fatalf("interval ends: %v %v", r.err, r.rows)
	}
	if lo, hi := atof(t, r.rows[0][0]), atof(t, r.rows[1][0]); !(lo < hi) {
		t.Errorf("interval ends %v then %v", lo, hi)
	}

	// BigQuery's clause on two SELECTs with two epsilons: refused, free.
	before = run(t, alice, "SELECT 1").releases
	r = run(t, alice, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, privacy_unit_column=user_id) item, COUNT(*) AS n FROM events GROUP BY item UNION ALL "+
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=2, privacy_unit_column=user_id) item, COUNT(*) FROM events GROUP BY item")
	if r.err == nil || !strings.Contains(r.err.Error(), "one value") || r.releases != before {
		t.Errorf("conflicting OPTIONS: error %v, releases %s → %s", r.err, before, r.releases)
	}

	// 'alpha=default' and the session's alpha: one dp_sips release.
	before = run(t, alice, "SELECT 1").releases
	mustNew(t, "DP_SET_UNION", run(t, alice, "SELECT DP_SET_UNION(item, user_id) FROM events"), before)
	before = run(t, alice, "SELECT 1").releases
	mustReuse(t, "DP_SET_UNION alpha=default", run(t, alice, "SELECT DP_SET_UNION(item, user_id, 'alpha=default') FROM events"), before)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}
