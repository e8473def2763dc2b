package integration

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
)

// The wire deployment: web.searches(user_id, query, country, device,
// amount, day), a synthetic table of wireUsers users protected per user,
// each in one country (a few in XX, which the public table lacks) with 1 to
// 10 searches over four weeks, and the public table web.countries(code,
// name), which also lists IS, where nobody searches. The configuration
// gives the defaults a BI tool needs (no SET) and a high ε, so that every
// assertion below holds with overwhelming probability.
const wireUsers = 3000

var (
	wireCountries  = []string{"US", "DE", "FR", "JP", "BR"}
	wirePublicKeys = []string{"BR", "DE", "FR", "IS", "JP", "US"} // web.countries, in key order
	wireQueries    = []string{"flights", "hotels", "weather", "news", "maps"}
)

// wireTruth is what the generated table holds.
type wireTruth struct {
	rows, users, amount float64 // rows, users, sum of amounts
	days                int     // distinct days
}

// startWire writes the tables and the configuration and serves them.
func startWire(t *testing.T) (clients.Target, wireTruth) {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(21, 4))
	var b strings.Builder
	b.WriteString("user_id,query,country,device,amount,day\n")
	truth := wireTruth{users: wireUsers}
	days := map[string]bool{}
	start := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for u := range wireUsers {
		c := wireCountries[min(int(r.ExpFloat64()*1.2), len(wireCountries)-1)]
		if u%100 == 0 {
			c = "XX"
		}
		for range 1 + r.IntN(10) {
			day := start.AddDate(0, 0, r.IntN(28)).Format(time.DateOnly)
			amount := r.Float64() * 40
			fmt.Fprintf(&b, "u%d,%s,%s,%s,%.2f,%s\n", u, wireQueries[r.IntN(len(wireQueries))], c,
				[]string{"phone", "desktop"}[r.IntN(2)], amount, day)
			truth.rows++
			truth.amount += amount
			days[day] = true
		}
	}
	truth.days = len(days)
	testmysql.WriteFile(t, filepath.Join(dir, "searches.csv"), b.String())
	testmysql.WriteFile(t, filepath.Join(dir, "countries.csv"),
		"code,name\nUS,United States\nDE,Germany\nFR,France\nJP,Japan\nBR,Brazil\nIS,Iceland\n")
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
datasets:
  - database: web
    table: searches
    file: searches.csv
    header: true
    columns:
      - {name: user_id, type: VARCHAR(16)}
      - {name: query, type: VARCHAR(16)}
      - name: country
        type: VARCHAR(2)
        dp: {max_groups_contributed: 1, max_rows_per_group: 10}
      - {name: device, type: VARCHAR(8)}
      - name: amount
        type: DOUBLE
        dp: {bounds: [0, 50]}
      - {name: day, type: DATE}
    privacy_unit: user_id
    dp: {epsilon: 20, delta: 1e-6, max_rows_per_group: 10}
  - database: web
    table: countries
    file: countries.csv
    header: true
    columns:
      - {name: code, type: VARCHAR(2)}
      - {name: name, type: TEXT}
    public: true
%s`, testserver.AccountsYAML(t, adminPassword, analystPassword, "web", 1e6, 0.1))
	g := testserver.GovernedYAML(t, dir, cfg)
	host, port := splitAddr(t, g.Addr())
	return clients.Target{Host: host, Port: port, User: "analyst", Password: analystPassword, Database: "web"}, truth
}

// wireShape is one query shape of issue 21 and what every client must
// receive for it.
type wireShape struct {
	name string
	sql  string
	cols []string // the column names, in order
	// minRows, maxRows bound the row count (equal for a global or
	// public-keys release).
	minRows, maxRows int
	// keys, when set, are the exact first-column values, in order
	// (public keys: one row per public key).
	keys []string
	// num gives, per numeric column, the range its values must lie in
	// (NaN bounds: only that it parses).
	num map[int][2]float64
	// dates are the columns whose values must parse as DATEs.
	dates []int
	// note is a text a Note of the statement must contain ("": none is
	// asked for).
	note string
	// check is a further check of the parsed rows (nil: none).
	check func(t *testing.T, rows [][]float64)
}

// anyNumber is a range that only requires the value to parse.
var anyNumber = [2]float64{math.Inf(-1), math.Inf(1)}

// wireShapes are issue 21's shapes over the wire deployment, with no SET.
func wireShapes(tr wireTruth) []wireShape {
	within := func(x, rel float64) [2]float64 { return [2]float64{x * (1 - rel), x * (1 + rel)} }
	amount := [2]float64{0, 50}
	spread := [2]float64{0, 50 * 50}
	// An interval row: value, low, high in columns i, i+1, i+2.
	brackets := func(i int) func(t *testing.T, rows [][]float64) {
		return func(t *testing.T, rows [][]float64) {
			for _, r := range rows {
				if !(r[i+1] <= r[i] && r[i] <= r[i+2]) {
					t.Errorf("interval [%v, %v] does not hold the value %v", r[i+1], r[i+2], r[i])
				}
			}
		}
	}
	publicKeyCount := func(t *testing.T, rows [][]float64) {
		// IS has no searches: its noisy count is near 0, the others' large.
		for i, r := range rows {
			if wirePublicKeys[i] == "IS" && math.Abs(r[1]) > 100 {
				t.Errorf("IS (no rows): count %v", r[1])
			}
			if wirePublicKeys[i] == "US" && r[1] < 1000 {
				t.Errorf("US: count %v", r[1])
			}
		}
	}
	return []wireShape{
		{name: "COUNT(*)", sql: "SELECT COUNT(*) AS n FROM searches",
			cols: []string{"n"}, minRows: 1, maxRows: 1, num: map[int][2]float64{0: within(tr.rows, 0.2)}},
		{name: "COUNT(expr) WHERE", sql: "SELECT COUNT(amount) AS n FROM searches WHERE day >= '2024-03-15'",
			cols: []string{"n"}, minRows: 1, maxRows: 1, num: map[int][2]float64{0: within(tr.rows/2, 0.3)}},
		{name: "COUNT(DISTINCT unit)", sql: "SELECT COUNT(DISTINCT user_id) AS users FROM searches",
			cols: []string{"users"}, minRows: 1, maxRows: 1, num: map[int][2]float64{0: within(tr.users, 0.1)}},
		{name: "SUM, AVG", sql: "SELECT SUM(amount) AS total, AVG(amount) AS mean FROM searches",
			cols: []string{"total", "mean"}, minRows: 1, maxRows: 1, num: map[int][2]float64{0: within(tr.amount, 0.3), 1: amount}},
		{name: "GROUP BY COUNT SUM AVG", sql: "SELECT country, COUNT(*) AS n, SUM(amount) AS total, AVG(amount) AS mean FROM searches GROUP BY country ORDER BY country",
			cols: []string{"country", "n", "total", "mean"}, minRows: 3, maxRows: 6, num: map[int][2]float64{1: anyNumber, 2: anyNumber, 3: amount}},
		{name: "GROUP BY DATE", sql: "SELECT day, COUNT(*) AS n FROM searches GROUP BY day ORDER BY day",
			cols: []string{"day", "n"}, minRows: tr.days - 3, maxRows: tr.days, num: map[int][2]float64{1: anyNumber}, dates: []int{0}},
		{name: "MEDIAN, PERCENTILE_CONT", sql: "SELECT MEDIAN(amount) AS med, PERCENTILE_CONT(amount, 0.9) AS p90 FROM searches",
			cols: []string{"med", "p90"}, minRows: 1, maxRows: 1, num: map[int][2]float64{0: {10, 30}, 1: {25, 50}}},
		{name: "MEDIAN per key", sql: "SELECT device, MEDIAN(amount) AS med FROM searches GROUP BY device ORDER BY device",
			cols: []string{"device", "med"}, minRows: 2, maxRows: 2, keys: []string{"desktop", "phone"}, num: map[int][2]float64{1: amount}},
		{name: "VARIANCE, STDDEV", sql: "SELECT VARIANCE(amount) AS v, VAR_POP(amount) AS vp, VAR_SAMP(amount) AS vs, STDDEV(amount) AS sd, STDDEV_POP(amount) AS sdp, STDDEV_SAMP(amount) AS sds FROM searches",
			cols: []string{"v", "vp", "vs", "sd", "sdp", "sds"}, minRows: 1, maxRows: 1,
			num: map[int][2]float64{0: spread, 1: spread, 2: spread, 3: amount, 4: amount, 5: amount}},
		{name: "STDDEV per key", sql: "SELECT device, STDDEV_SAMP(amount) AS sd, VAR_SAMP(amount) AS v FROM searches GROUP BY device ORDER BY device",
			cols: []string{"device", "sd", "v"}, minRows: 2, maxRows: 2, keys: []string{"desktop", "phone"}, num: map[int][2]float64{1: amount, 2: spread}},
		{name: "public keys LEFT JOIN", sql: "SELECT c.code, COUNT(*) AS n, SUM(s.amount) AS total FROM countries c LEFT JOIN searches s ON s.country = c.code GROUP BY c.code",
			cols: []string{"code", "n", "total"}, minRows: 6, maxRows: 6, keys: wirePublicKeys, num: map[int][2]float64{1: anyNumber, 2: anyNumber}, check: publicKeyCount},
		{name: "public keys RIGHT JOIN", sql: "SELECT c.code, COUNT(*) AS n FROM searches s RIGHT JOIN countries c ON s.country = c.code AND s.day >= '2024-03-01' GROUP BY c.code",
			cols: []string{"code", "n"}, minRows: 6, maxRows: 6, keys: wirePublicKeys, num: map[int][2]float64{1: anyNumber}, check: publicKeyCount},
		{name: "DP_INTERVAL global", sql: "SELECT COUNT(*) AS n, DP_INTERVAL_LOW(COUNT(*)) AS lo, DP_INTERVAL_HIGH(COUNT(*)) AS hi FROM searches",
			cols: []string{"n", "lo", "hi"}, minRows: 1, maxRows: 1, num: map[int][2]float64{0: within(tr.rows, 0.2), 1: anyNumber, 2: anyNumber}, check: brackets(0)},
		{name: "DP_INTERVAL per key", sql: "SELECT country, AVG(amount) AS mean, DP_INTERVAL_LOW(AVG(amount)) AS lo, DP_INTERVAL_HIGH(AVG(amount)) AS hi FROM searches GROUP BY country ORDER BY country",
			cols: []string{"country", "mean", "lo", "hi"}, minRows: 3, maxRows: 6, num: map[int][2]float64{1: amount, 2: anyNumber, 3: anyNumber}, check: brackets(1)},
		{name: "no key: Note", sql: "SELECT query, COUNT(*) AS n FROM searches WHERE amount < 0 GROUP BY query",
			cols: []string{"query", "n"}, minRows: 0, maxRows: 0, note: "released no key"},
		{name: "Metabase Count", sql: strings.ReplaceAll(metabaseCount, "`search`", "`web`"),
			cols: []string{"count"}, minRows: 1, maxRows: 1, num: map[int][2]float64{0: within(tr.rows, 0.2)}},
		{name: "Metabase Sum of", sql: strings.ReplaceAll(metabaseSum, "`search`", "`web`"),
			cols: []string{"sum"}, minRows: 1, maxRows: 1, num: map[int][2]float64{0: within(tr.amount, 0.3)}},
		{name: "Metabase Count by", sql: strings.ReplaceAll(metabaseCountBy, "`search`", "`web`"),
			cols: []string{"country", "count"}, minRows: 3, maxRows: 6, num: map[int][2]float64{1: anyNumber}},
		{name: "Metabase nested question", sql: strings.ReplaceAll(metabaseNested, "`search`", "`web`"),
			cols: []string{"country", "count"}, minRows: 3, maxRows: 6, num: map[int][2]float64{1: anyNumber}},
		{name: "BigQuery WITH DIFFERENTIAL_PRIVACY", sql: "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=10, delta=1e-6, max_groups_contributed=1, privacy_unit_column=user_id) country, COUNT(*) AS n, AVG(amount) AS mean FROM searches GROUP BY country ORDER BY country",
			cols: []string{"country", "n", "mean"}, minRows: 3, maxRows: 6, num: map[int][2]float64{1: anyNumber, 2: amount}},
	}
}

// TestShapesOverTheWire: every query shape of issue 21 — global
// aggregates, GROUP BY with COUNT/SUM/AVG, MEDIAN and PERCENTILE_CONT, the
// variances and standard deviations, public keys by LEFT and RIGHT JOIN,
// DP_INTERVAL_LOW/HIGH, the Note of a release without keys, Metabase's
// generated SQL ("Count", "Sum of …", "Count by …", a nested question) and
// BigQuery's WITH DIFFERENTIAL_PRIVACY clause — sent with no SET by the
// mysql command line client, pandas (SQLAlchemy, PyMySQL), Connector/J,
// Node mysql2 and go-sql-driver to one governed server, each client one
// process running every shape on one connection. Each must get the
// columns, the row count (one row per public key), values that parse as
// numbers (dates as dates) in plausible ranges, numeric column types
// where the client reports types, and the Note (SHOW WARNINGS; the mysql
// client's --show-warnings); and, since each release is made once and
// then reused, the same numbers as the first client.
func TestShapesOverTheWire(t *testing.T) {
	fullRunOnly(t)
	target, truth := startWire(t)
	shapes := wireShapes(truth)
	stmts := make([]clients.Statement, len(shapes))
	for i, sh := range shapes {
		stmts[i] = clients.Query(sh.sql)
		if sh.note != "" {
			stmts[i] = stmts[i].WithWarnings()
		}
	}
	// BigQuery's clause in a prepared statement: rewritten where the
	// client prepares client-side (PyMySQL always; Connector/J falls back to
	// a client-side statement when the server refuses its COM_STMT_PREPARE);
	// refused by the protocol layer's parser where the client prepares
	// server-side only (docs/sql.md, "BI tools"). The mysql client cannot
	// prepare.
	stmts = append(stmts, clients.Prepare("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=10, privacy_unit_column=user_id) country, COUNT(*) AS n FROM searches WHERE amount >= ? GROUP BY country ORDER BY country", 0))
	runners := []struct {
		name           string
		get            func(t *testing.T) clients.Runner
		preparedClause bool // the prepared clause is answered
	}{
		{"mysql CLI", func(t *testing.T) clients.Runner { return clients.MariaDBCLI{Path: mysqlCLI(t), Stdin: true} }, false},
		{"pandas", func(t *testing.T) clients.Runner { return pythonRunner(t) }, true},
		{"Connector/J", func(t *testing.T) clients.Runner { return jdbcRunner(t) }, true},
		{"Node mysql2", func(t *testing.T) clients.Runner { return nodeRunner(t) }, false},
		{"go-sql-driver", func(*testing.T) clients.Runner { return clients.GoDriver{} }, false},
	}
	// Every release is made once and reused (at no charge) for the next
	// clients, so all must read the same numbers: the first client's are
	// the reference.
	var ref [][][]float64
	for _, rn := range runners {
		t.Run(rn.name, func(t *testing.T) {
			c := rn.get(t)
			res := runClient(t, c, target, stmts)
			prep := res[len(shapes)]
			t.Logf("prepared clause → %q %v", prep.Cells(), prep.Error)
			if rn.preparedClause && (prep.Error != nil || len(prep.Rows) < 3) {
				t.Errorf("prepared BigQuery clause: %q %v, want the release", prep.Cells(), prep.Error)
			}
			if !rn.preparedClause && prep.Error == nil {
				t.Errorf("prepared BigQuery clause answered (%q): update docs/sql.md, which says server-side prepared statements cannot carry it", prep.Cells())
			}
			parsed := make([][][]float64, len(shapes))
			for i, sh := range shapes {
				t.Run(sh.name, func(t *testing.T) {
					r := res[i]
					t.Logf("%s → columns %v types %v rows %q warnings %v", sh.sql, r.Columns, r.Types, r.Cells(), r.Warnings)
					parsed[i] = checkShape(t, sh, r, rn.name == "mysql CLI")
					if ref != nil && !sameNumbers(parsed[i], ref[i]) {
						t.Errorf("numbers %v, the first client read %v", parsed[i], ref[i])
					}
				})
			}
			if ref == nil && !t.Failed() {
				ref = parsed
			}
		})
	}
}

// numericTypes are the type names the clients give DP aggregates' columns:
// go-sql-driver's and Connector/J's (BIGINT, DOUBLE), mysql2's (LONGLONG,
// DOUBLE) and pandas' dtypes (int64, float64); DECIMAL would also do.
var numericTypes = map[string]bool{"BIGINT": true, "DOUBLE": true, "DECIMAL": true, "LONGLONG": true,
	"NEWDECIMAL": true, "int64": true, "float64": true}

// checkShape checks one client's result for sh and returns its numeric
// columns parsed (NaN elsewhere); cli says that an empty result has no
// columns (the mysql client prints nothing for it).
func checkShape(t *testing.T, sh wireShape, r clients.Result, cli bool) [][]float64 {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("%s: %v", sh.sql, r.Error)
	}
	if !(cli && len(r.Rows) == 0) && !slices.Equal(r.Columns, sh.cols) {
		t.Errorf("columns %q, want %q", r.Columns, sh.cols)
	}
	if n := len(r.Rows); n < sh.minRows || n > sh.maxRows {
		t.Errorf("%d rows, want %d to %d: %q", n, sh.minRows, sh.maxRows, r.Cells())
	}
	cells := r.Cells()
	if sh.keys != nil {
		var got []string
		for _, row := range cells {
			got = append(got, row[0])
		}
		if !slices.Equal(got, sh.keys) {
			t.Errorf("keys %q, want %q", got, sh.keys)
		}
	}
	if len(r.Types) == len(sh.cols) && len(r.Rows) > 0 {
		for j := range sh.num {
			if !numericTypes[r.Types[j]] {
				t.Errorf("column %s has type %s, want a numeric type", sh.cols[j], r.Types[j])
			}
		}
	}
	parsed := make([][]float64, len(cells))
	for i, row := range cells {
		parsed[i] = make([]float64, len(row))
		for j, v := range row {
			parsed[i][j] = math.NaN()
			if rg, ok := sh.num[j]; ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || x < rg[0] || x > rg[1] {
					t.Errorf("row %d column %s: %q, want a number in [%v, %v]", i, sh.cols[j], v, rg[0], rg[1])
				}
				parsed[i][j] = x
			}
		}
		for _, j := range sh.dates {
			if _, err := time.Parse(time.DateOnly, row[j][:min(len(row[j]), 10)]); err != nil {
				t.Errorf("row %d column %s: %q is not a date", i, sh.cols[j], row[j])
			}
		}
	}
	if sh.note != "" {
		found := false
		for _, w := range r.Warnings {
			found = found || (w.Level == "Note" && strings.Contains(w.Message, sh.note))
		}
		if !found {
			t.Errorf("no Note containing %q: warnings %v", sh.note, r.Warnings)
		}
	}
	if sh.check != nil && !t.Failed() {
		sh.check(t, parsed)
	}
	return parsed
}

// sameNumbers reports whether two results' parsed numbers agree to 1e-12
// (relative), NaN matching NaN.
func sameNumbers(a, b [][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j, x := range a[i] {
			y := b[i][j]
			if !(math.IsNaN(x) && math.IsNaN(y)) && !(math.Abs(x-y) <= 1e-12*max(1, math.Abs(y))) {
				return false
			}
		}
	}
	return true
}
