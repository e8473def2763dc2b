package integration

import (
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// The release paths of the second session — GROUP BY over public keys,
// global aggregates, DP_INTERVAL_LOW/HIGH, MEDIAN/PERCENTILE_CONT, the
// configuration's dp: defaults, derived tables, BigQuery's clause, bounds
// chosen privately (with the small-table fallback and the aggregates' own
// Δ0) and the no-key Note — attacked on two deployments differing by the
// victim, as TestIsolation does.
//
// Two kinds of attack. "exact": the victim's rows are evaluated (their
// warnings, errors and panics happen inside the release) but contribute to
// no released value, so every observable must be identical, rows included.
// "masked": the victim contributes to released values, which are DP
// outputs and differ; every number in the rows and in the Notes (chosen
// bounds are DP outputs too) is masked, and everything else — the shape
// of the rows, which cells are NULL, the error, the warnings and their
// count, the session state, the connection and the ledger's count of
// releases — must be identical.

// startSession2 starts one deployment of the isolation table whose
// configuration gives people a table dp: section and column n bounds, so
// that releases without SET take them (BI defaults).
func startSession2(t testing.TB, withVictim bool) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "people.tsv")
	writeIsolationTable(t, data, withVictim)
	cfg := isolationConfig(t, dir, data, "")
	for old, repl := range map[string]string{
		"      - {name: n, type: BIGINT}\n": "      - {name: n, type: BIGINT, dp: {bounds: [0, 5000]}}\n",
		"    privacy_unit: user_id\n":       "    privacy_unit: user_id\n    dp: {max_rows_per_group: 2}\n",
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("isolation configuration changed: no %q", old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	testmysql.WriteFile(t, filepath.Join(dir, "lookup.tsv"), "a\nb\n")
	o := server.GovernedOptions{Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(7) }}}
	return testserver.GovernedYAML(t, dir, cfg, o).Addr()
}

type session2Attack struct {
	attack
	masked bool
}

func session2Attacks() []session2Attack {
	const eps = "SET dp_epsilon = 0.001"
	victim := "user_id = 'victim'"
	pv := "p.user_id = 'victim'"
	var out []session2Attack
	add := func(masked bool, name string, stmts ...string) {
		out = append(out, session2Attack{attack{name: name, stmts: append([]string{eps, "SET dp_reuse = OFF", "SET @x = NULL", "SET @y = NULL"}, stmts...)}, masked})
	}
	bounds := []string{"SET dp_contribution_bounds = '0,1000'", "SET dp_max_rows_per_group = 2", "SET dp_max_groups_contributed = 1"}
	castV := "IF(" + victim + ", CAST(secret AS SIGNED), 1) = 1"               // a warning on the victim's rows, which it drops
	panicV := "IF(" + victim + ", LOCATE('a', email, -3224116), 1) > 0"        // a panic on the victim's rows
	divV := "IF(" + victim + ", 1 DIV (n - 424242), 1) IS NOT NULL"            // an error on the victim's first row only
	hugeV := "LENGTH(IF(" + victim + ", LPAD(email, 60000, email), note)) > 0" // a large value on the victim's rows

	// Public keys: the victim's rows are evaluated in ON; no row has a
	// public key, so every key releases noise around 0 in both.
	for name, cond := range map[string]string{"cast": "IF(" + pv + ", CAST(p.secret AS SIGNED), 1) = 1",
		"panic": "IF(" + pv + ", LOCATE('a', p.email, -3224116), 1) > 0", "division": "IF(" + pv + ", 1 DIV (p.n - 424242), 1) IS NOT NULL"} {
		add(false, "public_keys/on_"+name, "SELECT l.k, COUNT(*), SUM(p.n), AVG(p.n), MEDIAN(p.n), DP_INTERVAL_LOW(COUNT(*)), DP_INTERVAL_HIGH(SUM(p.n)) FROM lookup l LEFT JOIN people p ON p.note = l.k AND "+cond+" GROUP BY l.k")
	}
	// The victim's value fails or panics in the aggregate's argument: the
	// row is skipped; the key set is public.
	add(false, "public_keys/value_panic", "SELECT l.k, PERCENTILE_CONT(IF("+pv+", LOCATE('a', p.email, -3224116), p.n), 0.9), COUNT(*) FROM lookup l LEFT JOIN people p ON p.note = l.k GROUP BY l.k")
	// The victim's email starts with 'a', a public key: it contributes.
	add(true, "public_keys/victim_contributes", "SELECT l.k, COUNT(*), SUM(p.n), MEDIAN(p.n), STDDEV(p.n), DP_INTERVAL_LOW(SUM(p.n)), DP_INTERVAL_HIGH(COUNT(*)) FROM lookup l LEFT JOIN people p ON LEFT(p.email, 1) = l.k GROUP BY l.k")
	add(true, "public_keys/victim_contributes_private_bounds", "SET dp_contribution_bounds = ''", "SELECT l.k, COUNT(*), SUM(p.n), MEDIAN(p.n) FROM lookup l LEFT JOIN people p ON LEFT(p.email, 1) = l.k GROUP BY l.k")

	// Global aggregates and intervals: the victim filtered out by a
	// condition that warns, panics or fails on its rows only.
	for name, cond := range map[string]string{"cast": castV, "panic": panicV, "division": divV, "huge": hugeV} {
		add(false, "global/filter_"+name, append(bounds, "SELECT COUNT(*), SUM(n), AVG(n), MEDIAN(n), VARIANCE(n), DP_INTERVAL_LOW(AVG(n)), DP_INTERVAL_HIGH(SUM(n)) FROM people WHERE user_id <> 'victim' AND "+cond)...)
	}
	add(false, "global/value_panic", append(bounds, "SELECT MEDIAN(IF("+victim+", LOCATE('a', email, -3224116), n)), SUM(IF("+victim+", CAST(secret AS SIGNED) / 0, n)) FROM people WHERE "+victim+" OR user_id LIKE 'u%'")...)
	// The victim contributes: its n = 424242 is clamped; bounds set, from
	// the configuration (n's dp: bounds, the table's m), or chosen
	// privately (201 users: the small-table fallback for Δ0 and m).
	add(true, "global/victim_contributes", append(bounds, "SELECT COUNT(*), SUM(n), AVG(n), MEDIAN(n), PERCENTILE_CONT(n, 0.99), STDDEV(n), DP_INTERVAL_LOW(COUNT(*)), DP_INTERVAL_HIGH(AVG(n)) FROM people")...)
	add(true, "global/config_defaults", "SELECT COUNT(*), SUM(n), MEDIAN(n), DP_INTERVAL_LOW(SUM(n)) FROM people")
	add(true, "global/private_bounds", "SET dp_contribution_bounds = ''", "SET dp_max_rows_per_group = 0", "SELECT COUNT(*), SUM(n), AVG(n), MEDIAN(n), DP_INTERVAL_HIGH(SUM(n)) FROM people")

	// GROUP BY with key selection (nothing released at ε = 0.001): the
	// no-key Note, with Δ0 and the aggregates' Δ0 chosen privately.
	add(true, "groups/private_delta0_note", "SET dp_max_groups_contributed = 0", "SELECT note, COUNT(*), SUM(n), MEDIAN(n) FROM people GROUP BY note")
	add(false, "groups/filter_cast_note", append(bounds, "SELECT note, COUNT(*), AVG(n), DP_INTERVAL_LOW(COUNT(*)) FROM people WHERE "+castV+" GROUP BY note")...)

	// Derived tables, merged into one release.
	add(false, "derived/inner_filter_cast", append(bounds, "SELECT s.note, COUNT(*), SUM(s.n) FROM (SELECT note, n, secret FROM people WHERE "+castV+") AS s GROUP BY s.note")...)
	add(false, "derived/inner_value_panic", append(bounds, "SELECT COUNT(*), SUM(s.v) FROM (SELECT IF("+victim+", LOCATE('a', email, -3224116), n) AS v FROM people WHERE user_id <> 'victim') s")...)
	add(false, "derived/outer_filter_division", append(bounds, "SELECT COUNT(*), MEDIAN(s.n) FROM (SELECT user_id, n FROM people) AS s WHERE IF(s."+victim+", 1 DIV (s.n - 424242), 1) IS NOT NULL AND s.user_id <> 'victim'")...)
	// Session state from inside a merged derived table, and the outer
	// query's SQL_CALC_FOUND_ROWS.
	add(false, "derived/assign_state", append(bounds, "SELECT COUNT(*), SUM(s.n) FROM (SELECT n, (@x := secret) AS sec FROM people WHERE "+victim+") s")...)
	add(false, "derived/last_insert_id", append(bounds, "SELECT s.note, COUNT(*) FROM (SELECT note FROM people WHERE LAST_INSERT_ID(n) > 0 AND "+victim+") s GROUP BY s.note")...)
	add(false, "derived/found_rows", append(bounds, "SELECT SQL_CALC_FOUND_ROWS s.note, COUNT(*) FROM (SELECT note FROM people WHERE "+castV+") s GROUP BY s.note LIMIT 1")...)
	add(false, "derived/refused_limit", "SELECT COUNT(*) FROM (SELECT n FROM people WHERE "+victim+" LIMIT 1) s")

	// BigQuery's clause.
	add(false, "bigquery/filter_cast", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 0.001, delta = 1e-6, max_groups_contributed = 1, privacy_unit_column = user_id) note, COUNT(*), AVG(n) FROM people WHERE "+castV+" GROUP BY note")
	add(false, "bigquery/global_panic", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 0.001, delta = 1e-6, privacy_unit_column = user_id) COUNT(*), SUM(n) FROM people WHERE user_id <> 'victim' AND "+panicV)
	add(false, "bigquery/public_keys", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 0.001, delta = 1e-6, privacy_unit_column = user_id) l.k, COUNT(*), MEDIAN(p.n) FROM lookup l LEFT JOIN people p ON p.note = l.k AND IF("+pv+", CAST(p.secret AS SIGNED), 1) = 1 GROUP BY l.k")
	add(false, "bigquery/derived", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 0.001, delta = 1e-6, privacy_unit_column = user_id) s.note, COUNT(*) FROM (SELECT note, user_id FROM people WHERE "+castV+") s GROUP BY s.note")
	add(false, "bigquery/wrong_unit", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(privacy_unit_column = email) note, COUNT(*) FROM people WHERE "+victim+" GROUP BY note")
	return out
}

var numberRE = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`)

// maskNumbers replaces every number of the released rows and of the
// Notes by '#': DP outputs that may differ between the deployments.
func maskNumbers(o observation) observation {
	rows := make([][]string, len(o.Rows))
	for i, r := range o.Rows {
		rows[i] = make([]string, len(r))
		for j, c := range r {
			if _, err := strconv.ParseFloat(c, 64); err == nil {
				c = "#"
			}
			rows[i][j] = c
		}
	}
	o.Rows = rows
	warns := make([][]string, len(o.Warnings))
	for i, w := range o.Warnings {
		warns[i] = append([]string(nil), w...)
		if len(w) == 3 && w[0] == "Note" {
			warns[i][2] = numberRE.ReplaceAllString(w[2], "#")
		}
	}
	o.Warnings = warns
	return o
}

// TestSession2Isolation runs session2Attacks on both deployments.
func TestSession2Isolation(t *testing.T) {
	without := startSession2(t, false)
	with := startSession2(t, true)
	for _, a := range session2Attacks() {
		t.Run(a.name, func(t *testing.T) {
			o0 := observe(t, without, a.attack)
			o1 := observe(t, with, a.attack)
			if !o1.Alive || !o0.Alive {
				t.Errorf("connection lost: without victim %v, with victim %v", o0.Alive, o1.Alive)
			}
			if o0.PrepareErr != "" || o1.PrepareErr != "" {
				t.Fatalf("setting up the session failed: %s / %s", o0.PrepareErr, o1.PrepareErr)
			}
			if a.masked {
				o0, o1 = maskNumbers(o0), maskNumbers(o1)
			}
			compareObservations(t, o0, o1)
			for _, s := range victimSecrets {
				if text := strings.Join(strings.Fields(strings.ReplaceAll(strings.ReplaceAll(
					strings.Join(flatten(o1), " "), "[", " "), "]", " ")), " "); strings.Contains(text, s) {
					t.Errorf("the victim's value %q is visible: %s", s, text)
				}
			}
			if testing.Verbose() {
				t.Logf("err=%q rows=%v warnings=%v", o1.Err, o1.Rows, o1.Warnings)
			}
		})
	}
}

// flatten is every string of an observation.
func flatten(o observation) []string {
	out := []string{o.Err, o.WarnCount, o.StateErr, o.BudgetErr, o.PrepareErr}
	for _, t := range [][][]string{o.Rows, o.Warnings, o.State, o.Budget} {
		for _, r := range t {
			out = append(out, r...)
		}
	}
	return out
}
