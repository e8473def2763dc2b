package integration

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// TestExplainOverTheWire: DP_EXPLAIN through go-sql-driver, the mysql
// command line client and pandas shows a release's parameters — the same
// facts `dpsql params` prints for the same options — and its cost, and
// charges nothing; a statement beyond the budget is explained with the
// ledger's refusal instead of failing; a query the analyst may not run is
// refused as it would be.
func TestExplainOverTheWire(t *testing.T) {
	fullRunOnly(t)
	s := startDemo(t)
	before := ledgerBalance(t, s.Ledger(), s.analyst.User, s.db)
	cal, err := setunion.Calibrate(setunion.Options{Mechanism: setunion.DPSIPS, Epsilon: 0.5, Delta: setunion.DefaultDelta, MaxItems: setunion.AutoMaxItems, Rounds: setunion.DefaultRounds})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, f := range cal.Facts() {
		want[f.Name] = f.Value
	}
	stmts := []clients.Statement{
		clients.Query("SET dp_epsilon = 0.5"),
		clients.Query("SELECT release_no, parameter, value FROM DP_EXPLAIN('SELECT DISTINCT word FROM words') ORDER BY release_no DESC"),
		clients.Query("SELECT parameter, value FROM DP_EXPLAIN('SELECT /*+ SET_VAR(dp_epsilon = 500) */ DISTINCT word FROM words') WHERE release_no = 0"),
		clients.Query("SELECT parameter, value FROM DP_EXPLAIN('SELECT word, COUNT(*) FROM words GROUP BY word') WHERE parameter LIKE 'aggregate_2.%'"),
		clients.Query("SELECT * FROM DP_EXPLAIN('SELECT * FROM words')"),
	}
	runners := []struct {
		name string
		r    clients.Runner
	}{{"go-sql-driver", clients.GoDriver{}}, {"mysql CLI", clients.MariaDBCLI{Path: mysqlCLI(t), Stdin: true}}, {"pandas", pythonRunner(t)}}
	for _, c := range runners {
		t.Run(c.name, func(t *testing.T) {
			res := runClient(t, c.r, s.analyst, stmts)
			if len(res) != len(stmts) {
				t.Fatalf("%d results", len(res))
			}
			got := map[string]string{}
			for _, row := range res[1].Cells() {
				if row[0] == "1" {
					got[row[1]] = row[2]
				}
			}
			for _, name := range []string{"mechanism", "epsilon", "noise_scale", "round_3", "users_for_50pct", "users_for_95pct"} {
				if got[name] == "" || got[name] != want[name] {
					t.Errorf("%s: DP_EXPLAIN says %q, dpsql params (setunion.Calibrate) %q", name, got[name], want[name])
				}
			}
			cost := map[string]string{}
			for _, row := range res[1].Cells() {
				if row[0] == "0" {
					cost[row[1]] = row[2]
				}
			}
			if !strings.HasPrefix(cost["demo.charge"], "ε=0.5 δ=1e-06") || cost["demo.remaining_after"] == "" || cost["demo.repeats_after"] == "" {
				t.Errorf("budget rows %v", cost)
			}
			refused := false
			for _, row := range res[2].Cells() {
				refused = refused || row[0] == "refused" || row[0] == "demo.refused"
			}
			if !refused {
				t.Errorf("ε = 500 explained without a refusal: %q (error %v)", res[2].Cells(), res[2].Error)
			}
			aggs := map[string]string{}
			for _, row := range res[3].Cells() {
				aggs[row[0]] = row[1]
			}
			if aggs["aggregate_2.kind"] != "count" || aggs["aggregate_2.column"] != "COUNT(*)" || aggs["aggregate_2.ci95_half_width"] == "" { // named after its SELECT position
				t.Errorf("aggregate rows %v (error %v)", aggs, res[3].Error)
			}
			if res[4].Error == nil || res[4].Error.Code != 1142 {
				t.Errorf("DP_EXPLAIN of a direct read: %q %v, want 1142", res[4].Cells(), res[4].Error)
			}
		})
	}
	after := ledgerBalance(t, s.Ledger(), s.analyst.User, s.db)
	if after.Releases != before.Releases || after.Basic != before.Basic {
		t.Errorf("DP_EXPLAIN charged: before %+v after %+v", before, after)
	}
}
