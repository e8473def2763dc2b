package integration

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Release isolation: every attack an analyst can send is run against two
// deployments whose protected table differs by one person, the victim, and
// everything the client can observe is compared — the rows or the error
// (code and text), the warnings and their count, the session state
// afterwards (LAST_INSERT_ID, FOUND_ROWS, ROW_COUNT, user variables,
// sql_mode) and whether the connection survives. A release is private only
// if all of these are the same for both: with a seeded random source (the
// same seed in both deployments) and ε = 0.001 the released sets are empty
// in both, so any difference is a leak of the evaluation itself. Timing is
// measured by BenchmarkIsolationTiming, not asserted.

// The victim's rows and values: none may appear in any observation.
var (
	victimSecrets = []string{"alice.victim@secret.example", "123-45-6789", "hunter2-secret-phrase", "424242", "1999-12-31", "victim only note"}
	victimRows    = [][]string{
		{"victim", "alice.victim@secret.example", "123-45-6789", "hunter2-secret-phrase", "424242", "1999-12-31", "victim only note"},
		{"victim", "alice.victim@secret.example", "123-45-6789", "hunter2-secret-phrase", "424243", "2000-01-01", "victim only note"},
		{"victim", "alice.victim@secret.example", "123-45-6789", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "1", "2000-01-02", "hello"},
	}
)

// writeIsolationTable writes the people table: 200 ordinary users, and the
// victim when withVictim.
func writeIsolationTable(t testing.TB, path string, withVictim bool) {
	t.Helper()
	var b strings.Builder
	for u := range 200 {
		for k := range 3 {
			fmt.Fprintf(&b, "u%03d\tu%03d@example.org\t000-00-%04d\tsecret of u%03d\t%d\t2020-01-%02d\t%s\n",
				u, u, u, u, u*10+k, 1+k, []string{"hello", "world", "common note"}[k])
		}
	}
	if withVictim {
		for _, r := range victimRows {
			b.WriteString(strings.Join(r, "\t") + "\n")
		}
	}
	testmysql.WriteFile(t, path, b.String())
}

// startIsolation starts one deployment (the victim in it or not), with
// releases seeded identically.
func startIsolation(t testing.TB, withVictim bool, log ...io.Writer) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "people.tsv")
	writeIsolationTable(t, data, withVictim)
	return startIsolationAt(t, dir, data, log...).Addr()
}

// startIsolationAt serves the isolation deployment from dir with the people
// table in data (startIsolation's; called again on the same dir, it
// restarts on the same ledger).
func startIsolationAt(t testing.TB, dir, data string, log ...io.Writer) *server.Governed {
	t.Helper()
	return startIsolationLimits(t, dir, data, "", log...)
}

// isolationConfig is the configuration of an isolation deployment: the
// protected people table read from data, the public lookup table in dir,
// limits' lines added to the limits section, an administrator and the
// analyst, and one more analyst per (user, password) pair of more.
func isolationConfig(t testing.TB, dir, data, limits string, more ...[2]string) string {
	t.Helper()
	var analysts strings.Builder
	for _, a := range append([][2]string{{"analyst", analystPassword}}, more...) {
		fmt.Fprintf(&analysts, "    - user: %s\n      password_hash: '%s'\n      budgets:\n        - {database: iso, epsilon: 100000, delta: 0.5}\n",
			a[0], testserver.HashPassword(t, config.NativePassword, a[1]))
	}
	return fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
datasets:
  - database: iso
    table: people
    file: %s
    columns:
      - {name: user_id, type: VARCHAR(32)}
      - {name: email, type: TEXT}
      - {name: ssn, type: VARCHAR(16)}
      - {name: secret, type: TEXT}
      - {name: n, type: BIGINT}
      - {name: d, type: DATE}
      - {name: note, type: TEXT}
    privacy_unit: user_id
  - database: iso
    table: lookup
    file: %s
    columns:
      - {name: k, type: VARCHAR(32)}
    public: true
limits:
  max_budget_delta: 0.5
%saccounts:
  admins:
    - {user: admin, password_hash: '%s'}
  analysts:
%s`, data, filepath.Join(dir, "lookup.tsv"), limits, testserver.HashPassword(t, config.NativePassword, adminPassword), analysts.String())
}

// startIsolationLimits is startIsolationAt with more lines of the
// configuration's limits section (each "  name: value\n").
func startIsolationLimits(t testing.TB, dir, data, limits string, log ...io.Writer) *server.Governed {
	t.Helper()
	return startIsolationConfig(t, dir, isolationConfig(t, dir, data, limits), log...)
}

// startIsolationConfig serves cfg (an isolationConfig, perhaps amended)
// from dir, with the public lookup table and seeded releases.
func startIsolationConfig(t testing.TB, dir, cfg string, log ...io.Writer) *server.Governed {
	t.Helper()
	testmysql.WriteFile(t, filepath.Join(dir, "lookup.tsv"), "a\nb\n")
	o := server.GovernedOptions{Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(7) }}}
	if len(log) > 0 {
		o.Log = log[0]
	}
	return testserver.GovernedYAML(t, dir, cfg, o)
}

// isoConn opens one analyst connection (server-side prepared statements).
func isoConn(t testing.TB, addr string) *dbsql.Conn {
	t.Helper()
	return testmysql.Session(t, testmysql.Login{Addr: addr, User: "analyst", Password: analystPassword, DB: "iso", Timeout: 10 * time.Second, ReadTimeout: 60 * time.Second})
}

// observation is everything a client sees of one attack.
type observation struct {
	Rows       [][]string
	Err        string
	Warnings   [][]string
	WarnCount  string
	State      [][]string
	StateErr   string
	Alive      bool
	Budget     [][]string
	BudgetErr  string
	PrepareErr string
}

// attack is a list of statements sent on one fresh connection; the last is
// observed. Args, when set, are bound to the last statement as a server-side
// prepared statement.
type attack struct {
	name  string
	stmts []string
	args  []any
}

// observe runs a on a new connection of the deployment at addr.
func observe(t *testing.T, addr string, a attack) observation {
	conn := isoConn(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var o observation
	for i, q := range a.stmts {
		last := i == len(a.stmts)-1
		var rows [][]string
		var err error
		if last && a.args != nil {
			rows, err = readAll(ctx, conn, q, a.args...)
		} else {
			rows, err = readAll(ctx, conn, q)
		}
		if last {
			o.Rows = rows
			if err != nil {
				o.Err = testmysql.ErrText(err)
			}
		} else if err != nil {
			o.PrepareErr += fmt.Sprintf("[%d] %s; ", i, testmysql.ErrText(err))
		}
	}
	var err error
	if o.Warnings, err = readAll(ctx, conn, "SHOW WARNINGS"); err != nil {
		o.Warnings = [][]string{{"error: " + testmysql.ErrText(err)}}
	}
	for _, w := range o.Warnings {
		for j := range w {
			// The time of a reused release's Note: when the deployment
			// ran, not what it holds.
			w[j] = noteTime.ReplaceAllString(w[j], "TIME UTC")
		}
	}
	if wc, err := readAll(ctx, conn, "SELECT @@warning_count"); err == nil && len(wc) == 1 {
		o.WarnCount = wc[0][0]
	}
	o.State, err = readAll(ctx, conn, "SELECT LAST_INSERT_ID(), FOUND_ROWS(), ROW_COUNT(), @x, @y, @@session.sql_mode")
	if err != nil {
		o.StateErr = testmysql.ErrText(err)
	}
	var one int
	o.Alive = conn.QueryRowContext(ctx, "SELECT 1").Scan(&one) == nil && one == 1
	if o.Budget, err = readAll(ctx, conn, "SELECT database_name, spent_epsilon, spent_delta, releases FROM DP_BUDGET()"); err != nil {
		o.BudgetErr = testmysql.ErrText(err)
	}
	return o
}

// isolationAttacks are the attacks of TestIsolation, by leak class. The
// victim is user_id 'victim'; ε = 0.001 per release.
func isolationAttacks() []attack {
	const eps = "SET dp_epsilon = 0.001"
	victim := "user_id = 'victim'"
	var out []attack
	add := func(name string, stmts ...string) {
		out = append(out, attack{name: name, stmts: append([]string{eps, "SET @x = NULL", "SET @y = NULL"}, stmts...)})
	}
	// Warnings carrying values, and their count.
	add("warning/inet_aton", "SELECT DISTINCT note FROM people WHERE "+victim+" AND INET_ATON(email) IS NULL")
	add("warning/cast_date", "SELECT DISTINCT note FROM people WHERE "+victim+" AND CAST(ssn AS DATE) IS NULL")
	add("warning/str_to_date", "SELECT DISTINCT note FROM people WHERE "+victim+" AND STR_TO_DATE(secret, '%Y-%m-%d') IS NULL")
	add("warning/concat_ws_all_rows", "SELECT DISTINCT note FROM people WHERE INET_ATON(CONCAT_WS('|', user_id, email, ssn, secret, n, d)) IS NULL")
	add("warning/count_div_zero", "SELECT DISTINCT note FROM people WHERE "+victim+" AND n / 0 IS NULL")
	add("warning/cast_signed_key", "SELECT DISTINCT CAST(secret AS SIGNED) FROM people WHERE "+victim)
	add("warning/cast_decimal_key", "SELECT DISTINCT CAST(email AS DECIMAL(5,2)) FROM people WHERE "+victim)
	add("warning/group_by_key", "SELECT INET_ATON(email) FROM people WHERE "+victim+" GROUP BY INET_ATON(email)")
	add("warning/set_union_item", "SELECT DP_SET_UNION(INET_ATON(email), user_id) FROM people")
	add("warning/set_union_filter", "SELECT DP_SET_UNION(note, user_id) FROM people WHERE CAST(ssn AS DATE) IS NULL")
	add("warning/convert_using", "SELECT DISTINCT CONVERT(secret USING latin1) FROM people WHERE "+victim)
	add("warning/strict_mode", "SET sql_mode = 'TRADITIONAL'", "SELECT DISTINCT note FROM people WHERE "+victim+" AND n / 0 IS NULL")
	add("warning/date_add", "SELECT DISTINCT note FROM people WHERE "+victim+" AND DATE_ADD(d, INTERVAL n YEAR) IS NULL")
	add("warning/in_list", "SELECT DISTINCT note FROM people WHERE "+victim+" AND INET_ATON(email) IN (1, 2, 3)")
	add("warning/case", "SELECT DISTINCT CASE WHEN "+victim+" THEN CAST(secret AS SIGNED) ELSE 0 END FROM people")
	add("warning/inside_view_of_derived", "SELECT w FROM (SELECT DISTINCT INET_ATON(email) AS w FROM people WHERE "+victim+") AS t")
	add("warning/union_all", "SELECT DISTINCT INET_ATON(email) FROM people WHERE "+victim+" UNION ALL SELECT DISTINCT CAST(ssn AS DATE) FROM people WHERE "+victim)
	add("warning/json", "SELECT DISTINCT note FROM people WHERE "+victim+" AND JSON_EXTRACT(secret, '$.a') IS NULL")
	add("warning/ngrams_then_count", "SELECT * FROM DP_NGRAMS('iso.people', 'secret', 'user_id', 'epsilon=0.001')")
	out = append(out, attack{name: "warning/prepared", stmts: []string{eps, "SET @x = NULL", "SET @y = NULL",
		"SELECT DISTINCT note FROM people WHERE user_id = ? AND INET_ATON(email) IS NULL"}, args: []any{"victim"}})

	// Quantiles: warnings, panics and errors of the value, with the bounds
	// set (a privately chosen bound is a DP output, named in a Note).
	qb := []string{"SET dp_contribution_bounds = '0,10'", "SET dp_max_rows_per_group = 1", "SET dp_max_groups_contributed = 1"}
	add("quantile/warning_value", append(qb, "SELECT note, MEDIAN(INET_ATON(email)) FROM people GROUP BY note")...)
	add("quantile/panic_value", append(qb, "SELECT note, PERCENTILE_CONT(IF("+victim+", LOCATE('a', email, -3224116), 1), 0.5) FROM people GROUP BY note")...)
	add("quantile/error_value", append(qb, "SELECT note, MEDIAN(1 DIV (n - 424242)), COUNT(*) FROM people GROUP BY note")...)

	// Session state.
	add("state/last_insert_id_filter", "SELECT DISTINCT note FROM people WHERE LAST_INSERT_ID(n) > 0 AND "+victim)
	add("state/last_insert_id_union", "SELECT DISTINCT note FROM people WHERE LAST_INSERT_ID(n) > 0 UNION ALL SELECT DISTINCT note FROM people WHERE n = LAST_INSERT_ID()")
	add("state/assign_key", "SELECT DISTINCT @x := secret FROM people WHERE "+victim)
	add("state/assign_filter", "SELECT DISTINCT note FROM people WHERE (@y := email) IS NOT NULL")
	add("state/found_rows", "SELECT SQL_CALC_FOUND_ROWS DISTINCT note FROM people WHERE "+victim+" LIMIT 1")
	add("state/user_var_read", "SET @x = 'victim'", "SELECT DISTINCT note FROM people WHERE user_id = @x")
	add("state/row_count", "SELECT DISTINCT note FROM people WHERE "+victim+" AND ROW_COUNT() = -1")

	// Panics and error texts.
	add("panic/locate_in_if", "SELECT DISTINCT note FROM people WHERE IF("+victim+" AND email LIKE 'a%', LOCATE('a', email, -3224116), 1) > 0")
	add("panic/scalar_subquery", "SELECT (SELECT DISTINCT LOCATE('a', email, -3224116) FROM people WHERE "+victim+" LIMIT 1)")
	add("panic/last_insert_id_null", "SELECT DISTINCT note FROM people WHERE IF("+victim+", LAST_INSERT_ID(NULL), 1) = 1")
	add("panic/empty_escape", "SELECT DISTINCT note FROM people WHERE "+victim+" AND email LIKE 'a%' ESCAPE ''")
	add("panic/substring_index", "SELECT DISTINCT SUBSTRING_INDEX(email, '@', -9223372036854775807) FROM people WHERE "+victim)
	add("panic/conv", "SELECT DISTINCT CONV(secret, 36, -2) FROM people WHERE "+victim)
	add("panic/elt", "SELECT DISTINCT ELT(n, 'a', 'b') FROM people WHERE "+victim)
	add("panic/lpad_huge", "SELECT DISTINCT LPAD(email, 1000000000, 'x') FROM people WHERE "+victim)
	add("error/json_key", "SELECT DISTINCT JSON_EXTRACT(secret, '$') FROM people WHERE "+victim)
	add("error/division_key", "SELECT DISTINCT 1 DIV (n - 424242) FROM people WHERE "+victim)

	// Memory: intermediate values beyond 64 KiB fail, in a victim-only branch.
	hex := "email"
	for range 30 {
		hex = "HEX(" + hex + ")"
	}
	add("memory/nested_hex", "SELECT DISTINCT note FROM people WHERE IF("+victim+", LENGTH("+hex+"), 0) > 0")
	b64 := "secret"
	for range 40 {
		b64 = "TO_BASE64(CONCAT(" + b64 + ", " + b64[:min(len(b64), 6)] + "))"
	}
	add("memory/nested_base64", "SELECT DISTINCT note FROM people WHERE "+victim+" AND LENGTH("+b64+") > 0")

	// Time: functions outside the allow-list are refused before anything
	// runs; the cost of allowed ones is bounded per row (the benchmark
	// measures what remains).
	add("time/sleep", "SELECT DISTINCT note FROM people WHERE IF("+victim+", SLEEP(1), 0) = 0")
	add("time/benchmark", "SELECT DISTINCT note FROM people WHERE "+victim+" AND BENCHMARK(100000000, MD5(email)) = 0")
	add("time/like_backtracking", "SELECT DISTINCT note FROM people WHERE "+victim+" AND secret LIKE '%a%a%a%a%a%a%a%a%a%a%a%b'")

	// The release index (plain key column, no filter or a filter on the
	// privacy unit only, evaluated once per user): warnings, errors and
	// panics that only the victim's unit value causes, and the warning
	// count a per-user evaluation could expose.
	add("index/whole_column", "SELECT DISTINCT note FROM people")
	add("index/set_union_whole_column", "SELECT DP_SET_UNION(note, user_id) FROM people")
	add("index/warning_every_user", "SELECT DISTINCT note FROM people WHERE INET_ATON(user_id) IS NULL")
	add("index/warning_victim", "SELECT DISTINCT note FROM people WHERE IF("+victim+", CAST(user_id AS SIGNED), 1) = 1")
	add("index/division_victim", "SELECT DISTINCT note FROM people WHERE IF("+victim+", 1 / 0, 1) IS NOT NULL")
	add("index/panic_victim", "SELECT DISTINCT note FROM people WHERE IF("+victim+", LOCATE('a', user_id, -3224116), 1) > 0")
	add("index/set_union_cast_victim", "SELECT DP_SET_UNION(note, user_id) FROM people WHERE IF("+victim+", CAST(user_id AS DATE), 1) IS NOT NULL")
	add("index/group_by_victim_only", "SELECT note FROM people WHERE "+victim+" GROUP BY note")
	// The index of an expression key (built outside the statement under a
	// copy of the session): a key that warns, fails or panics only on the
	// victim's rows, with and without a filter on the unit.
	add("index/expr_key_cast_victim", "SELECT DISTINCT IF("+victim+", CAST(secret AS SIGNED), LOWER(note)) AS k FROM people")
	add("index/expr_key_division_victim", "SELECT DP_SET_UNION(IF("+victim+", 1 / 0, UPPER(note)), user_id) FROM people WHERE user_id > 0")
	add("index/expr_key_panic_victim", "SELECT DISTINCT IF("+victim+", LOCATE('a', note, -3224116), CONCAT(note, '!')) AS k FROM people")

	// Public lookups (IN / EXISTS over the public table lookup): the
	// public side is read before the protected scan, the probe is sealed.
	add("public/in_victim_filter", "SELECT DISTINCT note FROM people WHERE "+victim+" AND secret IN (SELECT k FROM lookup)")
	add("public/in_warning_left", "SELECT DISTINCT note FROM people WHERE CONCAT(INET_ATON(email), '') IN (SELECT k FROM lookup)")
	add("public/in_cast_warning_victim", "SELECT DISTINCT note FROM people WHERE "+victim+" AND CAST(CAST(ssn AS DATE) AS CHAR) NOT IN (SELECT k FROM lookup)")
	add("public/in_number_cast", "SELECT DISTINCT note FROM people WHERE CAST(secret AS SIGNED) IN (SELECT LENGTH(k) FROM lookup)")
	add("public/in_huge_value", "SELECT DISTINCT note FROM people WHERE IF("+victim+", LPAD(email, 60000, email), user_id) IN (SELECT k FROM lookup)")
	add("public/in_error_key", "SELECT DISTINCT JSON_EXTRACT(secret, '$') FROM people WHERE "+victim+" AND note NOT IN (SELECT k FROM lookup)")
	add("public/exists_victim", "SELECT DISTINCT note FROM people p WHERE NOT EXISTS (SELECT 1 FROM lookup l WHERE l.k = IF(p."+victim+", p.email, p.user_id))")
	add("public/exists_warning", "SELECT DISTINCT note FROM people p WHERE EXISTS (SELECT 1 FROM lookup l WHERE l.k = CONCAT(INET_ATON(p.email), ''))")
	add("public/state_in_public_side", "SELECT DISTINCT note FROM people WHERE user_id IN (SELECT k FROM lookup WHERE LAST_INSERT_ID(7) > 0)")
	add("public/group_by", "SELECT note FROM people WHERE email NOT IN (SELECT k FROM lookup) AND "+victim+" GROUP BY note")
	add("public/set_union", "SELECT DP_SET_UNION(note, user_id) FROM people WHERE CAST(ssn AS DATE) IS NULL AND note NOT IN (SELECT k FROM lookup)")
	add("public/in_protected_refused", "SELECT DISTINCT note FROM people WHERE email IN (SELECT email FROM people WHERE "+victim+")")
	add("public/exists_protected_refused", "SELECT DISTINCT note FROM people p WHERE EXISTS (SELECT 1 FROM people q WHERE q.user_id = p.user_id AND q."+victim+")")
	add("public/join_victim_key", "SELECT DISTINCT l.k, p.note FROM people p JOIN lookup l ON l.k = IF(p."+victim+", p.email, 'a')")
	add("public/join_warning", "SELECT DISTINCT l.k FROM people p JOIN lookup l ON l.k = CONCAT(INET_ATON(p.email), '')")
	add("public/left_join_cast", "SELECT DISTINCT l.k, CAST(p.ssn AS DATE) FROM people p LEFT JOIN lookup l ON l.k = p.user_id WHERE p."+victim)
	add("public/join_group_by", "SELECT l.k, COUNT(*) FROM people p JOIN lookup l ON l.k = LEFT(p.note, 1) WHERE p."+victim+" GROUP BY l.k")
	add("public/join_protected_refused", "SELECT DISTINCT p.note FROM people p JOIN people q ON q.email = p.email WHERE q."+victim)
	add("public/in_or_victim", "SELECT DISTINCT note FROM people WHERE user_id IN (SELECT k FROM lookup) OR "+victim)
	out = append(out, attack{name: "public/prepared", stmts: []string{eps, "SET @x = NULL", "SET @y = NULL",
		"SELECT DISTINCT note FROM people WHERE user_id = ? AND CONCAT(INET_ATON(email), '') NOT IN (SELECT k FROM lookup WHERE k <> ?)"}, args: []any{"victim", "a"}})

	// Other rows and other tables from inside a release.
	add("other/subquery", "SELECT DISTINCT note FROM people WHERE user_id IN (SELECT user_id FROM people WHERE "+victim+")")
	add("other/rand", "SELECT DISTINCT note FROM people WHERE "+victim+" OR RAND() < 0.5")
	add("other/database", "SELECT DISTINCT CONCAT(note, DATABASE()) FROM people WHERE "+victim)
	return out
}

// TestIsolation runs every attack on both deployments and requires the
// same observation, no victim value anywhere, and a live connection.
func TestIsolation(t *testing.T) {
	var logWithout, logWith testserver.Log
	without := startIsolation(t, false, &logWithout)
	with := startIsolation(t, true, &logWith)
	// The index/ attacks must take the release index's path: both
	// deployments build the index of people.note.
	defer func() {
		for name, l := range map[string]*testserver.Log{"without": &logWithout, "with": &logWith} {
			if !strings.Contains(l.String(), "release index iso.people(note by user_id)") {
				t.Errorf("deployment %s victim: no release index was built for people.note (its log:\n%s)", name, l.String())
			}
			// An expression's index is the analyst's own (issue 20).
			if n := len(regexp.MustCompile(`release index iso\.people\([^\n]*, account analyst\): [^\n]*built in`).FindAllString(l.String(), -1)); n < 3 {
				t.Errorf("deployment %s victim: %d release indexes of expressions were built, want 3 (its log:\n%s)", name, n, l.String())
			}
		}
	}()
	for _, a := range isolationAttacks() {
		t.Run(a.name, func(t *testing.T) {
			o0 := observe(t, without, a)
			o1 := observe(t, with, a)
			if !o1.Alive || !o0.Alive {
				t.Errorf("connection lost: without victim %v, with victim %v", o0.Alive, o1.Alive)
			}
			if o0.PrepareErr != "" || o1.PrepareErr != "" {
				t.Fatalf("setting up the session failed: %s / %s", o0.PrepareErr, o1.PrepareErr)
			}
			compareObservations(t, o0, o1)
			text := fmt.Sprintf("%+v", o1)
			for _, s := range victimSecrets {
				if strings.Contains(text, s) {
					t.Errorf("the victim's value %q is visible: %s", s, text)
				}
			}
			if testing.Verbose() {
				t.Logf("err=%q warnings=%v state=%v", o1.Err, o1.Warnings, o1.State)
			}
		})
	}
}

// compareObservations reports every observable that differs.
func compareObservations(t *testing.T, without, with observation) {
	t.Helper()
	a, b := reflect.ValueOf(without), reflect.ValueOf(with)
	for i := range a.NumField() {
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			t.Errorf("%s differs with the victim: without %v, with %v", a.Type().Field(i).Name, a.Field(i).Interface(), b.Field(i).Interface())
		}
	}
}

// BenchmarkIsolationTiming measures the release time of a predicate true on
// the victim's rows against the same predicate on a deployment without the
// victim, for a cheap filter and for one whose costly branch only the victim
// selects. Run: go test -run XXX -bench IsolationTiming -benchtime 20x ./integration
func BenchmarkIsolationTiming(b *testing.B) {
	if os.Getenv("DPSQL_ISOLATION_BENCH") == "" && testing.Short() {
		b.Skip("timing benchmark")
	}
	without := startIsolation(b, false)
	with := startIsolation(b, true)
	hex := "email"
	for range 12 {
		hex = "HEX(" + hex + ")"
	}
	for _, q := range []struct{ name, sql string }{
		{"cheap", "SELECT DISTINCT note FROM people WHERE user_id = 'victim' AND ssn LIKE '123%'"},
		{"costly_branch", "SELECT DISTINCT note FROM people WHERE IF(user_id = 'victim', LENGTH(" + hex + "), 0) > 0"},
		{"public_lookup", "SELECT DISTINCT note FROM people WHERE IF(user_id = 'victim', " + hex + ", user_id) IN (SELECT k FROM lookup)"},
		{"public_join", "SELECT DISTINCT l.k FROM people p JOIN lookup l ON l.k = IF(p.user_id = 'victim', " + hex + ", p.user_id)"},
	} {
		for _, d := range []struct {
			name string
			addr string
		}{{"without", without}, {"with", with}} {
			b.Run(q.name+"/"+d.name, func(b *testing.B) {
				conn := isoConn(b, d.addr)
				ctx := context.Background()
				if _, err := conn.ExecContext(ctx, "SET dp_epsilon = 0.001"); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					if _, err := readAll(ctx, conn, q.sql); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
