// Package replay re-sends the introspection and set-up queries that BI tools
// send (integration/testdata/replay) to a server over go-sql-driver/mysql and
// classifies each outcome: success, a clean MySQL error, or a failure — a
// server panic, a driver-level error, a dropped connection or a connection
// that no longer answers SELECT 1 afterwards.
package replay

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/integration/clients"
)

// Query is one statement of the corpus.
type Query struct {
	File   string // the corpus file (tool), e.g. "dbeaver.sql"
	Line   int    // the line where the statement starts
	Source string // the "-- source:" it comes from
	SQL    string // with ${...} placeholders
}

// ID names the query as file:line.
func (q Query) ID() string { return fmt.Sprintf("%s:%d", q.File, q.Line) }

// Load reads every *.sql file of dir, in name order.
func Load(dir string) ([]Query, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []Query
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		qs, err := Parse(filepath.Base(f), fh)
		fh.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, qs...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no queries in %s/*.sql", dir)
	}
	return all, nil
}

// Parse reads a corpus file: statements end with ";" at the end of a line;
// "--" lines are comments, and a "-- source:" comment names the source of the
// statements after it. Every statement must have a source.
func Parse(name string, r io.Reader) ([]Query, error) {
	var out []Query
	var source string
	var cur []string
	start := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		t := strings.TrimSpace(line)
		if len(cur) == 0 {
			if t == "" {
				continue
			}
			if strings.HasPrefix(t, "--") {
				if s, ok := strings.CutPrefix(t, "-- source:"); ok {
					source = strings.TrimSpace(s)
				}
				continue
			}
			start = n
		}
		cur = append(cur, line)
		if strings.HasSuffix(t, ";") {
			sqlText := strings.TrimSuffix(strings.TrimSpace(strings.Join(cur, "\n")), ";")
			if source == "" {
				return nil, fmt.Errorf("%s:%d: statement without a preceding -- source: line", name, start)
			}
			out = append(out, Query{File: name, Line: start, Source: source, SQL: sqlText})
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(cur) > 0 {
		return nil, fmt.Errorf("%s:%d: statement does not end with ;", name, start)
	}
	return out, nil
}

// Outcome classifies what happened to a query.
type Outcome int

const (
	Success    Outcome = iota // the result set was read to the end
	CleanError                // the server answered with a MySQL error and the connection still works
	Failure                   // panic, driver error, dropped connection, timeout, or a dead connection afterwards
)

func (o Outcome) String() string {
	return [...]string{"success", "clean error", "FAILURE"}[o]
}

// Result is what one query did.
type Result struct {
	Query
	Sent    string // the SQL after substitution
	Outcome Outcome
	Code    int    // MySQL error number (CleanError, or Failure when the server reported one)
	Message string // error text, or why it is a failure
	Columns []string
	Rows    [][]*string // at most Runner.KeepRows rows, for leak checks
	NRows   int         // rows read in total
	Took    time.Duration
}

// MaxRows is the default of Runner.KeepRows.
const MaxRows = 50

// Runner replays queries as one account.
type Runner struct {
	Target  clients.Target
	Vars    map[string]string // values of ${name} placeholders
	Timeout time.Duration     // per query and per liveness check; 0 means 10 s
	// KeepRows bounds the rows each Result keeps (0 means MaxRows; a
	// negative value keeps them all).
	KeepRows int
}

// Substitute replaces ${name} placeholders, failing on an unknown one.
func (r Runner) Substitute(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.Index(s[i:], "}")
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		name := s[i+2 : i+j]
		v, ok := r.Vars[name]
		if !ok {
			return "", fmt.Errorf("no value for ${%s}", name)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// Run replays the queries in order on one connection, opening a new one
// after a failure. The error is for set-up problems only (the server cannot
// be reached at all, a placeholder has no value).
func (r Runner) Run(ctx context.Context, queries []Query) ([]Result, error) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	db, err := clients.OpenGo(r.Target)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxIdleConns(1)

	var conn *sql.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	out := make([]Result, 0, len(queries))
	for _, q := range queries {
		res := Result{Query: q}
		if res.Sent, err = r.Substitute(q.SQL); err != nil {
			return nil, fmt.Errorf("%s: %w", q.ID(), err)
		}
		if conn == nil {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			conn, err = db.Conn(cctx)
			if err == nil {
				err = conn.PingContext(cctx)
			}
			cancel()
			if err != nil {
				return nil, fmt.Errorf("connecting as %s before %s: %w", r.Target.User, q.ID(), err)
			}
		}
		start := time.Now()
		checkAlive := run(ctx, conn, timeout, r.keepRows(), &res)
		res.Took = time.Since(start)
		if checkAlive {
			if err := alive(ctx, conn, timeout); err != nil {
				res.Outcome = Failure
				res.Message = strings.TrimSpace(res.Message + "; connection dead afterwards: " + err.Error())
			} else if res.Outcome == Failure {
				res.Message += " (the connection still answers SELECT 1)"
			}
		}
		if res.Outcome == Failure {
			conn.Raw(func(any) error { return driver.ErrBadConn }) // closes it: never reused
			conn.Close()
			conn = nil
		}
		out = append(out, res)
	}
	return out, nil
}

func (r Runner) keepRows() int {
	switch {
	case r.KeepRows == 0:
		return MaxRows
	case r.KeepRows < 0:
		return int(^uint(0) >> 1)
	}
	return r.KeepRows
}

// run executes the query and classifies it; it reports whether the
// connection may still be alive (always, except after a driver-level error
// or a timeout).
func run(ctx context.Context, conn *sql.Conn, timeout time.Duration, keep int, res *Result) bool {
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rows, err := conn.QueryContext(qctx, res.Sent)
	if err == nil {
		var r clients.Result
		r, err = clients.ScanRows(rows)
		res.Columns, res.NRows = r.Columns, len(r.Rows)
		res.Rows = r.Rows[:min(len(r.Rows), keep)]
	}
	if err == nil {
		res.Outcome = Success
		return true
	}
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me):
		res.Code, res.Message = int(me.Number), me.Message
		if strings.Contains(me.Message, "panic") {
			res.Outcome, res.Message = Failure, "server panic: "+me.Message
		} else {
			res.Outcome = CleanError
		}
	case qctx.Err() != nil:
		res.Outcome, res.Message = Failure, fmt.Sprintf("no answer within %v: %v", timeout, err)
		return false
	default:
		res.Outcome, res.Message = Failure, "driver: "+err.Error()
		return false
	}
	return true
}

// alive checks that the connection still answers SELECT 1.
func alive(ctx context.Context, conn *sql.Conn, timeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var one int
	if err := conn.QueryRowContext(cctx, "SELECT 1").Scan(&one); err != nil {
		return err
	}
	if one != 1 {
		return fmt.Errorf("SELECT 1 returned %d", one)
	}
	return nil
}

// Table formats results as a Markdown table (tool, line, outcome, detail).
func Table(results []Result) string {
	var b strings.Builder
	b.WriteString("| query | outcome | detail |\n|---|---|---|\n")
	for _, r := range results {
		detail := fmt.Sprintf("%d rows, %v", r.NRows, r.Took.Round(time.Millisecond))
		if r.Outcome != Success {
			detail = r.Message
			if r.Code != 0 {
				detail = fmt.Sprintf("%d: %s", r.Code, r.Message)
			}
		}
		sqlText := strings.Join(strings.Fields(r.Sent), " ")
		if len(sqlText) > 70 {
			sqlText = sqlText[:67] + "..."
		}
		fmt.Fprintf(&b, "| %s `%s` | %s | %s |\n", r.ID(), strings.ReplaceAll(sqlText, "|", "\\|"), r.Outcome,
			strings.ReplaceAll(strings.Join(strings.Fields(detail), " "), "|", "\\|"))
	}
	return b.String()
}
