package planner_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/planner"
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

// TestConflictingOptionsRefused: a statement whose SELECTs ask for
// different values of one option (BigQuery's clause on each SELECT of a
// UNION or a join of derived tables, or two SET_VAR hints) is refused
// before anything is charged. The hints are the statement's, so the last
// value once applied to every release of it: the first SELECT's
// OPTIONS(epsilon=1) was silently released at ε = 2, and, the two
// releases then being one, shared its rows.
func TestConflictingOptionsRefused(t *testing.T) {
	for _, q := range []string{
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) COUNT(*) AS n FROM visits UNION ALL SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=2) COUNT(*) FROM visits",
		"SELECT * FROM (SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) COUNT(*) AS n FROM visits) a, (SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=2) COUNT(*) AS m FROM visits) b",
		"SELECT /*+ SET_VAR(dp_epsilon = 1) SET_VAR(dp_epsilon = 0.5) */ DISTINCT item FROM visits",
		"SELECT /*+ SET_VAR(dp_max_items = 3) */ DISTINCT item FROM visits UNION SELECT /*+ SET_VAR(dp_max_items = 4) */ DISTINCT item FROM visits",
	} {
		rq, err := planner.RewriteDifferentialPrivacy(q)
		if err != nil {
			t.Fatal(err)
		}
		gov := &fakeGov{budget: 100}
		e := buildPolicyEngine(t, gov, true)
		_, err = query(t, e, "analyst", rq)
		if err == nil || !strings.Contains(err.Error(), "one value") || len(gov.charged) != 0 {
			t.Errorf("%s: error %v, %d charges; want a refusal asking for one value, nothing charged", q, err, len(gov.charged))
		}
	}
	// The same value twice is one option.
	gov := &fakeGov{budget: 100}
	e := buildPolicyEngine(t, gov, true)
	q, _ := planner.RewriteDifferentialPrivacy("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) COUNT(*) AS n FROM visits UNION ALL SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1.0) COUNT(g) FROM visits")
	if _, err := query(t, e, "analyst", q); err != nil || len(gov.charged) != 2 {
		t.Errorf("equal options: %v, %d charges", err, len(gov.charged))
	}
}

// TestStatementMemoKeepsIntervalsApart: a node that outputs the ends of
// an aggregate's interval never shares the rows of one that outputs the
// value (or the other end). The memo shares a node's decoded rows, and was
// keyed by the release and the output mapping only: in a UNION ALL of
// DP_INTERVAL_LOW(COUNT(*)) and DP_INTERVAL_HIGH(COUNT(*)) both parts
// returned the low ends, and next to COUNT(*) the interval was the value.
// (Each part is now its own release, charged; sharing one release between
// different outputs would need the memo to hold the released core.)
func TestStatementMemoKeepsIntervalsApart(t *testing.T) {
	for _, q := range []string{
		"SELECT g, DP_INTERVAL_LOW(COUNT(*)) AS v FROM visits GROUP BY g UNION ALL SELECT g, DP_INTERVAL_HIGH(COUNT(*)) FROM visits GROUP BY g",
		"SELECT DP_INTERVAL_LOW(COUNT(*)) AS v FROM visits UNION ALL SELECT DP_INTERVAL_HIGH(COUNT(*)) FROM visits",
		"SELECT COUNT(*) AS v FROM visits UNION ALL SELECT DP_INTERVAL_HIGH(COUNT(*)) FROM visits",
	} {
		gov := &fakeGov{budget: 100}
		e := buildPolicyEngine(t, gov, true)
		rows, err := query(t, e, "analyst", q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n := len(rows) / 2
		if len(rows) != 2*n || n == 0 {
			t.Fatalf("%s: %d rows", q, len(rows))
		}
		for i := 0; i < n; i++ {
			last := len(rows[i]) - 1
			if lo, hi := toFloat(rows[i][last]), toFloat(rows[n+i][last]); !(lo < hi) {
				t.Errorf("%s: row %d: %v then %v, want the second above the first", q, i, lo, hi)
			}
		}
	}
}

func toFloat(v any) float64 {
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// TestHintInLiteralIsData: a SET_VAR hint spelled inside a string literal
// is data, not an option: the release runs at the session's ε.
func TestHintInLiteralIsData(t *testing.T) {
	for q, eps := range map[string]float64{
		"SELECT DISTINCT item FROM visits WHERE item <> '/*+ SET_VAR(dp_epsilon = 0.5) */'":                                1,
		"SELECT DISTINCT item FROM visits WHERE item <> 'x' -- /*+ SET_VAR(dp_epsilon = 0.5) */\n":                         1,
		"SELECT /*+ SET_VAR(dp_epsilon = 0.5) */ DISTINCT item FROM visits WHERE item <> '/*+ SET_VAR(dp_epsilon = 2) */'": 0.5,
	} {
		gov := &fakeGov{budget: 100}
		e := buildPolicyEngine(t, gov, true)
		if _, err := query(t, e, "analyst", q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(gov.charged) != 1 || gov.charged[0].Epsilon != eps {
			t.Errorf("%s: charged %v, want one release at ε = %v", q, gov.charged, eps)
		}
	}
}
