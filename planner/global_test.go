package planner_test

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testengine"
)

// TestGlobalAggregates: aggregates without GROUP BY release one noisy row,
// with no key selection, with and without WHERE, under aliases, in a
// scalar subquery, and even when no row matches; charged once.
func TestGlobalAggregates(t *testing.T) {
	num := func(v any) float64 { return testengine.Float(t, v) }
	gov := &fakeGov{budget: 1000}
	e := newPolicyEngine(t, gov)
	// 300 users; 750 rows (2 per user, plus "even" for 150 users); g = u % 3.
	for _, c := range []struct {
		q    string
		want []float64
		tol  float64
	}{
		{"SELECT /*+ SET_VAR(dp_epsilon = 20) SET_VAR(dp_max_rows_per_group = 1) */ COUNT(*) FROM visits", []float64{300}, 10},
		{"SELECT /*+ SET_VAR(dp_epsilon = 20) SET_VAR(dp_max_rows_per_group = 3) */ COUNT(*) AS n FROM visits", []float64{750}, 20},
		{"SELECT /*+ SET_VAR(dp_epsilon = 20) */ COUNT(DISTINCT user_id) AS users, COUNT(item) FROM visits WHERE item = 'even'", []float64{150, 150}, 10},
		{"SELECT /*+ SET_VAR(dp_epsilon = 20) SET_VAR(dp_contribution_bounds = '0,2') SET_VAR(dp_max_rows_per_group = 3) */ SUM(g), AVG(g) FROM visits", []float64{750, 1}, 40},
		{"SELECT /*+ SET_VAR(dp_epsilon = 20) */ COUNT(*) FROM visits WHERE item = 'nothing'", []float64{0}, 10},
		{"SELECT /*+ SET_VAR(dp_epsilon = 20) SET_VAR(dp_max_rows_per_group = 1) */ (SELECT COUNT(*) FROM visits) + 1 AS n", []float64{301}, 10},
		// Variances and standard deviations: g = u % 3 takes 0, 1, 2 equally
		// often per user (rows hold g of their user): variance 2/3.
		{"SELECT /*+ SET_VAR(dp_epsilon = 50) SET_VAR(dp_contribution_bounds = '0,2') SET_VAR(dp_max_rows_per_group = 3) */ VARIANCE(g), VAR_SAMP(g), STDDEV(g), STDDEV_SAMP(g), STD(g), VAR_POP(g), STDDEV_POP(g) FROM visits", []float64{0.667, 0.667, 0.816, 0.816, 0.816, 0.667, 0.816}, 0.15},
		// Bounds chosen privately: m and the clamping bounds of SUM.
		{"SELECT /*+ SET_VAR(dp_epsilon = 20) */ COUNT(*), SUM(g) FROM visits", []float64{750, 750}, 60},
	} {
		gov.charged = nil
		rows, err := query(t, e, "analyst", c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if len(rows) != 1 || len(rows[0]) != len(c.want) {
			t.Errorf("%s: rows %v", c.q, rows)
			continue
		}
		for i, w := range c.want {
			if x := num(rows[0][i]); x < w-c.tol || x > w+c.tol {
				t.Errorf("%s: column %d = %v, want %v ± %v", c.q, i+1, x, w, c.tol)
			}
		}
		if len(gov.charged) != 1 || gov.charged[0].Function != "global aggregates" || gov.charged[0].Mechanism != "none" {
			t.Errorf("%s: charges %+v", c.q, gov.charged)
		}
	}
	// Refused before any charge: a bare column next to an aggregate, an
	// aggregate not offered, SUM without bounds.
	gov.charged = nil
	for q, want := range map[string]string{
		"SELECT item, COUNT(*) FROM visits":                              "1142",
		"SELECT MAX(g) FROM visits":                                      "MAX() is not offered",
		"SELECT /*+ SET_VAR(dp_noise = 'laplace') */ SUM(g) FROM visits": "noise laplace needs every contribution bound given",
	} {
		if _, err := query(t, e, "analyst", q); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", q, err, want)
		}
	}
	if len(gov.charged) != 0 {
		t.Errorf("refused queries were charged: %+v", gov.charged)
	}
}

// TestNotes: a release that chooses bounds privately says which in a Note;
// one that releases no key says how many users a key needs; neither for a
// release that sets its bounds and releases keys.
func TestNotes(t *testing.T) {
	e := newPolicyEngine(t, &fakeGov{budget: 1000})
	notes := func(q string) string {
		_, w, err := session(t, e, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var msgs []string
		for _, x := range w {
			if x.Level == "Note" {
				msgs = append(msgs, x.Message)
			}
		}
		return strings.Join(msgs, " | ")
	}
	if n := notes("SELECT item, COUNT(*) FROM visits GROUP BY item"); !strings.Contains(n, "chosen privately") || !strings.Contains(n, "max_rows_per_group=") {
		t.Errorf("auto bounds: notes %q", n)
	}
	if n := notes("SELECT DISTINCT item FROM visits WHERE item LIKE 'only_%'"); !strings.Contains(n, "released no key") || !strings.Contains(n, "users to be released with probability ½") {
		t.Errorf("empty DISTINCT: notes %q", n)
	}
	if n := notes("SELECT /*+ SET_VAR(dp_max_rows_per_group = 1) SET_VAR(dp_max_groups_contributed = 2) */ item, COUNT(*) FROM visits WHERE item LIKE 'only_%' GROUP BY item"); !strings.Contains(n, "released no key") {
		t.Errorf("empty GROUP BY: notes %q", n)
	}
	if n := notes("SELECT /*+ SET_VAR(dp_max_rows_per_group = 1) SET_VAR(dp_max_groups_contributed = 2) */ item, COUNT(*) FROM visits GROUP BY item"); n != "" {
		t.Errorf("set bounds, keys released: notes %q", n)
	}
}
