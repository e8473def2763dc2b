package planner_test

import (
	"strings"
	"testing"
)

// TestHintNoiseLaplaceWithBounds: SET_VAR(dp_noise = 'laplace') is valid
// when the same statement's hints (or the session) also give every
// contribution bound, whichever order they are written in; the hints of a
// statement are validated together, not each against the defaults. With a
// bound still left to choose, Laplace stays refused, before any charge.
func TestHintNoiseLaplaceWithBounds(t *testing.T) {
	gov := &fakeGov{budget: 1000}
	e := newPolicyEngine(t, gov)
	for _, q := range []string{
		"SELECT /*+ SET_VAR(dp_noise = 'laplace') SET_VAR(dp_contribution_bounds = '0,2') SET_VAR(dp_max_rows_per_group = 3) */ SUM(g) FROM visits",
		"SELECT /*+ SET_VAR(dp_contribution_bounds = '0,2') SET_VAR(dp_max_rows_per_group = 3) SET_VAR(dp_noise = 'laplace') */ SUM(g) FROM visits",
		"SELECT /*+ SET_VAR(dp_max_rows_per_group = 1) SET_VAR(dp_noise = 'laplace') */ COUNT(*) FROM visits",
		"SELECT /*+ SET_VAR(dp_noise = 'laplace') SET_VAR(dp_max_rows_per_group = 1) */ COUNT(*) FROM visits",
		"SELECT /*+ SET_VAR(dp_noise = 'laplace') SET_VAR(dp_max_groups_contributed = 2) SET_VAR(dp_max_rows_per_group = 1) */ item, COUNT(*) FROM visits GROUP BY item",
		"SELECT /*+ SET_VAR(dp_noise = 'laplace') */ /*+ SET_VAR(dp_max_groups_contributed = 2) SET_VAR(dp_max_rows_per_group = 1) */ item, COUNT(*) FROM visits GROUP BY item",
	} {
		gov.charged = nil
		if _, err := query(t, e, "analyst", q); err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if len(gov.charged) != 1 {
			t.Errorf("%s: charges %+v", q, gov.charged)
		}
	}
	// The session form: bounds SET before or after dp_noise.
	for _, stmts := range [][]string{
		{"SET dp_max_rows_per_group = 1", "SET dp_max_groups_contributed = 2", "SET dp_noise = 'laplace'", "SELECT item, COUNT(*) FROM visits GROUP BY item"},
		{"SET dp_noise = 'laplace'", "SET dp_max_rows_per_group = 1", "SET dp_max_groups_contributed = 2", "SELECT item, COUNT(*) FROM visits GROUP BY item"},
	} {
		if _, _, err := session(t, e, stmts...); err != nil {
			t.Errorf("%v: %v", stmts, err)
		}
	}
	gov.charged = nil
	for _, q := range []string{
		"SELECT /*+ SET_VAR(dp_noise = 'laplace') SET_VAR(dp_max_rows_per_group = 3) */ SUM(g) FROM visits",
		"SELECT /*+ SET_VAR(dp_max_rows_per_group = 3) SET_VAR(dp_noise = 'laplace') */ SUM(g) FROM visits",
		"SELECT /*+ SET_VAR(dp_noise = 'laplace') SET_VAR(dp_max_rows_per_group = 1) */ item, COUNT(*) FROM visits GROUP BY item",
	} {
		if _, err := query(t, e, "analyst", q); err == nil || !strings.Contains(err.Error(), "noise laplace needs every contribution bound given") {
			t.Errorf("%s: %v, want the Laplace refusal", q, err)
		}
	}
	if len(gov.charged) != 0 {
		t.Errorf("refused queries were charged: %+v", gov.charged)
	}
	// The column's configured bounds count too: they are applied after the
	// session's variables are read.
	gov = &fakeGov{budget: 100}
	q := "SELECT /*+ SET_VAR(dp_noise = 'laplace') SET_VAR(dp_max_rows_per_group = 2) */ SUM(g) FROM visits"
	if err := inSession(t, defaultsEngine(t, gov), q); err != nil || len(gov.charged) != 1 {
		t.Errorf("%s over a column with configured bounds: %v, charges %+v", q, err, gov.charged)
	}
}
