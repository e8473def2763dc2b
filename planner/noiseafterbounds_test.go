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

// TestBasicLedgerSingleItem: on a basic-composition deployment (the
// table's defaults say BasicLedger), a private GROUP BY whose users hold
// one key each (max_groups_contributed = 1) selects its keys with
// single_item, the optimal selection there, and is charged its (ε, δ) by
// basic composition; the same release on a zCDP deployment keeps dp_sips
// and its zCDP charge, also with dp_noise_after_bounds ON (a zCDP account
// refuses single_item). DP_EXPLAIN names the mechanism either way.
func TestBasicLedgerSingleItem(t *testing.T) {
	const q = "SELECT /*+ SET_VAR(dp_max_groups_contributed = 1) SET_VAR(dp_max_rows_per_group = 1) */ g, COUNT(*) FROM visits GROUP BY g"
	for _, c := range []struct {
		name  string
		table *dpvars.TableDefaults
		want  string
		basic bool
	}{
		{"basic ledger", &dpvars.TableDefaults{Vars: map[string]any{dpvars.VarNoiseAfterBounds: true}, BasicLedger: true}, "single_item", true},
		{"zCDP ledger, noise_after_bounds ON", &dpvars.TableDefaults{Vars: map[string]any{dpvars.VarNoiseAfterBounds: true}}, "dp_sips", false},
		{"zCDP ledger", nil, "dp_sips", false},
	} {
		gov := &fakeGov{budget: 100}
		e := buildPolicyEngine(t, gov, true, planner.WithTableDefaults(func(db, table string) *dpvars.TableDefaults {
			if strings.EqualFold(table, "visits") {
				return c.table
			}
			return nil
		}))
		rows, err := query(t, e, "analyst", "SELECT value FROM DP_EXPLAIN('"+q+"') WHERE parameter = 'selection.mechanism'")
		if err != nil || len(rows) != 1 || rows[0][0] != c.want {
			t.Errorf("%s: DP_EXPLAIN selection.mechanism %v %v, want %s", c.name, rows, err, c.want)
		}
		rows, err = query(t, e, "analyst", q)
		if err != nil || len(rows) != 3 {
			t.Fatalf("%s: %v %v, want the 3 groups of 100 users", c.name, rows, err)
		}
		if len(gov.charged) != 1 {
			t.Fatalf("%s: %d charges", c.name, len(gov.charged))
		}
		cost := gov.charged[0].Cost
		if basic := cost.BasicEpsilon > 0; basic != c.basic || (!c.basic && !(cost.Rho > 0)) {
			t.Errorf("%s: charged %+v, want basic composition %v", c.name, cost, c.basic)
		}
	}
}

// TestBasicLedgerDistinctSingleItem: a private SELECT DISTINCT at
// max_items = 1 on a basic-composition deployment selects with single_item
// unless the statement, the session or the table chose the mechanism; on
// a zCDP deployment, or at max_items = 2, it keeps dp_sips.
func TestBasicLedgerDistinctSingleItem(t *testing.T) {
	basic := func(vars map[string]any) *dpvars.TableDefaults {
		return &dpvars.TableDefaults{Vars: vars, BasicLedger: true}
	}
	for _, c := range []struct {
		name  string
		table *dpvars.TableDefaults
		hints string
		want  string
	}{
		{"basic ledger", basic(nil), "SET_VAR(dp_max_items = 1)", "single_item"},
		{"basic ledger, max_items from the table", basic(map[string]any{dpvars.VarMaxItems: int64(1)}), "", "single_item"},
		{"basic ledger, dp_sips named by the statement", basic(nil), "SET_VAR(dp_max_items = 1) SET_VAR(dp_mechanism = 'dp_sips')", "dp_sips"},
		{"basic ledger, mechanism from the table", basic(map[string]any{dpvars.VarMechanism: "count_laplace"}), "SET_VAR(dp_max_items = 1)", "count_laplace"},
		{"basic ledger, max_items = 2", basic(nil), "SET_VAR(dp_max_items = 2)", "dp_sips"},
		{"zCDP ledger", nil, "SET_VAR(dp_max_items = 1)", "dp_sips"},
	} {
		gov := &fakeGov{budget: 100}
		e := buildPolicyEngine(t, gov, true, planner.WithTableDefaults(func(db, table string) *dpvars.TableDefaults {
			if strings.EqualFold(table, "visits") {
				return c.table
			}
			return nil
		}))
		q := "SELECT /*+ " + c.hints + " */ DISTINCT g FROM visits"
		rows, err := query(t, e, "analyst", "SELECT value FROM DP_EXPLAIN('"+strings.ReplaceAll(q, "'", "''")+"') WHERE parameter = 'mechanism'")
		if err != nil || len(rows) != 1 || rows[0][0] != c.want {
			t.Errorf("%s: DP_EXPLAIN mechanism %v %v, want %s", c.name, rows, err, c.want)
		}
		if rows, err = query(t, e, "analyst", q); err != nil || len(rows) != 3 {
			t.Errorf("%s: %v %v, want the 3 groups of 100 users", c.name, rows, err)
		}
	}
}
