package planner_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/planner"
)

// defaultsEngine is newPolicyEngine with configured defaults for
// mydb.visits: ε = 2 and Δ0 = 3 for the table; item: Δ0 = 1, m = 2; g:
// bounds 0..2.
func defaultsEngine(t *testing.T, gov *fakeGov) *sqle.Engine {
	t.Helper()
	d := &dpvars.TableDefaults{
		Vars: map[string]any{dpvars.VarEpsilon: 2.0, dpvars.VarMaxGroups: int64(3), dpvars.VarMaxItems: int64(3)},
		Columns: map[string]dpvars.ColumnDefaults{
			"item": {MaxGroups: 1, MaxRows: 2},
			"g":    {Bounds: "0,2"},
		},
	}
	return buildPolicyEngine(t, gov, true, planner.WithTableDefaults(func(db, table string) *dpvars.TableDefaults {
		if strings.EqualFold(db, "mydb") && strings.EqualFold(table, "visits") {
			return d
		}
		return nil
	}))
}

// inSession runs statements in one analyst session and returns the
// error of the first that fails.
func inSession(t *testing.T, e *sqle.Engine, stmts ...string) error {
	t.Helper()
	ctx := engine.NewContext(context.Background(), "analyst", "mydb")
	for _, q := range stmts {
		qctx := ctx.WithQuery(q)
		_, it, _, err := e.Query(qctx, q)
		if err == nil {
			_, err = sql.RowIterToRows(qctx, it)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// TestConfiguredDefaults: the precedence of options, statement > session
// > column configuration > table configuration > server default, read
// from what each release is charged (ε) and its options (its reuse
// specification).
func TestConfiguredDefaults(t *testing.T) {
	cases := []struct {
		stmts []string
		eps   float64
		want  []string // in the release's options
	}{
		{[]string{"SELECT item, COUNT(*) FROM visits GROUP BY item"}, 2,
			[]string{`"max_groups_contributed":1`, `"max_rows_per_group":2`}}, // column over table
		{[]string{"SELECT g, COUNT(*) FROM visits GROUP BY g"}, 2,
			[]string{`"max_groups_contributed":3`, `"max_rows_per_group":0`}}, // table; m chosen privately
		{[]string{"SELECT item, g, COUNT(*) FROM visits GROUP BY item, g"}, 2,
			[]string{`"max_groups_contributed":3`}}, // g sets no Δ0: the table's
		{[]string{"SELECT /*+ SET_VAR(dp_epsilon = 5) SET_VAR(dp_max_groups_contributed = 4) */ item, COUNT(*) FROM visits GROUP BY item"}, 5,
			[]string{`"max_groups_contributed":4`, `"max_rows_per_group":2`}}, // statement over column
		{[]string{"SET dp_epsilon = 0.7", "SET dp_max_rows_per_group = 5", "SELECT item, COUNT(*) FROM visits GROUP BY item"}, 0.7,
			[]string{`"max_groups_contributed":1`, `"max_rows_per_group":5`}}, // session over column
		{[]string{"SET dp_max_rows_per_group = 5", "SELECT /*+ SET_VAR(dp_max_rows_per_group = 7) */ item, COUNT(*) FROM visits GROUP BY item"}, 2,
			[]string{`"max_rows_per_group":7`}}, // statement over session
		{[]string{"SELECT SUM(g) FROM visits"}, 2,
			[]string{`"kind":"sum","upper":2}`}}, // column bounds
		{[]string{"SELECT SUM(g), AVG(g + 0) FROM visits"}, 2,
			[]string{`"kind":"sum","upper":2}`, `"kind":"avg","auto_bounds":true}`}}, // an expression: chosen privately
		{[]string{"SELECT /*+ SET_VAR(dp_contribution_bounds = '0,1') */ SUM(g) FROM visits"}, 2,
			[]string{`"kind":"sum","upper":1}`}}, // statement over column
		{[]string{"SET dp_contribution_bounds = ''", "SELECT SUM(g) FROM visits"}, 2,
			[]string{`"kind":"sum","upper":2}`}}, // '' equals the global: not told apart from unset here (the governed session is)
		{[]string{"SELECT DISTINCT item FROM visits"}, 2, []string{`"MaxItems":1`}},
		{[]string{"SELECT DISTINCT item, g FROM visits"}, 2, []string{`"MaxItems":3`}},
	}
	for _, c := range cases {
		gov := &fakeGov{budget: 100}
		e := defaultsEngine(t, gov)
		if err := inSession(t, e, c.stmts...); err != nil {
			t.Errorf("%q: %v", c.stmts, err)
			continue
		}
		if len(gov.charged) != 1 {
			t.Errorf("%q: %d charges", c.stmts, len(gov.charged))
			continue
		}
		ch := gov.charged[0]
		spec, _ := json.Marshal(ch.Reuse)
		if ch.Epsilon != c.eps {
			t.Errorf("%q: charged ε = %v, want %v", c.stmts, ch.Epsilon, c.eps)
		}
		for _, w := range c.want {
			if !strings.Contains(strings.ReplaceAll(string(spec), `\"`, `"`), w) {
				t.Errorf("%q: options %s do not hold %s", c.stmts, spec, w)
			}
		}
	}
}
