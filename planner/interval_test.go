package planner_test

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testengine"
)

// TestIntervalFunctions: DP_INTERVAL_LOW/HIGH(agg) next to the aggregate,
// per key and global, with and without the aggregate itself, for COUNT,
// SUM and AVG (NULL for a variance); one release, charged once; the
// functions refused where there is no DP aggregate.
func TestIntervalFunctions(t *testing.T) {
	num := func(v any) float64 { return testengine.Float(t, v) }
	gov := &fakeGov{budget: 1000}
	e := newPolicyEngine(t, gov)
	for _, c := range []struct {
		q       string
		triples [][3]int // (value, low, high) column indexes
		keys    int      // rows expected (0: any ≥ 1)
	}{
		{"SELECT /*+ SET_VAR(dp_max_rows_per_group = 1) */ COUNT(*), DP_INTERVAL_LOW(COUNT(*)), DP_INTERVAL_HIGH(COUNT(*)) FROM visits", [][3]int{{0, 1, 2}}, 1},
		{"SELECT /*+ SET_VAR(dp_max_rows_per_group = 1) */ DP_INTERVAL_LOW(COUNT(*)) AS lo, DP_INTERVAL_HIGH(COUNT(*)) AS hi FROM visits", nil, 1},
		{"SELECT /*+ SET_VAR(dp_epsilon = 10) SET_VAR(dp_max_rows_per_group = 2) SET_VAR(dp_max_groups_contributed = 3) SET_VAR(dp_contribution_bounds = '0,2') */ g, COUNT(*) AS n, DP_INTERVAL_LOW(COUNT(*)) AS lo, DP_INTERVAL_HIGH(COUNT(*)) AS hi, SUM(g), DP_INTERVAL_LOW(SUM(g)), DP_INTERVAL_HIGH(SUM(g)), AVG(g), DP_INTERVAL_LOW(AVG(g)), DP_INTERVAL_HIGH(AVG(g)) FROM visits GROUP BY g",
			[][3]int{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, 3},
		{"SELECT /*+ SET_VAR(dp_epsilon = 10) */ item, COUNT(*), DP_INTERVAL_LOW(COUNT(*)), DP_INTERVAL_HIGH(COUNT(*)) FROM visits GROUP BY item", [][3]int{{1, 2, 3}}, 0},
	} {
		gov.charged = nil
		rows, err := query(t, e, "analyst", c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if len(rows) == 0 || c.keys > 0 && len(rows) != c.keys {
			t.Errorf("%s: %d rows", c.q, len(rows))
		}
		for _, r := range rows {
			for _, tr := range c.triples {
				v, lo, hi := num(r[tr[0]]), num(r[tr[1]]), num(r[tr[2]])
				if !(lo <= v && v <= hi && lo < hi) {
					t.Errorf("%s: row %v: value %v not in [%v, %v]", c.q, r, v, lo, hi)
				}
			}
			if c.triples == nil && !(num(r[0]) < num(r[1])) {
				t.Errorf("%s: row %v", c.q, r)
			}
		}
		if len(gov.charged) != 1 {
			t.Errorf("%s: %d charges", c.q, len(gov.charged))
		}
		t.Logf("%s → %v", c.q, rows[0])
	}
	rows, err := query(t, e, "analyst", "SELECT /*+ SET_VAR(dp_contribution_bounds = '0,2') SET_VAR(dp_max_rows_per_group = 2) */ VARIANCE(g), DP_INTERVAL_LOW(VARIANCE(g)) FROM visits")
	if err != nil || len(rows) != 1 || rows[0][1] != nil {
		t.Errorf("variance interval: %v %v, want NULL", rows, err)
	}
	gov.charged = nil
	for q, want := range map[string]string{
		"SELECT DP_INTERVAL_LOW(MAX(g)) FROM visits":       "MAX() is not offered",
		"SELECT DP_INTERVAL_LOW(g) FROM visits":            "1142",
		"SELECT DP_INTERVAL_HIGH(COUNT(*), 2) FROM visits": "parameter count",
		"SELECT DP_INTERVAL_LOW(n) FROM pages":             "applies to a DP aggregate",
	} {
		if _, err := query(t, e, "analyst", q); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", q, err, want)
		}
	}
	if len(gov.charged) != 0 {
		t.Errorf("refused queries were charged: %+v", gov.charged)
	}
}

// TestNoKeyNoteChosenBounds: an aggregate release with bounds chosen
// privately that released no key states the users a key needs at the Δ0
// it chose (here the small-table fallback, 8), not at the plan's
// placeholder Δ0 = 1: the same number as with Δ0 = 8 set.
func TestNoKeyNoteChosenBounds(t *testing.T) {
	e := newPolicyEngine(t, &fakeGov{budget: 1000})
	need := func(q string) string {
		_, w, err := session(t, e, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for _, x := range w {
			if i := strings.Index(x.Message, "a key needs about "); i >= 0 {
				return strings.Fields(x.Message[i+len("a key needs about "):])[0]
			}
		}
		t.Fatalf("%s: no note on the empty release: %v", q, w)
		return ""
	}
	auto := need("SELECT item, COUNT(*) FROM visits WHERE item LIKE 'only_%' GROUP BY item")
	set := need("SELECT /*+ SET_VAR(dp_max_groups_contributed = 8) SET_VAR(dp_max_rows_per_group = 2) SET_VAR(dp_noise = 'gaussian') */ item, COUNT(*) FROM visits WHERE item LIKE 'only_%' GROUP BY item")
	one := need("SELECT /*+ SET_VAR(dp_max_groups_contributed = 1) SET_VAR(dp_max_rows_per_group = 2) SET_VAR(dp_noise = 'gaussian') */ item, COUNT(*) FROM visits WHERE item LIKE 'only_%' GROUP BY item")
	if auto != set || auto == one {
		t.Errorf("users needed: chosen Δ0 %s, Δ0 = 8 set %s, Δ0 = 1 %s", auto, set, one)
	}
}
