package planner_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/planner"
)

func TestRewriteDifferentialPrivacy(t *testing.T) {
	const hints = "/*+ SET_VAR(dp_epsilon = 1) SET_VAR(dp_delta = 1e-6) SET_VAR(dp_max_groups_contributed = 1) SET_VAR(dp_max_items = 1) SET_VAR(dp_privacy_unit_column = 'user_id') */"
	for in, want := range map[string]string{
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6, max_groups_contributed=1, privacy_unit_column=user_id) country, COUNT(*) FROM searches GROUP BY country":                                "SELECT " + hints + " country, COUNT(*) FROM searches GROUP BY country",
		"select  with\n differential_privacy -- a comment\n options ( EPSILON = 1 , Delta = 1e-6, MAX_GROUPS_CONTRIBUTED = 1, privacy_unit_column = searches.`user_id` ) country FROM searches GROUP BY country": "select  " + hints + " country FROM searches GROUP BY country",
		"SELECT WITH DIFFERENTIAL_PRIVACY country FROM t GROUP BY country":                                                            "SELECT /*+  */ country FROM t GROUP BY country",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = .5, contribution_bounds = (0, 100)) SUM(x) FROM t":                        "SELECT /*+ SET_VAR(dp_epsilon = .5) SET_VAR(dp_contribution_bounds = '0,100') */ SUM(x) FROM t",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(privacy_unit_column = 'it''s') 1":                                                   "SELECT /*+ SET_VAR(dp_privacy_unit_column = 'it''s') */ 1",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(noise_after_bounds = false) COUNT(*) FROM t":                                        "SELECT /*+ SET_VAR(dp_noise_after_bounds = OFF) */ COUNT(*) FROM t",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(noise_after_bounds = TRUE) COUNT(*) FROM t":                                         "SELECT /*+ SET_VAR(dp_noise_after_bounds = ON) */ COUNT(*) FROM t",
		"SELECT 'SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1)' AS s":                                                           "SELECT 'SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1)' AS s",
		"SELECT 1 /* SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) */":                                                          "SELECT 1 /* SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) */",
		"SELECT `SELECT WITH DIFFERENTIAL_PRIVACY` FROM t":                                                                            "SELECT `SELECT WITH DIFFERENTIAL_PRIVACY` FROM t",
		"SELECT \"a\\\" SELECT WITH DIFFERENTIAL_PRIVACY\" FROM t":                                                                    "SELECT \"a\\\" SELECT WITH DIFFERENTIAL_PRIVACY\" FROM t",
		"SELECT differential_privacy FROM t":                                                                                          "SELECT differential_privacy FROM t",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=2) c FROM t; SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(delta=1e-7) c FROM t": "SELECT /*+ SET_VAR(dp_epsilon = 2) */ c FROM t; SELECT /*+ SET_VAR(dp_delta = 1e-7) */ c FROM t",
	} {
		got, err := planner.RewriteDifferentialPrivacy(in)
		if err != nil || got != want {
			t.Errorf("%s\n got  %q %v\n want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, kappa=2) c FROM t":                "unknown option kappa",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=one) c FROM t":                       "epsilon must be a number, got one",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, epsilon=2) c FROM t":              "option epsilon is given twice",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1 c FROM t":                          "expected , or ) after epsilon",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS epsilon=1 c FROM t":                          "OPTIONS needs a parenthesised list",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(group_selection_strategy = PUBLIC_GROUPS) c": "join a public table of keys",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=?) c FROM t":                         "epsilon must be a number, got ?",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(contribution_bounds = (0, x)) SUM(c) FROM t": "contribution_bounds must be (lower, upper)",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(noise_after_bounds = 2) SUM(c) FROM t":       "noise_after_bounds must be TRUE or FALSE",
	} {
		_, err := planner.RewriteDifferentialPrivacy(in)
		var se *mysql.SQLError
		if !errors.As(err, &se) || se.Num != mysql.ERParseError || !strings.Contains(se.Message, want) || !strings.Contains(se.Message, "privacy_unit_column") {
			t.Errorf("%s: %v, want 1064 saying %q and listing the options", in, err, want)
		}
	}
}

// TestBigQueryRelease: the rewritten clause is the hinted release, and
// privacy_unit_column must be the table's unit.
func TestBigQueryRelease(t *testing.T) {
	var got [2]string
	for i, q := range []string{
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=3, delta=1e-6, max_groups_contributed=1, privacy_unit_column=user_id) item, COUNT(*) FROM visits GROUP BY item ORDER BY item",
		"SELECT /*+ SET_VAR(dp_epsilon = 3) SET_VAR(dp_max_groups_contributed = 1) */ item, COUNT(*) FROM visits GROUP BY item ORDER BY item",
	} {
		gov := &fakeGov{budget: 100}
		e := newPolicyEngine(t, gov)
		rq, err := planner.RewriteDifferentialPrivacy(q)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := query(t, e, "analyst", rq)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		got[i] = flat(rows)
		if len(gov.charged) != 1 || gov.charged[0].Epsilon != 3 {
			t.Errorf("%s: charges %+v", q, gov.charged)
		}
	}
	if got[0] != got[1] || got[0] == "" {
		t.Errorf("OPTIONS %q, hints %q", got[0], got[1])
	}
	gov := &fakeGov{budget: 100}
	e := newPolicyEngine(t, gov)
	rq, _ := planner.RewriteDifferentialPrivacy("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(privacy_unit_column = item) item, COUNT(*) FROM visits GROUP BY item")
	if _, err := query(t, e, "analyst", rq); err == nil || !strings.Contains(err.Error(), "privacy_unit_column item is not the privacy unit of mydb.visits, which the server's configuration fixes as user_id") {
		t.Errorf("another unit: %v", err)
	}
	if len(gov.charged) != 0 {
		t.Errorf("charged %+v", gov.charged)
	}
}
