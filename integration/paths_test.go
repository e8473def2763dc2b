package integration

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	dprelease "github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Paths of a release and other analysts (issue 20). Whether a release
// reads an index, a corpus or the table may depend on the statement, the
// table's version and size, the configuration and the analyst's own
// history only: every attack below is sent to two deployments differing by
// one victim, and the path taken (dprelease.Paths, counted by the server) must
// be the same in both, with every other observable. The timing of the same
// attacks is measured by BenchmarkTimingAttacks, not asserted.

const analyst2Password = "analyst-pw-2"

// startPaths starts a deployment of the people table with users ordinary
// users (and the victim when withVictim), release_row_work 25000 (so that
// the victim's key work plus a unit filter's work is over it, each alone
// under it) and two analysts, analyst and analyst2; more is added to its
// limits section. It returns once the server's own index builds ended.
func startPaths(t testing.TB, users int, withVictim bool, more string, log *testserver.Log) *server.Governed {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "people.tsv")
	var b strings.Builder
	for u := range users {
		for k := range 3 {
			fmt.Fprintf(&b, "u%05d\tu%05d@example.org\t000-00-%04d\tsecret of u%05d\t%d\t2020-01-%02d\t%s\n",
				u, u, u%10000, u, u*10+k, 1+k, []string{"hello", "world", "common note"}[k])
		}
	}
	if withVictim {
		for _, r := range victimRows {
			b.WriteString(strings.Join(r, "\t") + "\n")
		}
	}
	testmysql.WriteFile(t, data, b.String())
	testmysql.WriteFile(t, filepath.Join(dir, "lookup.tsv"), "a\nb\n")
	cfg := isolationConfig(t, dir, data, "  release_row_work: 25000\n"+more, [2]string{"analyst2", analyst2Password})
	o := server.GovernedOptions{Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(7) }}}
	if log != nil {
		o.Log = log
	}
	g := testserver.GovernedYAML(t, dir, cfg, o)
	select {
	case <-g.IndexesPrebuilt():
	case <-time.After(2 * time.Minute):
		t.Fatal("the server's own index builds did not end")
	}
	return g
}

// analystConn opens a connection of user (analyst or analyst2).
func analystConn(t testing.TB, addr, user, password string) *dbsql.Conn {
	t.Helper()
	return testmysql.Session(t, testmysql.Login{Addr: addr, User: user, Password: password, DB: "iso", Timeout: 10 * time.Second, ReadTimeout: 2 * time.Minute})
}

// The statements of the path attacks. The key's work is ~250 bytes per
// byte of secret (56 for the victim's longest: 14,000); the unit filter's
// is ~15,000: together over release_row_work (25,000) for the victim's
// rows only. Before issue 20 the index was read only when every kept
// user's key work plus filter work fitted, so the victim's presence sent
// the release to a full scan.
const (
	pathKey    = "CONCAT(IF(note = 'hello', 'h', 'o'), LEFT(LPAD(secret, LENGTH(secret) * 250, 'x'), 0))"
	pathFilter = "LENGTH(LPAD(user_id, 15000, 'y')) > 0"
	// pathProbe is one step of the binary search of issue 20: the key's
	// work is large on the victim's rows iff the victim's ssn < '2'.
	pathProbe = "CONCAT(IF(note = 'hello', 'h', 'o'), LEFT(LPAD(secret, IF(user_id = 'victim' AND ssn < '2', 16000, 100), 'x'), 0))"
)

// pathAttack is an attack with the paths it must take in both deployments.
type pathAttack struct {
	a    attack
	want dprelease.Paths
}

func pathAttacks() []pathAttack {
	pre := []string{"SET dp_epsilon = 0.001", "SET dp_reuse = OFF", "SET @x = NULL", "SET @y = NULL"}
	at := func(name string, want dprelease.Paths, stmts ...string) pathAttack {
		return pathAttack{attack{name: name, stmts: append(slices.Clone(pre), stmts...)}, want}
	}
	hex := "user_id"
	for range 12 {
		hex = "HEX(" + hex + ")"
	}
	victimCostly := "IF(user_id = 'victim', LENGTH(LPAD(user_id, 15000, 'y')), 1) > 0"
	return []pathAttack{
		at("column/no_filter", dprelease.Paths{Index: 1}, "SELECT DISTINCT note FROM people"),
		at("column/unit_filter", dprelease.Paths{Index: 1}, "SELECT DISTINCT note FROM people WHERE user_id <> 'victim'"),
		at("column/unit_filter_victim_costly", dprelease.Paths{Index: 1}, "SELECT DISTINCT note FROM people WHERE "+victimCostly),
		at("column/unit_filter_victim_hex", dprelease.Paths{Index: 1}, "SELECT DISTINCT note FROM people WHERE LENGTH(IF(user_id = 'victim', "+hex+", user_id)) > 0"),
		at("column/set_union", dprelease.Paths{Index: 1}, "SELECT DP_SET_UNION(note, user_id) FROM people WHERE user_id LIKE 'u%'"),
		at("column/other_filter_scans", dprelease.Paths{Scan: 1}, "SELECT DISTINCT note FROM people WHERE ssn LIKE '123%'"),
		at("expr/no_filter", dprelease.Paths{ExprIndex: 1}, "SELECT DISTINCT "+pathKey+" AS k FROM people"),
		at("expr/unit_filter_oracle", dprelease.Paths{ExprIndex: 1}, "SELECT DISTINCT "+pathKey+" AS k FROM people WHERE "+pathFilter),
		at("expr/unit_filter_victim_costly", dprelease.Paths{ExprIndex: 1}, "SELECT DISTINCT "+pathKey+" AS k FROM people WHERE "+victimCostly),
		at("expr/ssn_probe", dprelease.Paths{ExprIndex: 1}, "SELECT DISTINCT "+pathProbe+" AS k FROM people WHERE "+pathFilter),
		at("expr/ssn_probe_no_filter", dprelease.Paths{ExprIndex: 1}, "SELECT DISTINCT "+pathProbe+" AS k FROM people"),
		at("expr/set_union_unit_filter", dprelease.Paths{ExprIndex: 1}, "SELECT DP_SET_UNION("+pathKey+", user_id) FROM people WHERE "+pathFilter),
		at("expr/integer_key", dprelease.Paths{ExprIndex: 1}, "SELECT DISTINCT LENGTH(secret) DIV 8 AS k FROM people WHERE "+pathFilter),
		// GROUP BY with aggregates of the key alone: the column's index
		// (release/groupindex.go), whatever the victim's rows; an
		// aggregate of another column scans.
		at("group/column", dprelease.Paths{Group: 1}, "SELECT note, COUNT(*), COUNT(DISTINCT user_id) FROM people GROUP BY note"),
		at("group/unit_filter_victim_costly", dprelease.Paths{Group: 1}, "SELECT note, COUNT(*), AVG(LENGTH(note)) FROM people WHERE "+victimCostly+" GROUP BY note"),
		at("group/key_work", dprelease.Paths{Group: 1}, "SELECT note, SUM(LENGTH(LPAD(note, 20000, 'x'))) FROM people WHERE "+pathFilter+" GROUP BY note"),
		at("group/other_column_scans", dprelease.Paths{Scan: 1}, "SELECT note, SUM(LENGTH(secret)) FROM people GROUP BY note"),
		at("ngrams/corpus", dprelease.Paths{Corpus: 1}, "SELECT * FROM DP_NGRAMS('iso.people', 'secret', 'user_id', 'epsilon=0.001')"),
		at("ngrams/note_corpus", dprelease.Paths{Corpus: 1}, "SELECT * FROM DP_NGRAMS('iso.people', 'note', 'user_id', 'epsilon=0.001')"),
		// Reuse: the second statement is answered from the first's
		// stored release (its Note is compared), reading no index.
		{attack{name: "reuse/second_is_reused", stmts: []string{"SET dp_epsilon = 0.001", "SET @x = NULL", "SET @y = NULL",
			"SELECT DISTINCT " + pathKey + " AS k FROM people WHERE " + pathFilter + " AND user_id <> 'nobody'",
			"SELECT DISTINCT " + pathKey + " AS k FROM people WHERE " + pathFilter + " AND user_id <> 'nobody'"}},
			dprelease.Paths{ExprIndex: 1}},
		// Public lookups take part in the filter: always the scan, and
		// decided from the statement (fromIndexes), before any path.
		at("public/lookup_filter", dprelease.Paths{}, "SELECT DISTINCT note FROM people WHERE user_id IN (SELECT k FROM lookup)"),
		at("public/lookup_victim_branch", dprelease.Paths{}, "SELECT DISTINCT note FROM people WHERE IF(user_id = 'victim', "+hex+", user_id) IN (SELECT k FROM lookup)"),
		at("public/join_key", dprelease.Paths{}, "SELECT DISTINCT l.k FROM people p JOIN lookup l ON l.k = IF(p.user_id = 'victim', "+hex+", p.user_id)"),
	}
}

func subPaths(a, b dprelease.Paths) dprelease.Paths {
	return dprelease.Paths{Index: a.Index - b.Index, ExprIndex: a.ExprIndex - b.ExprIndex, Corpus: a.Corpus - b.Corpus, Group: a.Group - b.Group, Scan: a.Scan - b.Scan}
}

// TestPathsIsolation: every cached path, attacked with and without the
// victim: the same observations and the same path, and the path expected
// (the index is read, not both deployments scanning).
func TestPathsIsolation(t *testing.T) {
	var logs [2]testserver.Log
	deps := [2]*server.Governed{startPaths(t, 200, false, "", &logs[0]), startPaths(t, 200, true, "", &logs[1])}
	for _, pa := range pathAttacks() {
		t.Run(pa.a.name, func(t *testing.T) {
			var obs [2]observation
			var paths [2]dprelease.Paths
			for i, g := range deps {
				before := g.PathsTaken()
				obs[i] = observe(t, g.Addr(), pa.a)
				paths[i] = subPaths(g.PathsTaken(), before)
			}
			compareObservations(t, obs[0], obs[1])
			if paths[0] != paths[1] {
				t.Errorf("the path differs with the victim: without %+v, with %+v", paths[0], paths[1])
			}
			if paths[1] != pa.want {
				t.Errorf("path %+v, want %+v; log:\n%s", paths[1], pa.want, logs[1].String())
			}
			if obs[0].PrepareErr != "" || obs[0].Err != "" {
				t.Errorf("the attack failed: %s %s", obs[0].PrepareErr, obs[0].Err)
			}
		})
	}
}

// exprBuilds returns the log lines of expression index builds of account.
func exprBuilds(log, account string) int {
	return len(regexp.MustCompile(`release index iso\.people\(concat\([^\n]*account `+regexp.QuoteMeta(account)+`\): [^\n]*built in`).FindAllString(log, -1))
}

// TestPathsCrossAnalyst: analyst2's first release of an expression takes
// the same path — its own build, then its own index — whether or not
// analyst ran the same expression before: a warm cache says nothing of
// another analyst's statements.
func TestPathsCrossAnalyst(t *testing.T) {
	q := "SELECT DISTINCT " + pathKey + " AS k FROM people WHERE " + pathFilter
	run := func(t *testing.T, addr, user, password string) {
		t.Helper()
		c := analystConn(t, addr, user, password)
		for _, s := range []string{"SET dp_epsilon = 0.001", "SET dp_reuse = OFF", q} {
			if _, err := readAll(context.Background(), c, s); err != nil {
				t.Fatalf("%s: %s: %v", user, s, err)
			}
		}
	}
	type result struct {
		paths  dprelease.Paths
		builds int
	}
	var res [2]result
	for i, aFirst := range []bool{false, true} {
		var log testserver.Log
		g := startPaths(t, 200, true, "", &log)
		if aFirst {
			run(t, g.Addr(), "analyst", analystPassword)
			if exprBuilds(log.String(), "analyst") != 1 {
				t.Fatalf("analyst's release built no index of its own; log:\n%s", log.String())
			}
		}
		before := g.PathsTaken()
		run(t, g.Addr(), "analyst2", analyst2Password)
		res[i] = result{subPaths(g.PathsTaken(), before), exprBuilds(log.String(), "analyst2")}
	}
	if res[0] != res[1] {
		t.Errorf("analyst2's first release: alone %+v, after analyst's %+v", res[0], res[1])
	}
	if res[1] != (result{dprelease.Paths{ExprIndex: 1}, 1}) {
		t.Errorf("analyst2's first release: %+v, want its own build and index", res[1])
	}
}

// BenchmarkTimingAttacks runs each path attack (TestPathsIsolation's
// attacks, with reuse off) against both deployments, alternately, and
// reports the median time of each and their ratio (with/without): the
// timing channel of each path. The table has 5,000 users (15,000 rows),
// so that a full scan takes much longer than reading an index.
// Run: go test -run XXX -bench TimingAttacks -benchtime 15x ./integration
func BenchmarkTimingAttacks(b *testing.B) {
	// A quota of 2 GiB per analyst: room for the expression indexes' static
	// bounds (15,000 rows × 64 KiB), which are reservations, not memory.
	more := "  release_index_bytes: 17179869184\n"
	deps := [2]*server.Governed{startPaths(b, 5000, false, more, nil), startPaths(b, 5000, true, more, nil)}
	for _, pa := range pathAttacks() {
		if strings.HasPrefix(pa.a.name, "reuse/") {
			continue // the second statement is reused: timed by the column attacks
		}
		b.Run(pa.a.name, func(b *testing.B) {
			var conns [2]*dbsql.Conn
			ctx := context.Background()
			for i, g := range deps {
				conns[i] = analystConn(b, g.Addr(), "analyst", analystPassword)
				for _, s := range pa.a.stmts {
					if _, err := readAll(ctx, conns[i], s); err != nil { // warms the analyst's expression index
						b.Fatal(err)
					}
				}
			}
			last := pa.a.stmts[len(pa.a.stmts)-1]
			var times [2][]float64
			b.ResetTimer()
			for range b.N {
				for i, c := range conns {
					start := time.Now()
					if _, err := readAll(ctx, c, last); err != nil {
						b.Fatal(err)
					}
					times[i] = append(times[i], float64(time.Since(start).Microseconds())/1000)
				}
			}
			b.StopTimer()
			m0, m1 := median(times[0]), median(times[1])
			b.ReportMetric(m0, "ms-without")
			b.ReportMetric(m1, "ms-with")
			b.ReportMetric(m1/m0, "ratio")
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
