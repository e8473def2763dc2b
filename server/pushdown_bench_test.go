package server_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	dbsql "database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testdb"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// benchResult is what one benchmark server process reports.
type benchResult struct {
	Start   float64      `json:"start_s"` // NewGoverned (loads) and index prebuild
	Queries []benchQuery `json:"queries"`
	HWMKiB  int64        `json:"vm_hwm_kib"`
	Err     string       `json:"error,omitempty"`
}

type benchQuery struct {
	Query   string  `json:"query"`
	Seconds float64 `json:"s"`
	Rows    int     `json:"rows"`
	Digest  string  `json:"sha256"`
	Err     string  `json:"error,omitempty"`
}

const benchChildEnv = "DPSQL_PUSHDOWN_BENCH_CHILD"

// TestPushdownBench compares push-down releases with in-memory ones on
// the 4.4M-row table of git_python_ecosystem's (user, word) pairs loaded
// into MariaDB, and runs a push-down release over a 20M-row table under a
// 256 MiB memory limit, each server in a process of its own (peak RSS from
// the kernel). It runs only with DPSQL_PUSHDOWN_BENCH=1 (it takes minutes
// and a few GB of disk); see docs/sources.md for the numbers.
//
//	DPSQL_PUSHDOWN_BENCH=1 go test -count=1 -timeout 2h -v -run '^TestPushdownBench$' ./server/
func TestPushdownBench(t *testing.T) {
	if cfg := os.Getenv(benchChildEnv); cfg != "" {
		benchChild(t, cfg)
		return
	}
	if os.Getenv("DPSQL_PUSHDOWN_BENCH") != "1" {
		t.Skip("the push-down benchmark runs with DPSQL_PUSHDOWN_BENCH=1 (MariaDB, ../shared/data, minutes)")
	}
	corpus := filepath.Join("..", "..", "shared", "data", "git_python_ecosystem.tsv.gz")
	if _, err := os.Stat(corpus); err != nil {
		t.Skipf("the corpus is absent (%v)", err)
	}
	db := testdb.MariaDB(t)
	dir := t.TempDir()
	start := time.Now()
	rows := benchLoadWords(t, db, corpus, filepath.Join(dir, "words.tsv"))
	t.Logf("words: %d rows loaded into MariaDB in %.1fs", rows, time.Since(start).Seconds())
	t.Setenv("DPSQL_BENCH_DSN", db.DSN)

	queries := []string{
		"SELECT DISTINCT word FROM %s",
		"SELECT word, COUNT(*) FROM %s GROUP BY word",
		"SELECT DISTINCT word FROM %s WHERE word >= 'a' AND word < 'n'",
	}
	ordered := "SELECT user_id, word FROM %s ORDER BY user_id, CAST(word AS BINARY)"
	mem := benchRun(t, dir, "mem", "words", fmt.Sprintf("query: '%s'", fmt.Sprintf(ordered, "words")), "", 0, queries)
	push := benchRun(t, dir, "push", "words", "table: words", "mode: pushdown", 0, queries)
	for i := range queries {
		m, p := mem.Queries[i], push.Queries[i]
		t.Logf("%-60s in memory %6.2fs, push-down %6.2fs (ratio %.1f), %d rows, same output: %v",
			m.Query, m.Seconds, p.Seconds, p.Seconds/m.Seconds, p.Rows, m.Digest == p.Digest && m.Err == "" && p.Err == "")
	}
	t.Logf("start (load + indexes): in memory %.1fs, push-down %.1fs; peak RSS: in memory %d MiB, push-down %d MiB",
		mem.Start, push.Start, mem.HWMKiB>>10, push.HWMKiB>>10)

	// 20M rows (rows·4.6 in a trial): the words four times, plus more of
	// them again.
	start = time.Now()
	total := 20_000_000
	if rows*5 < total {
		total = rows*4 + rows/2
	}
	db.Exec(t, "CREATE TABLE big LIKE words", "INSERT INTO big SELECT * FROM words",
		"INSERT INTO big SELECT * FROM big", "INSERT INTO big SELECT * FROM big",
		fmt.Sprintf("INSERT INTO big SELECT * FROM words LIMIT %d", total-4*rows))
	t.Logf("big: %d rows made in %.1fs", total, time.Since(start).Seconds())
	big := queries[:2]
	bigPush := benchRun(t, dir, "bigpush", "big", "table: big", "mode: pushdown", 256<<20, big)
	bigMem := benchRun(t, dir, "bigmem", "big", fmt.Sprintf("query: '%s'", fmt.Sprintf(ordered, "big")), "", 8<<30, big)
	for i := range big {
		p, m := bigPush.Queries[i], bigMem.Queries[i]
		t.Logf("big: %-45s push-down (256 MiB limit) %6.2fs, in memory (8 GiB limit) %6.2fs, %d rows, same output: %v",
			p.Query, p.Seconds, m.Seconds, p.Rows, m.Digest == p.Digest && m.Err == "" && p.Err == "")
	}
	t.Logf("big: start: push-down %.1fs, in memory %.1fs; peak RSS: push-down %d MiB, in memory %d MiB",
		bigPush.Start, bigMem.Start, bigPush.HWMKiB>>10, bigMem.HWMKiB>>10)
	if out, err := os.ReadFile("/proc/loadavg"); err == nil {
		t.Logf("load average at the end: %s", strings.TrimSpace(string(out)))
	}
}

// benchLoadWords writes the corpus's (user, word) pairs, one row per
// token, to a TSV file and loads it into MariaDB's words table.
func benchLoadWords(t *testing.T, db *testdb.Server, corpus, tsv string) int {
	t.Helper()
	f, err := os.Open(corpus)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(tsv)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(out, 1<<20)
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var tk tokenize.Scanner
	n := 0
	limit := 0 // DPSQL_PUSHDOWN_BENCH_ROWS: fewer rows, for a trial of the harness
	fmt.Sscan(os.Getenv("DPSQL_PUSHDOWN_BENCH_ROWS"), &limit)
	for sc.Scan() {
		user, text, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		tk.Each([]byte(text), func(tok []byte) {
			if limit > 0 && n >= limit {
				return
			}
			if len(tok) > 100 || strings.ContainsAny(string(tok), "\\\t\n") {
				return
			}
			fmt.Fprintf(w, "%s\t%s\n", user, tok)
			n++
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	db.Exec(t, "CREATE TABLE words (user_id VARCHAR(16) NOT NULL, word VARCHAR(100) NOT NULL) CHARACTER SET utf8mb4")
	gomysql.RegisterLocalFile(tsv)
	conn, err := dbsql.Open("mysql", db.AdminDSN+"?allowAllFiles=true")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE words CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n'", tsv)); err != nil {
		t.Fatal(err)
	}
	return n
}

// benchRun serves table from MariaDB in a process of its own and runs the
// queries as an analyst.
func benchRun(t *testing.T, dir, name, table, source, mode string, memLimit int64, queries []string) benchResult {
	t.Helper()
	limits := ""
	if memLimit > 0 {
		limits = fmt.Sprintf("limits: {max_memory_bytes: %d, max_execution_time: 1h}\n", memLimit)
	} else {
		limits = "limits: {max_execution_time: 1h}\n"
	}
	cfgPath := filepath.Join(dir, name+".yaml")
	write(t, cfgPath, fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: %s
accounting: {method: basic}
defaults: {epsilon: 1, delta: 1e-6}
%sdatasets:
  - database: shop
    table: %s
    source: {driver: mysql, dsn_env: DPSQL_BENCH_DSN, %s}
    privacy_unit: user_id
    %s
accounts:
  admins:
    - {user: admin, password_hash: '%s'}
  analysts:
    - user: alice
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 1000, delta: 1e-4}
`, filepath.Join(dir, name+"-data"), limits, table, source, mode, hashOf(t, adminPass), hashOf(t, alicePass)))
	qs := make([]string, len(queries))
	for i, q := range queries {
		qs[i] = fmt.Sprintf(q, table)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPushdownBench$", "-test.count=1", "-test.timeout=2h")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+cfgPath, "DPSQL_BENCH_QUERIES="+strings.Join(qs, ";;"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var res benchResult
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "BENCH "); ok {
			if jerr := json.Unmarshal([]byte(rest), &res); jerr != nil {
				t.Fatalf("%s: %v", name, jerr)
			}
		}
	}
	if err != nil || res.Err != "" {
		t.Fatalf("%s: %v %s\n%s", name, err, res.Err, out)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > res.HWMKiB {
		res.HWMKiB = ru.Maxrss
	}
	for _, q := range res.Queries {
		if q.Err != "" {
			t.Errorf("%s: %s: %s", name, q.Query, q.Err)
		}
	}
	return res
}

// benchChild is one benchmark server: it serves the configuration, runs
// the queries as alice (seeded releases) and prints a BENCH line.
func benchChild(t *testing.T, cfgPath string) {
	var res benchResult
	defer func() {
		if b, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &res.HWMKiB)
				}
			}
		}
		js, _ := json.Marshal(res)
		fmt.Printf("BENCH %s\n", js)
	}()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		res.Err = err.Error()
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		res.Err = err.Error()
		return
	}
	start := time.Now()
	s, err := server.NewGoverned(server.GovernedOptions{Config: cfg, Listener: ln, Log: os.Stderr, LedgerLockTimeout: 5 * time.Second,
		Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(11) }}})
	if err != nil {
		res.Err = err.Error()
		return
	}
	go s.Serve()
	defer s.Shutdown(time.Second)
	<-s.IndexesPrebuilt()
	res.Start = time.Since(start).Seconds()
	var dep deployment
	alice := dep.connect(t, s.Addr(), "alice", alicePass, false)
	for _, q := range strings.Split(os.Getenv("DPSQL_BENCH_QUERIES"), ";;") {
		bq := benchQuery{Query: q}
		qstart := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		rows, err := rowsOfContext(ctx, alice, q)
		cancel()
		bq.Seconds = time.Since(qstart).Seconds()
		if err != nil {
			bq.Err = err.Error()
		}
		bq.Rows = len(rows)
		bq.Digest = fmt.Sprintf("%x", sha256.Sum256([]byte(strings.Join(rows, "\n"))))
		res.Queries = append(res.Queries, bq)
	}
}

func rowsOfContext(ctx context.Context, db *dbsql.DB, q string) ([]string, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]dbsql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		var f []string
		for _, v := range vals {
			f = append(f, fmt.Sprintf("%v:%q", v.Valid, v.String))
		}
		out = append(out, strings.Join(f, "|"))
	}
	return out, rows.Err()
}
