package planner_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/planner"
)

// TestNoiseAfterBoundsOption: dp_noise_after_bounds is OFF by default and
// reaches the release's options (and its reuse specification); the table's
// configuration turns it on (as a basic-composition deployment does for
// every table), the session and the statement (SET_VAR; BigQuery's OPTIONS
// is rewritten to it, TestRewriteDifferentialPrivacy) override that,
// with the Gaussian's smaller zCDP charge; DP_EXPLAIN says where the value
// came from.
func TestNoiseAfterBoundsOption(t *testing.T) {
	const q = "SELECT COUNT(*) FROM visits"
	off := &dpvars.TableDefaults{Vars: map[string]any{dpvars.VarNoiseAfterBounds: false}}
	on := &dpvars.TableDefaults{Vars: map[string]any{dpvars.VarNoiseAfterBounds: true}}
	cases := []struct {
		name   string
		table  *dpvars.TableDefaults
		stmts  []string
		on     bool
		origin string
	}{
		{"server default", nil, []string{q}, false, "server default"},
		{"table configuration", on, []string{q}, true, "table configuration"},
		{"session", off, []string{"SET dp_noise_after_bounds = ON", q}, true, "session"},
		{"statement over table", on, []string{"SELECT /*+ SET_VAR(dp_noise_after_bounds = OFF) */ COUNT(*) FROM visits"}, false, "statement"},
	}
	var rhoOn, rhoOff float64
	for _, c := range cases {
		gov := &fakeGov{budget: 100}
		e := buildPolicyEngine(t, gov, true, planner.WithTableDefaults(func(db, table string) *dpvars.TableDefaults {
			if strings.EqualFold(table, "visits") {
				return c.table
			}
			return nil
		}))
		last := c.stmts[len(c.stmts)-1]
		if err := inSession(t, e, c.stmts...); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(gov.charged) != 1 {
			t.Fatalf("%s: %d charges", c.name, len(gov.charged))
		}
		spec, _ := json.Marshal(gov.charged[0].Reuse)
		if got := strings.Contains(strings.ReplaceAll(string(spec), `\"`, `"`), `"noise_after_bounds":true`); got != c.on {
			t.Errorf("%s: noise_after_bounds in the options %v, want %v (%s)", c.name, got, c.on, spec)
		}
		if c.on {
			rhoOn = gov.charged[0].Cost.Rho
		} else {
			rhoOff = gov.charged[0].Cost.Rho
		}
		rows, err := query(t, e, "analyst", "SELECT value FROM DP_EXPLAIN('"+strings.ReplaceAll(last, "'", "''")+"') WHERE parameter = 'source.noise_after_bounds'")
		if len(c.stmts) == 1 { // a SET is not in query's new session
			if err != nil || len(rows) != 1 || rows[0][0] != c.origin {
				t.Errorf("%s: DP_EXPLAIN source.noise_after_bounds %v %v, want %q", c.name, rows, err, c.origin)
			}
		}
	}
	if !(rhoOn > 2*rhoOff) || rhoOff <= 0 {
		t.Errorf("zCDP charge with the option %v, without %v: want the Laplace branch's larger charge", rhoOn, rhoOff)
	}
}
