package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testserver"
)

// Expression indexes under released values (issue 14 follow-up). The
// attacks of TestIsolation run at ε = 0.001, where both deployments
// release empty sets: they compare the evaluation's side channels, not the
// released values. An expression index that holds other values than the
// scan would give is a difference of values (and, before issue 20,
// whether a release read the index or scanned depended on the data: a kept
// user's row work against limits.release_row_work; TestPathsIsolation
// checks the path now). So here
// releases are large (ε = 50, every common value is released in both
// deployments) and every value the victim holds is shared with others:
// both deployments must release the same rows.

// startIsolationWork starts the isolation deployment with a small
// release_row_work, so that the victim's rows (the longest secret) come
// near it and the others do not.
func startIsolationWork(t *testing.T, withVictim bool, log *testserver.Log) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "people.tsv")
	writeIsolationTable(t, data, withVictim)
	return startIsolationLimits(t, dir, data, "  release_row_work: 25000\n", log).Addr()
}

// The key's work is ~250 bytes per byte of secret (56 for the victim's
// longest, at most 14 for the others); the unit filter's is ~15,000 (an
// LPAD of 16,384 characters or more is NULL under the default
// release_value_bytes).
const (
	workKeyTail   = "LEFT(LPAD(secret, LENGTH(secret) * 250, 'x'), 0)"
	workKeyPrefix = "IF(note = 'hello', 'h', 'o')"
	workFilter    = "LENGTH(LPAD(user_id, 15000, 'y')) > 0"
)

func TestIsolationExprIndexReleased(t *testing.T) {
	var logWithout, logWith testserver.Log
	deployments := []struct {
		name string
		addr string
		log  *testserver.Log
	}{
		{"without", startIsolationWork(t, false, &logWithout), &logWithout},
		{"with", startIsolationWork(t, true, &logWith), &logWith},
	}
	ctx := context.Background()
	attacks := []struct {
		name  string
		build []string // sent first on another connection of the same analyst
		a     attack
		want  []string // values the release must hold in both
	}{
		{
			// A user variable in the key: the index is built in a sealed
			// copy of the session, which has none.
			name: "user_variable_work_decline",
			a: attack{stmts: []string{"SET dp_epsilon = 50", "SET dp_reuse = OFF", "SET @v = '-A'",
				fmt.Sprintf("SELECT DISTINCT CONCAT(%s, @v, %s) AS k FROM people WHERE %s ORDER BY k", workKeyPrefix, workKeyTail, workFilter)}},
			want: []string{"h-A", "o-A"},
		},
		{
			name: "user_variable_set_union",
			a: attack{stmts: []string{"SET dp_epsilon = 50", "SET dp_reuse = OFF", "SET @w = '-W'",
				fmt.Sprintf("SELECT DP_SET_UNION(CONCAT(%s, @w, %s), user_id) FROM people WHERE %s", workKeyPrefix, workKeyTail, workFilter)}},
			want: []string{`"h-W"`, `"o-W"`},
		},
		{
			// A system variable in the key: sealed.Resolve makes it a
			// literal, so the index built in a session with autocommit = 1
			// has another key than a release with 0 (release/canon.go).
			name:  "system_variable_other_session",
			build: []string{"SET dp_epsilon = 50", "SET dp_reuse = OFF", "SET autocommit = 1", fmt.Sprintf("SELECT DISTINCT CONCAT(%s, @@autocommit, %s) AS k FROM people", workKeyPrefix, workKeyTail)},
			a: attack{stmts: []string{"SET dp_epsilon = 50", "SET dp_reuse = OFF", "SET autocommit = 0",
				fmt.Sprintf("SELECT DISTINCT CONCAT(%s, @@autocommit, %s) AS k FROM people WHERE %s ORDER BY k", workKeyPrefix, workKeyTail, workFilter)}},
			want: []string{"h0", "o0"},
		},
	}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			var obs []observation
			for _, d := range deployments {
				if at.build != nil {
					c := isoConn(t, d.addr)
					for _, q := range at.build {
						if _, err := readAll(ctx, c, q); err != nil {
							t.Fatalf("%s: %s: %v", d.name, q, err)
						}
					}
				}
				o := observe(t, d.addr, at.a)
				if o.PrepareErr != "" || o.Err != "" {
					t.Fatalf("%s: %s %s", d.name, o.PrepareErr, o.Err)
				}
				obs = append(obs, o)
			}
			compareObservations(t, obs[0], obs[1])
			for i, o := range obs {
				for _, w := range at.want {
					if !strings.Contains(fmt.Sprint(o.Rows), w) {
						t.Errorf("%s: the release %q does not hold %s (the value of this session's expression)", deployments[i].name, o.Rows, w)
					}
				}
			}
			for _, s := range victimSecrets {
				if strings.Contains(fmt.Sprint(obs[1]), s) {
					t.Errorf("the victim's value %q is visible", s)
				}
			}
			t.Logf("without %q, with %q", obs[0].Rows, obs[1].Rows)
		})
	}
	for _, d := range deployments {
		if !strings.Contains(d.log.String(), "release index iso.people(concat(") {
			t.Errorf("%s: no expression index was built; log:\n%s", d.name, d.log.String())
		}
	}
}
