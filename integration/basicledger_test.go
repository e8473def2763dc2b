package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	dprelease "github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server"
)

// startBasicIsolation serves the isolation deployment (the victim in it or
// not) on a basic-composition ledger, where a release at Δ0 = 1 selects
// its keys with single_item (docs/privacy.md §42).
func startBasicIsolation(t *testing.T, withVictim bool) *server.Governed {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "people.tsv")
	writeIsolationTable(t, data, withVictim)
	return startIsolationConfig(t, dir, "accounting: {method: basic}\n"+isolationConfig(t, dir, data, ""))
}

// TestBasicLedgerIsolation: the attacks of docs/privacy.md §42 against two
// basic-ledger deployments that differ by the victim. The keys are read so
// that the victim holds one of its own ("victim only note"; its "hello"
// row is filtered out), which single_item releases with probability
// π(1) = δ_s at most. Every observation (rows, errors, warnings and their
// count, session state, the connection, the budget) and the path taken
// must be the same, and the releases at Δ0 = 1 must be single_item's.
func TestBasicLedgerIsolation(t *testing.T) {
	deps := [2]*server.Governed{startBasicIsolation(t, false), startBasicIsolation(t, true)}
	const notVictimHello = "(note <> 'hello' OR user_id <> 'victim')"
	one := []string{"SET dp_epsilon = 0.001", "SET dp_reuse = OFF", "SET dp_max_groups_contributed = 1", "SET dp_max_rows_per_group = 1", "SET dp_max_items = 1"}
	groupBy := "SELECT note, COUNT(*) FROM people WHERE " + notVictimHello + " GROUP BY note"
	attacks := []struct {
		a      attack
		single bool // the statement (or the one DP_EXPLAIN explains) selects with single_item
	}{
		{attack{name: "group_by_one_key", stmts: append(one, groupBy)}, true},
		{attack{name: "group_by_victim_only", stmts: append(one, "SELECT note, COUNT(*) FROM people WHERE user_id = 'victim' GROUP BY note")}, true},
		{attack{name: "distinct_one_item", stmts: append(one, "SELECT DISTINCT note FROM people WHERE "+notVictimHello)}, true},
		{attack{name: "distinct_victim_secret", stmts: append(one, "SELECT DISTINCT secret FROM people WHERE user_id = 'victim'")}, true},
		{attack{name: "explain_one_key", stmts: append(one, "SELECT parameter, value FROM DP_EXPLAIN('"+strings.ReplaceAll(groupBy, "'", "''")+"')")}, true},
		{attack{name: "group_by_private_bounds", stmts: []string{"SET dp_epsilon = 0.001", "SET dp_reuse = OFF",
			"SELECT note, COUNT(*) AS c FROM people WHERE " + notVictimHello + " GROUP BY note"}}, false},
	}
	for _, c := range attacks {
		t.Run(c.a.name, func(t *testing.T) {
			var obs [2]observation
			var paths [2]dprelease.Paths
			for i, g := range deps {
				before := g.PathsTaken()
				obs[i] = observe(t, g.Addr(), c.a)
				paths[i] = subPaths(g.PathsTaken(), before)
			}
			if obs[0].PrepareErr != "" || obs[1].PrepareErr != "" || obs[0].Err != "" {
				t.Fatalf("the attack failed: %s %s %s", obs[0].PrepareErr, obs[1].PrepareErr, obs[0].Err)
			}
			compareObservations(t, obs[0], obs[1])
			if paths[0] != paths[1] {
				t.Errorf("the path differs with the victim: without %+v, with %+v", paths[0], paths[1])
			}
			if text := fmt.Sprintf("%+v", obs[1]); strings.Contains(text, "victim only note") || strings.Contains(text, "hunter2") {
				t.Errorf("the victim's value was released: %s", text)
			}
		})
	}
	// The attacks ran the mechanism they were meant to: single_item at
	// Δ0 = 1, and the rule's choice left to the release when Δ0 is chosen
	// privately (each statement's last audit record; reuse is off).
	conn := isoConn(t, deps[1].Addr())
	for _, c := range attacks {
		if strings.HasPrefix(c.a.name, "explain") {
			continue
		}
		want := "single_item"
		if !c.single {
			want = "single_item if the chosen Δ0 is 1, else dp_sips"
		}
		q := c.a.stmts[len(c.a.stmts)-1]
		rows, err := readAll(t.Context(), conn, "SELECT mechanism FROM DP_AUDIT() WHERE statement = ? ORDER BY seq DESC LIMIT 1", q)
		if err != nil || len(rows) == 0 || rows[0][0] != want {
			t.Errorf("%s: audited mechanism %v %v, want %q", c.a.name, rows, err, want)
		}
	}
}
