package planner_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/internal/testengine"
)

// TestIntervalFunctionsOrderBy: DP_INTERVAL_LOW/HIGH with an ORDER BY of a
// group key, which go-mysql-server plans as Project(Sort(GroupBy)) — the
// Sort between the interval calls and the GroupBy — is released like the
// same query without ORDER BY, sorted; so are ORDER BY an alias and a
// LIMIT. (Before, the GroupBy was released alone and the interval calls
// were left as scalars: "DP_INTERVAL_LOW applies to a DP aggregate".)
func TestIntervalFunctionsOrderBy(t *testing.T) {
	gov := &fakeGov{budget: 1000}
	e := newPolicyEngine(t, gov)
	const hints = "/*+ SET_VAR(dp_epsilon = 10) SET_VAR(dp_max_rows_per_group = 2) SET_VAR(dp_max_groups_contributed = 3) SET_VAR(dp_contribution_bounds = '0,2') */"
	for _, c := range []struct {
		order string
		col   int  // the sorted column
		desc  bool // descending
	}{
		{"ORDER BY g", 0, false},
		{"ORDER BY g DESC", 0, true},
		{"ORDER BY g DESC LIMIT 2", 0, true},
		{"ORDER BY mean", 1, false},
		{"ORDER BY lo DESC", 2, true},
	} {
		q := fmt.Sprintf("SELECT %s g, AVG(g) AS mean, DP_INTERVAL_LOW(AVG(g)) AS lo, DP_INTERVAL_HIGH(AVG(g)) AS hi FROM visits GROUP BY g %s", hints, c.order)
		gov.charged = nil
		rows, err := query(t, e, "analyst", q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if len(rows) == 0 || len(gov.charged) != 1 {
			t.Errorf("%s: %d rows, %d charges", q, len(rows), len(gov.charged))
		}
		var sorted []float64
		for _, r := range rows {
			var x [4]float64
			for j := range x {
				x[j] = testengine.Float(t, r[j])
			}
			if !(x[2] <= x[1] && x[1] <= x[3]) {
				t.Errorf("%s: row %v: the mean is not in its interval", q, r)
			}
			sorted = append(sorted, x[c.col])
		}
		if c.desc {
			slices.Reverse(sorted)
		}
		if !slices.IsSorted(sorted) {
			t.Errorf("%s: not sorted by column %d: %v", q, c.col, rows)
		}
	}
}
