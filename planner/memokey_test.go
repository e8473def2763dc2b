package planner_test

import (
	"testing"
)

// TestStatementMemoKeepsAggregatesApart: two GROUP BY releases of one
// statement that read the same keys and values but release different
// aggregates are two releases (two charges, each its own values). The
// statement memo once keyed them by the scan and the set-union options
// only, which a GROUP BY release does not have, so the second release of
// the statement returned the first's rows.
func TestStatementMemoKeepsAggregatesApart(t *testing.T) {
	for _, q := range []string{
		"SELECT g, COUNT(g) AS v FROM visits GROUP BY g UNION ALL SELECT g, SUM(g) FROM visits GROUP BY g",
		"SELECT COUNT(g) AS v FROM visits UNION ALL SELECT SUM(g) FROM visits",
		"SELECT g, AVG(g) AS v FROM visits GROUP BY g UNION ALL SELECT g, SUM(g) FROM visits GROUP BY g",
	} {
		t.Run(q, func(t *testing.T) {
			gov := &fakeGov{budget: 100}
			e := buildPolicyEngine(t, gov, true)
			rows, err := query(t, e, "analyst", q)
			if err != nil {
				t.Fatal(err)
			}
			if len(gov.charged) != 2 {
				t.Errorf("%d charges, want 2 (one per aggregate release): %v", len(gov.charged), gov.charged)
			}
			t.Logf("rows: %s", flat(rows))
		})
	}
}
