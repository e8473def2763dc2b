package integration

import (
	"bufio"
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/internal/testdb"
	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/sqlext/tabfile"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// BenchmarkGroupByMariaDB compares, over the wire, the analyst's private
// GROUP BY on dpsql (answered from the server's release index of the
// column: release/groupindex.go) with the plain GROUP BY a user runs on
// MariaDB with an index on the key, on the same table: the (user_id,
// word) rows of git_python_ecosystem's tokens (4.4M rows). It starts a
// real MariaDB in a temporary directory (internal/testdb: skipped, saying
// so, when MariaDB is not installed) and a governed dpsql, loads both,
// CREATE INDEX on MariaDB, waits for dpsql's own index build, then times
// the two statements in paired runs (MariaDB, then dpsql, b.N times; wall
// time from the client, all rows read) and reports their medians and the
// ratio dpsql/MariaDB.
//
// Run: go test -run XXX -bench GroupByMariaDB -benchtime 5x ./integration
func BenchmarkGroupByMariaDB(b *testing.B) {
	corpus := testenv.DataFile(b, "git_python_ecosystem.tsv.gz")
	dir := b.TempDir()
	data := filepath.Join(dir, "words.tsv")
	rows := writeWordRows(b, corpus, data)
	m := testdb.MariaDB(b) // skips, saying so, without MariaDB
	start := time.Now()
	m.Exec(b,
		"SET GLOBAL innodb_buffer_pool_size = 536870912",
		"CREATE TABLE t (user_id VARCHAR(255) NOT NULL, word VARCHAR(768) NOT NULL) DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_bin",
		fmt.Sprintf("LOAD DATA INFILE '%s' INTO TABLE t FIELDS TERMINATED BY '\\t' ESCAPED BY '' LINES TERMINATED BY '\\n'", data),
		"CREATE INDEX t_word ON t (word)",
		"ANALYZE TABLE t",
	)
	b.Logf("MariaDB: %d rows loaded and indexed in %v", rows, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
datasets:
  - database: bench
    table: t
    file: %s
    columns:
      - {name: user_id, type: TEXT}
      - {name: word, type: TEXT}
    privacy_unit: user_id
%s`, data, testserver.AccountsYAML(b, adminPassword, analystPassword, "bench", 1e9, 0.5))
	g := testserver.GovernedYAML(b, dir, cfg)
	select {
	case <-g.IndexesPrebuilt():
	case <-time.After(10 * time.Minute):
		b.Fatal("dpsql's own index builds did not end")
	}
	b.Logf("dpsql: loaded and indexed in %v", time.Since(start).Round(time.Millisecond))

	mdb, err := dbsql.Open("mysql", m.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer mdb.Close()
	dcfg := gomysql.NewConfig()
	dcfg.User, dcfg.Passwd, dcfg.Net, dcfg.Addr, dcfg.DBName = "analyst", analystPassword, "tcp", g.Addr(), "bench"
	conn, err := gomysql.NewConnector(dcfg)
	if err != nil {
		b.Fatal(err)
	}
	ddb := dbsql.OpenDB(conn)
	defer ddb.Close()
	ctx := context.Background()
	mc, err := mdb.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer mc.Close()
	dc, err := ddb.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer dc.Close()
	if _, err := dc.ExecContext(ctx, "SET dp_reuse = OFF"); err != nil {
		b.Fatal(err)
	}
	const q = "SELECT word, COUNT(*) FROM t GROUP BY word"
	if plan, err := readAll(ctx, mc, "EXPLAIN "+q); err == nil {
		b.Logf("MariaDB plan: %v", plan)
	}
	timed := func(b *testing.B, c *dbsql.Conn) (time.Duration, int) {
		start := time.Now()
		n, err := readAll(ctx, c, q)
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start), len(n)
	}
	timed(b, mc) // warm both (MariaDB's buffer pool; dpsql's engine)
	timed(b, dc)
	// The setup above runs once; the paired runs are a sub-benchmark.
	b.Run("paired", func(b *testing.B) {
		before := g.PathsTaken()
		var times [2][]float64
		var groups [2]int
		for range b.N {
			for i, c := range []*dbsql.Conn{mc, dc} {
				d, n := timed(b, c)
				times[i] = append(times[i], float64(d.Microseconds())/1000)
				groups[i] = n
			}
		}
		if p := g.PathsTaken(); p.Group-before.Group != int64(b.N) {
			b.Fatalf("dpsql answered %d of %d releases from the index", p.Group-before.Group, b.N)
		}
		med := func(x []float64) float64 {
			s := slices.Clone(x)
			slices.Sort(s)
			return s[len(s)/2]
		}
		mm, dm := med(times[0]), med(times[1])
		b.ReportMetric(mm, "mariadb-ms")
		b.ReportMetric(dm, "dpsql-ms")
		b.ReportMetric(dm/mm, "dpsql/mariadb")
		b.Logf("%s over the wire, %d paired runs, load average %s: MariaDB (index t_word) median %.1f ms, %d groups; dpsql private median %.1f ms, %d groups released; ratio %.2f×",
			q, b.N, loadAverage(), mm, groups[0], dm, groups[1], dm/mm)
	})
}

// writeWordRows writes one user_id<TAB>word line per token of the corpus
// (as dpsql bench builds its table t) and returns the number of rows.
func writeWordRows(tb testing.TB, corpus, out string) int {
	tb.Helper()
	r, err := tabfile.Open(corpus, tabfile.FormatOf(corpus))
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	f, err := os.Create(out)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var sc tokenize.Scanner
	rows := 0
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		if len(rec) < 2 {
			continue
		}
		user := rec[0]
		sc.Each(rec[1], func(tok []byte) {
			if utf8.RuneCount(tok) > 768 {
				return // over MariaDB's indexable VARCHAR; none in the corpus
			}
			w.Write(user)
			w.WriteByte('\t')
			w.Write(tok)
			w.WriteByte('\n')
			rows++
		})
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return rows
}
