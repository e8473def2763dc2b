package integration

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testenv"
)

// The client tests: every client logs in to the governed server as an
// analyst — on the embedded demo (mysql_native_password, no TLS) and on the
// git_rails configuration (caching_sha2_password over required TLS) — and
// runs the same session: a SELECT DISTINCT the server rewrites into a
// private release, DP_SET_UNION, DP_NGRAMS, server-side prepared statements
// (where the client has them), DP_BUDGET(), information_schema, the public
// table (git_rails) and a refused read (MySQL error 1142, last, so that the
// mysql client's -e mode runs everything before it). Every cell of every
// result is checked against the deployment's leak check, and DP_BUDGET()
// must show exactly the charges the session made.

// clientStep is one statement of the session and what its result must be.
type clientStep struct {
	stmt  clients.Statement
	check func(t *testing.T, r clients.Result)
}

// clientSession is the session a client runs on a deployment; spentEps and
// releases are the analyst's balance before it (other sessions of the same
// test may have run before).
type clientSession struct {
	s        *govServer
	leaks    *leakCheck
	steps    []clientStep
	spentEps float64
	releases int64
}

// newClientSession builds the session for s; prepared adds the prepared
// statements.
func newClientSession(t *testing.T, s *govServer, prepared bool) *clientSession {
	t.Helper()
	bal := ledgerBalance(t, s.Ledger(), s.analyst.User, s.db)
	cs := &clientSession{s: s, leaks: leaksFor(t, s), spentEps: bal.Basic.Epsilon, releases: bal.Releases}
	type release struct {
		stmt    clients.Statement
		epsilon float64
		check   func(t *testing.T, r clients.Result)
	}
	var rel []release
	switch s.name {
	case "demo":
		rel = []release{
			{clients.Query("SELECT DISTINCT word FROM words ORDER BY word"), 0.5, cs.wantKeys("word", 50, true)},
			{clients.Query("SELECT DP_SET_UNION(word, user_id) AS released FROM words WHERE user_id <= 10000"), 0.5, cs.wantJSONRelease("released", 20)},
			{clients.Query("SELECT ngram, n FROM DP_NGRAMS('demo.posts', 'body', 'user_id', 'epsilon=2, max_n=2') ORDER BY n, ngram"), 2, cs.wantNgrams(50, 2)},
			// A BI "count by key" chart and a "sum by key" with its
			// bounds as a session variable and the mean's ε as a hint.
			{clients.Query("SELECT word, COUNT(*) AS n FROM words GROUP BY word ORDER BY n DESC LIMIT 20"), 0.5,
				cs.wantAggregates([]string{"word", "n"}, 20, 20, aggCheck{col: "n", desc: true, min: 0})},
			{clients.Query("SET dp_contribution_bounds = '0,20'"), 0, wantNoRows},
			{clients.Query("SELECT /*+ SET_VAR(dp_epsilon = 1) */ word, SUM(LENGTH(word)) AS total, AVG(LENGTH(word)) AS mean FROM words GROUP BY word ORDER BY word"), 1,
				cs.wantAggregates([]string{"word", "total", "mean"}, 20, 0, aggCheck{col: "word", asc: true}, aggCheck{col: "mean", min: 0, max: 20})},
		}
		if prepared {
			rel = append(rel,
				release{clients.Prepare("SELECT DISTINCT word FROM words WHERE user_id > ? ORDER BY word", 100), 0.5, cs.wantKeys("word", 50, true)},
				release{clients.Prepare("SELECT ngram, n FROM DP_NGRAMS(?, ?, ?, ?) WHERE n = ?", "demo.posts", "body", "user_id", "epsilon=0.5, max_n=1", 1), 0.5, cs.wantNgrams(20, 1)},
			)
		}
	default:
		rel = []release{
			{clients.Query("SELECT DISTINCT LOWER(SUBSTRING_INDEX(message, ' ', 1)) AS first_word FROM commits ORDER BY first_word"), 0.5, cs.wantKeys("first_word", 10, true)},
			{clients.Query("SELECT DP_SET_UNION(LOWER(SUBSTRING_INDEX(message, ' ', 2)), user_id, 'epsilon=2') AS released FROM commits"), 2, cs.wantJSONRelease("released", 3)},
			{clients.Query("SELECT ngram, n FROM DP_NGRAMS('rails.commits', 'message', 'user_id', 'epsilon=2, max_n=2') ORDER BY n, ngram"), 2, cs.wantNgrams(50, 2)},
			{clients.Query("SELECT LOWER(SUBSTRING_INDEX(message, ' ', 1)) AS first_word, COUNT(*) AS commits, COUNT(DISTINCT user_id) AS authors FROM commits GROUP BY first_word ORDER BY commits DESC LIMIT 10"), 0.5,
				cs.wantAggregates([]string{"first_word", "commits", "authors"}, 5, 10, aggCheck{col: "commits", desc: true, min: 0}, aggCheck{col: "authors", min: 0})},
			{clients.Query("SET dp_contribution_bounds = '0,200'"), 0, wantNoRows},
			{clients.Query("SELECT LOWER(SUBSTRING_INDEX(message, ' ', 1)) AS first_word, AVG(LENGTH(message)) AS mean_length FROM commits GROUP BY first_word ORDER BY first_word"), 0.5,
				cs.wantAggregates([]string{"first_word", "mean_length"}, 5, 0, aggCheck{col: "first_word", asc: true}, aggCheck{col: "mean_length", min: 0, max: 200})},
		}
		// A view of a private release is that release: here the first
		// statement's (same keys, same session ε), so it is reused at no
		// charge (release reuse is on by default).
		rel = append(rel, release{clients.Query("SELECT first_word FROM first_words ORDER BY first_word"), 0, cs.wantKeys("first_word", 10, true)})
		if prepared {
			rel = append(rel,
				release{clients.Prepare("SELECT DISTINCT LOWER(SUBSTRING_INDEX(message, ' ', 1)) AS first_word FROM commits WHERE LENGTH(message) > ?", 20), 0.5, cs.wantKeys("first_word", 10, false)},
				release{clients.Prepare("SELECT ngram, n FROM DP_NGRAMS(?, ?, ?, ?) WHERE n = ?", "rails.commits", "message", "user_id", "epsilon=0.5, max_n=1", 1), 0.5, cs.wantNgrams(20, 1)},
			)
		}
	}
	// A session variable carries over to the next statement: the first
	// release is charged the session's ε.
	cs.steps = append(cs.steps, clientStep{stmt: clients.Query("SET dp_epsilon = 0.5"), check: wantNoRows})
	var eps float64
	var releases int64
	for _, r := range rel {
		cs.steps = append(cs.steps, clientStep{stmt: r.stmt, check: r.check})
		eps += r.epsilon
		if r.epsilon > 0 {
			releases++
		}
	}
	wantEps, wantReleases := cs.spentEps+eps, cs.releases+releases
	cs.steps = append(cs.steps,
		clientStep{stmt: clients.Query("SELECT analyst, database_name, basic_epsilon, remaining_epsilon, releases FROM DP_BUDGET()"),
			check: cs.wantBudget(wantEps, wantReleases)},
		clientStep{stmt: clients.Query(fmt.Sprintf("SELECT table_name, table_rows FROM information_schema.tables WHERE table_schema = '%s' ORDER BY table_name", s.db)),
			check: cs.wantHiddenCounts()},
	)
	if s.name == "git_rails" {
		cs.steps = append(cs.steps, clientStep{stmt: clients.Query("SELECT id, note, price FROM notes ORDER BY id"), check: wantNotes})
	}
	refused := map[string]string{"demo": "SELECT user_id, word FROM words WHERE user_id = 42", "git_rails": "SELECT * FROM commits LIMIT 5"}[s.name]
	cs.steps = append(cs.steps, clientStep{stmt: clients.Query(refused), check: wantRefused})
	return cs
}

// statements returns the session's statements, with extra ones inserted
// before the refused query (which stays last).
func (cs *clientSession) statements(extra ...clients.Statement) []clients.Statement {
	var out []clients.Statement
	for _, st := range cs.steps[:len(cs.steps)-1] {
		out = append(out, st.stmt)
	}
	out = append(out, extra...)
	return append(out, cs.steps[len(cs.steps)-1].stmt)
}

// check checks the session's results (extra results, as returned for the
// extra statements, are only checked for leaks and returned).
func (cs *clientSession) check(t *testing.T, client string, res []clients.Result, extraStmts []clients.Statement) []clients.Result {
	t.Helper()
	nExtra := len(extraStmts)
	if len(res) != len(cs.steps)+nExtra {
		t.Fatalf("%d results for %d statements", len(res), len(cs.steps)+nExtra)
	}
	last := len(cs.steps) - 1
	extra := res[last : last+nExtra]
	for i, r := range res {
		var st clients.Statement
		switch {
		case i < last:
			st = cs.steps[i].stmt
		case i < last+nExtra:
			st = extraStmts[i-last]
		default:
			st = cs.steps[last].stmt
		}
		cells := r.Cells()
		shown := cells[:min(len(cells), 5)]
		t.Logf("%s %v → columns %v, %d rows %q, error %v", client, st, r.Columns, len(cells), shown, r.Error)
		cs.leaks.checkRows(t, fmt.Sprintf("%s: %v", client, st), r.Rows)
		if r.Error != nil && strings.Contains(r.Error.Message, "panic") {
			t.Errorf("%s %v: %v", client, st, r.Error)
		}
	}
	for i, step := range cs.steps {
		r := res[i]
		if i == last {
			r = res[last+nExtra]
		}
		t.Run(fmt.Sprintf("step%d", i+1), func(t *testing.T) {
			step.check(t, r)
		})
	}
	return extra
}

// wantKeys checks a rewritten SELECT DISTINCT: one column named col, at
// least min rows, sorted (when ordered).
func (cs *clientSession) wantKeys(col string, minRows int, ordered bool) func(*testing.T, clients.Result) {
	return func(t *testing.T, r clients.Result) {
		if r.Error != nil {
			t.Fatalf("release: %v", r.Error)
		}
		if !slices.Equal(r.Columns, []string{col}) {
			t.Errorf("columns %v, want [%s]", r.Columns, col)
		}
		keys := r.Column(col)
		if len(keys) < minRows {
			t.Errorf("%d keys released, want at least %d: %q", len(keys), minRows, keys)
		}
		if ordered && !slices.IsSorted(keys) {
			t.Errorf("ORDER BY not applied: %q", keys[:10])
		}
		if len(slices.Compact(slices.Sorted(slices.Values(keys)))) != len(keys) {
			t.Errorf("duplicate keys released")
		}
	}
}

// aggCheck is what one column of a release of DP aggregates must satisfy:
// sorted (asc or desc), numbers within [min, max] (max 0: no upper bound).
type aggCheck struct {
	col       string
	asc, desc bool
	min, max  float64
}

// wantAggregates checks a GROUP BY release with DP aggregates: exactly the
// columns cols, between minRows and maxRows rows (maxRows 0: no limit),
// distinct keys in the first column, and each aggCheck.
func (cs *clientSession) wantAggregates(cols []string, minRows, maxRows int, checks ...aggCheck) func(*testing.T, clients.Result) {
	return func(t *testing.T, r clients.Result) {
		if r.Error != nil {
			t.Fatalf("release: %v", r.Error)
		}
		if !slices.Equal(r.Columns, cols) {
			t.Errorf("columns %v, want %v", r.Columns, cols)
		}
		keys := r.Column(cols[0])
		if len(keys) < minRows || (maxRows > 0 && len(keys) > maxRows) {
			t.Errorf("%d rows, want %d to %d", len(keys), minRows, maxRows)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(keys)))) != len(keys) {
			t.Errorf("duplicate keys released: %q", keys)
		}
		for _, c := range checks {
			vals := r.Column(c.col)
			var nums []float64
			for _, v := range vals {
				if c.asc && c.col == cols[0] {
					continue
				}
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || x < c.min || (c.max > 0 && x > c.max) {
					t.Errorf("%s: value %q not a number in [%g, %g]", c.col, v, c.min, c.max)
					break
				}
				nums = append(nums, x)
			}
			switch {
			case c.asc && c.col == cols[0] && !slices.IsSorted(vals):
				t.Errorf("%s: ORDER BY not applied: %q", c.col, vals)
			case c.desc && !slices.IsSortedFunc(nums, func(a, b float64) int { return cmp.Compare(b, a) }):
				t.Errorf("%s: ORDER BY … DESC not applied: %v", c.col, nums)
			}
		}
	}
}

// wantJSONRelease checks a DP_SET_UNION: one row, one column, a sorted JSON
// array of at least min strings.
func (cs *clientSession) wantJSONRelease(col string, minItems int) func(*testing.T, clients.Result) {
	return func(t *testing.T, r clients.Result) {
		if r.Error != nil {
			t.Fatalf("DP_SET_UNION: %v", r.Error)
		}
		if !slices.Equal(r.Columns, []string{col}) || len(r.Rows) != 1 || r.Rows[0][0] == nil {
			t.Fatalf("got columns %v rows %q, want one JSON array in %s", r.Columns, r.Cells(), col)
		}
		var items []string
		if err := json.Unmarshal([]byte(*r.Rows[0][0]), &items); err != nil {
			t.Fatalf("not a JSON array of strings: %v: %s", err, clipString(*r.Rows[0][0], 200))
		}
		if len(items) < minItems || !slices.IsSorted(items) {
			t.Errorf("%d items (want ≥ %d), sorted %v", len(items), minItems, slices.IsSorted(items))
		}
	}
}

// wantNgrams checks a DP_NGRAMS release: columns ngram, n; at least min
// rows; n from 1 to maxN, each n-gram of n tokens.
func (cs *clientSession) wantNgrams(minRows, maxN int) func(*testing.T, clients.Result) {
	return func(t *testing.T, r clients.Result) {
		if r.Error != nil {
			t.Fatalf("DP_NGRAMS: %v", r.Error)
		}
		if !slices.Equal(r.Columns, []string{"ngram", "n"}) {
			t.Errorf("columns %v, want [ngram n]", r.Columns)
		}
		if len(r.Rows) < minRows {
			t.Errorf("%d n-grams, want at least %d", len(r.Rows), minRows)
		}
		for _, row := range r.Cells() {
			n, err := strconv.Atoi(row[1])
			if err != nil || n < 1 || n > maxN || len(strings.Fields(row[0])) != n {
				t.Errorf("bad row %q", row)
				break
			}
		}
	}
}

// wantBudget checks DP_BUDGET(): the analyst's one row on the database
// with exactly the session's charges.
func (cs *clientSession) wantBudget(eps float64, releases int64) func(*testing.T, clients.Result) {
	return func(t *testing.T, r clients.Result) {
		if r.Error != nil {
			t.Fatalf("DP_BUDGET(): %v", r.Error)
		}
		rows := r.Cells()
		if len(rows) != 1 {
			t.Fatalf("DP_BUDGET() rows %q, want the analyst's one row", rows)
		}
		row := rows[0]
		spent, _ := strconv.ParseFloat(row[2], 64)
		n, _ := strconv.ParseFloat(row[4], 64) // pandas may render counts as floats
		if row[0] != cs.s.analyst.User || row[1] != cs.s.db || math.Abs(spent-eps) > 1e-9 || int64(n) != releases {
			t.Errorf("DP_BUDGET() = %q, want %s on %s spent ε=%g in %d releases", row, cs.s.analyst.User, cs.s.db, eps, releases)
		}
	}
}

// wantHiddenCounts checks that information_schema reports 0 rows for the
// protected tables (and the real count of the public one).
func (cs *clientSession) wantHiddenCounts() func(*testing.T, clients.Result) {
	return func(t *testing.T, r clients.Result) {
		if r.Error != nil {
			t.Fatalf("information_schema.tables: %v", r.Error)
		}
		got := map[string]float64{}
		for _, row := range r.Cells() {
			got[row[0]], _ = strconv.ParseFloat(row[1], 64)
		}
		for _, p := range cs.s.protects {
			tbl := p[strings.IndexByte(p, '.')+1:]
			if n, ok := got[tbl]; !ok || n != 0 {
				t.Errorf("%s: table_rows %v (listed %v), want 0", p, n, ok)
			}
		}
		if cs.s.name == "git_rails" && got["notes"] != 5 {
			t.Errorf("public table notes: table_rows %v, want 5", got["notes"])
		}
	}
}

// wantNotes checks the public table as the client renders it: NULL,
// non-ASCII, tab and newline carried; numbers compared as numbers
// (pandas makes a column with NULL float, JDBC prints 2.0).
func wantNotes(t *testing.T, r clients.Result) {
	if r.Error != nil {
		t.Fatalf("public table: %v", r.Error)
	}
	want := [][]string{
		{"1", "apple", "1.5"},
		{"2", "crème brûlée", "NULL"},
		{"3", "tab\there", "7.25"},
		{"4", "line1\nline2", "0.1"},
		{"5", "NULL", "2"},
	}
	got := r.Cells()
	if len(got) != len(want) {
		t.Fatalf("public table rows %q, want %q", got, want)
	}
	for i := range want {
		for j := range want[i] {
			g, w := got[i][j], want[i][j]
			if gf, err1 := strconv.ParseFloat(g, 64); err1 == nil {
				if wf, err2 := strconv.ParseFloat(w, 64); err2 == nil && gf == wf {
					continue
				}
			}
			if g != w {
				t.Errorf("public table row %d column %d: got %q, want %q", i+1, j+1, g, w)
			}
		}
	}
}

func wantNoRows(t *testing.T, r clients.Result) {
	if r.Error != nil || len(r.Rows) != 0 {
		t.Errorf("got rows %q error %v, want neither", r.Cells(), r.Error)
	}
}

func wantRefused(t *testing.T, r clients.Result) {
	if r.Error == nil || r.Error.Code != 1142 {
		t.Fatalf("got rows %q error %v, want MySQL error 1142", r.Cells(), r.Error)
	}
	if !strings.Contains(r.Error.Message, "SELECT DISTINCT") {
		t.Errorf("the refusal does not name the allowed forms: %s", r.Error.Message)
	}
}

// governedDeployments are the two deployments every client test covers.
var governedDeployments = []struct {
	name  string
	start func(testing.TB, ...extraAnalyst) *govServer
}{{"demo", startDemo}, {"git_rails", startRails}}

// runSession runs a session through client c, then checks that a wrong
// password is refused and, on the TLS deployment, that the client cannot
// log in without TLS.
func runSession(t *testing.T, c clients.Runner, s *govServer, prepared bool) {
	t.Helper()
	cs := newClientSession(t, s, prepared)
	res := runClient(t, c, s.analyst, cs.statements())
	cs.check(t, c.Name(), res, nil)
	wantLogins(t, c, s)
}

func wantLogins(t *testing.T, c clients.Runner, s *govServer) {
	t.Helper()
	wantLoginRefused(t, c, s.analyst)
	if s.analyst.TLS {
		wantPlaintextRefused(t, c, s.analyst)
	}
}

// runClient runs the statements through the client and logs its runtime.
func runClient(t *testing.T, c clients.Runner, target clients.Target, stmts []clients.Statement) []clients.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := c.Run(ctx, target, stmts)
	t.Logf("%s: %d statements in %v", c.Name(), len(stmts), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s: %v", c.Name(), err)
	}
	return res
}

// wantLoginRefused checks that a wrong password is refused with 1045.
func wantLoginRefused(t *testing.T, c clients.Runner, target clients.Target) {
	t.Helper()
	target.Password = "wrong-password"
	_, err := c.Run(context.Background(), target, []clients.Statement{clients.Query("SELECT 1")})
	var e *clients.Error
	if !errors.As(err, &e) || e.Code != 1045 {
		t.Errorf("wrong password: got %v, want MySQL error 1045", err)
	}
}

func mysqlCLI(t *testing.T) string {
	externalClient(t, "the mysql command line client")
	return testenv.Tool(t, "mysql", "apt-get install mariadb-client")
}

func TestGoDriver(t *testing.T) {
	for _, d := range governedDeployments {
		t.Run(d.name, func(t *testing.T) {
			runSession(t, clients.GoDriver{}, d.start(t), true)
		})
	}
}

func TestMariaDBCLIBatch(t *testing.T) {
	fullRunOnly(t)
	cli := mysqlCLI(t)
	for _, d := range governedDeployments {
		t.Run(d.name, func(t *testing.T) {
			runSession(t, clients.MariaDBCLI{Path: cli, Stdin: true}, d.start(t), false)
		})
	}
}

func TestMariaDBCLIExecute(t *testing.T) {
	fullRunOnly(t)
	cli := mysqlCLI(t)
	for _, d := range governedDeployments {
		t.Run(d.name, func(t *testing.T) {
			runSession(t, clients.MariaDBCLI{Path: cli}, d.start(t), false)
		})
	}
}

// jdbcMetaCalls are the DatabaseMetaData calls DBeaver and Metabase make
// on connect and when browsing a database.
func jdbcMetaCalls(db string, tables []string) []clients.Statement {
	out := []clients.Statement{
		clients.Meta("getCatalogs"),
		clients.Meta("getSchemas"),
		clients.Meta("getTables", db, nil, "%", []string{"TABLE", "VIEW"}),
		clients.Meta("getColumns", db, nil, "%", "%"),
	}
	for _, tbl := range tables {
		out = append(out,
			clients.Meta("getPrimaryKeys", db, nil, tbl),
			clients.Meta("getIndexInfo", db, nil, tbl),
			clients.Meta("getImportedKeys", db, nil, tbl))
	}
	return out
}

func TestJDBC(t *testing.T) {
	fullRunOnly(t)
	j := jdbcRunner(t)
	for _, d := range governedDeployments {
		t.Run(d.name, func(t *testing.T) {
			s := d.start(t)
			cs := newClientSession(t, s, true)
			var tables []string
			for _, p := range s.protects {
				tables = append(tables, p[strings.IndexByte(p, '.')+1:])
			}
			meta := append([]clients.Statement{clients.Meta("getDatabaseInfo")}, jdbcMetaCalls(s.db, tables)...)
			res := runClient(t, j, s.analyst, cs.statements(meta...))
			extra := cs.check(t, j.Name(), res, meta)
			for i, r := range extra {
				if r.Error != nil {
					t.Errorf("%v: %v", meta[i], r.Error)
				}
			}
			if got := extra[1].Column("TABLE_CAT"); !slices.Contains(got, s.db) {
				t.Errorf("getCatalogs %q does not list %s", got, s.db)
			}
			listed, types := extra[3].Column("TABLE_NAME"), extra[3].Column("TABLE_TYPE")
			for _, tbl := range tables {
				if !slices.Contains(listed, tbl) {
					t.Errorf("getTables %q does not list the protected table %s", listed, tbl)
				}
			}
			if s.name == "git_rails" {
				for _, v := range []string{"first_words", "cheap_notes"} {
					if i := slices.Index(listed, v); i < 0 || types[i] != "VIEW" {
						t.Errorf("getTables %q of types %q does not list the view %s", listed, types, v)
					}
				}
			}
			cols := map[string][]string{}
			for _, row := range extra[4].Cells() {
				r := extra[4]
				tn, cn := slices.Index(r.Columns, "TABLE_NAME"), slices.Index(r.Columns, "COLUMN_NAME")
				cols[row[tn]] = append(cols[row[tn]], row[cn])
			}
			wantCols := map[string][]string{"posts": {"user_id", "body"}, "words": {"user_id", "word"}, "commits": {"user_id", "message"}}
			for _, tbl := range tables {
				if !slices.Equal(cols[tbl], wantCols[tbl]) {
					t.Errorf("getColumns for %s: %q, want %q", tbl, cols[tbl], wantCols[tbl])
				}
			}
			wantLogins(t, j, s)
		})
	}
}

func TestPython(t *testing.T) {
	fullRunOnly(t)
	p := pythonRunner(t)
	for _, d := range governedDeployments {
		t.Run(d.name, func(t *testing.T) {
			runSession(t, p, d.start(t), true)
		})
	}
}

func TestNode(t *testing.T) {
	fullRunOnly(t)
	n := nodeRunner(t)
	for _, d := range governedDeployments {
		t.Run(d.name, func(t *testing.T) {
			runSession(t, n, d.start(t), true)
		})
	}
}

// wantPlaintextRefused checks that a client without TLS cannot log in to a
// server that requires it (so a client that silently skipped TLS would
// have been refused).
func wantPlaintextRefused(t *testing.T, c clients.Runner, target clients.Target) {
	t.Helper()
	target.TLS, target.CAFile = false, ""
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Run(ctx, target, []clients.Statement{clients.Query("SELECT 1")})
	var e *clients.Error
	if err == nil {
		t.Errorf("%s logged in without TLS to a server that requires it", c.Name())
	} else if errors.As(err, &e) {
		t.Logf("without TLS: %v", e)
	}
}
