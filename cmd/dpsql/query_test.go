package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testmysql"
)

func TestQueryDemo(t *testing.T) {
	code, out, errOut := runCmd(t, "query", "-e", "SELECT DP_SET_UNION(word, user_id) AS words FROM demo.words")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "SYNTHETIC") {
		t.Errorf("stderr does not label the demo data: %s", errOut)
	}
	if !strings.HasPrefix(out, "+---") || !strings.Contains(out, "| words") || !strings.Contains(out, "1 row in set") {
		t.Fatalf("table output:\n%s", out)
	}

	code, out, errOut = runCmd(t, "query", "--quiet", "--format", "json", "-e", "SELECT DP_SET_UNION(word, user_id) AS j, 1 AS one, NULL AS n FROM words; SELECT body FROM posts LIMIT 2")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("json output:\n%s", out)
	}
	var row struct {
		J   []string `json:"j"`
		One int      `json:"one"`
		N   *int     `json:"n"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil || len(row.J) < 100 || row.One != 1 || row.N != nil {
		t.Fatalf("json row %s: %v", lines[0], err)
	}
}

func TestQueryLoadAndFormats(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "visits.tsv")
	var b strings.Builder
	b.WriteString("user_id\titem\tday\n")
	for u := 0; u < 300; u++ {
		b.WriteString(strings.Join([]string{strconv.Itoa(u), "common", "2024-05-01"}, "\t") + "\n")
		b.WriteString(strings.Join([]string{strconv.Itoa(u), "only" + strconv.Itoa(u), "2024-05-02"}, "\t") + "\n")
	}
	b.WriteString("7\ttab\\there\t\\N\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sqlFile := filepath.Join(dir, "q.sql")
	os.WriteFile(sqlFile, []byte("SELECT DP_SET_UNION(item, user_id) FROM visits;\nSELECT day, COUNT(*) FROM visits GROUP BY day ORDER BY day;\n"), 0o644)

	code, out, errOut := runCmd(t, "query", "--no-demo", "--load", "visits="+path, "--format", "tsv", "-f", sqlFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "loaded data.visits(user_id BIGINT, item TEXT, day DATE)") || !strings.Contains(errOut, "601 rows") {
		t.Errorf("load message: %s", errOut)
	}
	want := "DP_SET_UNION(item, user_id)\n[\"common\"]\nday\tCOUNT(*)\n\\N\t1\n2024-05-01\t300\n2024-05-02\t300\n"
	if out != want {
		t.Fatalf("tsv output:\n%q\nwant\n%q", out, want)
	}
	// TSV escapes like mysql --batch.
	code, out, _ = runCmd(t, "query", "--quiet", "--no-demo", "--load", "sales.v(u BIGINT, item, day TEXT)="+path, "--db", "sales", "--format", "tsv", "-e", "SELECT item FROM v WHERE u = 7 AND day IS NULL")
	if code != 0 || out != "item\ntab\\\\there\n" {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

func TestQueryErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"query"}, 2, "give exactly one of -e SQL and -f FILE"},
		{[]string{"query", "-e", "SELECT 1", "--format", "xml"}, 2, `unknown --format "xml"`},
		{[]string{"query", "--no-demo", "--load", "t", "-e", "SELECT 1"}, 2, "missing '='"},
		{[]string{"query", "--no-demo", "--load", "t=/nonexistent.tsv", "-e", "SELECT 1"}, 1, "no such file"},
		{[]string{"query", "--quiet", "-e", "SELECT DP_SET_UNION(word, user_id, 'epsilon=0') FROM words"}, 1, "ERROR 1210 (HY000): DP_SET_UNION: epsilon must be a finite number greater than 0, got 0"},
		{[]string{"query", "--quiet", "-e", "SELECT DP_SET_UNION(DISTINCT word, user_id) FROM words"}, 1, "ERROR 1105 (HY000): DP_SET_UNION does not take DISTINCT"},
		{[]string{"query", "--quiet", "--db", "nope", "-e", "SELECT 1"}, 2, "--db nope: no such database"},
	} {
		code, _, errOut := runCmd(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", c.args, code, errOut, c.code, c.msg)
		}
	}
}

// TestServe starts the serve command on a random port, queries it with
// go-sql-driver/mysql and stops it.
func TestServe(t *testing.T) {
	pr, pw := io.Pipe()
	serveStop = make(chan struct{})
	defer func() { serveStop = nil }()
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", "--ungoverned", "--addr", "127.0.0.1:0"}, io.Discard, pw)
		pw.Close()
	}()
	addrRe := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	sc := bufio.NewScanner(pr)
	var addr string
	var banner strings.Builder
	for sc.Scan() {
		banner.WriteString(sc.Text() + "\n")
		if m := addrRe.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if addr == "" {
		t.Fatalf("no address in:\n%s", banner.String())
	}
	if !strings.Contains(banner.String(), "SYNTHETIC") {
		t.Errorf("banner does not label the demo data:\n%s", banner.String())
	}
	db := testmysql.Connect(t, testmysql.Login{Addr: addr, User: "me"})
	var j string
	if err := db.QueryRow("SELECT DP_SET_UNION(word, user_id) FROM words").Scan(&j); err != nil {
		t.Fatal(err)
	}
	var words []string
	if err := json.Unmarshal([]byte(j), &words); err != nil || len(words) < 100 {
		t.Fatalf("%d words, %v", len(words), err)
	}
	db.Close()
	close(serveStop)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d", code)
		}
	case <-time.After(2 * time.Minute): // ends when it stops: generous for a loaded machine
		t.Fatal("serve did not stop within 2 minutes")
	}
}
