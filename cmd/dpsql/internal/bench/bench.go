// Package bench measures DP_SET_UNION against the plain SQL queries it
// replaces, on the same table in the same process: it is what `dpsql bench`
// and the Go benchmarks of this package run.
//
// The table is (user_id TEXT, word TEXT) with one row per token of a
// corpus's text (tokenized by sqlext/tokenize), for example the 4.4 million
// tokens of git_python_ecosystem.tsv.gz.
package bench

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync/atomic"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/progress"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/tabfile"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// WordsTable reads a corpus (user_id<TAB>text rows, TSV or CSV, gzip or
// not) and returns the table name(user_id TEXT, word TEXT) holding one row
// per token. progress, if non-nil, receives status lines while it runs.
func WordsTable(path, name string, progressW io.Writer) (*storage.Table, error) {
	r, err := tabfile.Open(path, tabfile.FormatOf(path))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := storage.NewTableBuilder(name, []storage.Column{
		{Name: "user_id", Type: storage.Text, NotNull: true},
		{Name: "word", Type: storage.Text, NotNull: true},
	})
	if err != nil {
		return nil, err
	}
	users, words := b.Column(0), b.Column(1)
	var sc tokenize.Scanner
	var n atomic.Int64
	rep := progress.Start(progressW, "reading "+path, func() string {
		read, size := r.Progress()
		return fmt.Sprintf("%.0f%%, %d words", 100*float64(read)/float64(max(size, 1)), n.Load())
	})
	defer rep.Stop()
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, r.Line(), err)
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("%s: line %d has %d column(s); want user_id<TAB>text", path, r.Line(), len(f))
		}
		user := f[0]
		sc.Each(f[1], func(tok []byte) {
			users.AppendBytes(user)
			words.AppendBytes(tok)
			n.Add(1)
		})
	}
	return b.Build()
}

// Query is one benchmarked statement, run as User ("" for an ungoverned
// session; Analyst for the governed rewrite), compared with the query named
// Baseline ("": the last query).
type Query struct {
	Name     string
	SQL      string
	User     string
	Baseline string
}

// Analyst is the governed user of the benchmark engine: for it, table t is
// protected (privacy unit user_id) and SELECT DISTINCT becomes a private
// release.
const Analyst = "analyst"

// Queries are the statements compared on table: DP_SET_UNION, the analyst's
// SELECT DISTINCT (rewritten into a private release), and the two
// non-private queries they stand in for, compared with the plain SELECT
// DISTINCT (the last query); and the analyst's GROUP BY with a DP COUNT and
// AVG, compared with the same non-private GROUP BY.
//
// The analyst's private SELECT DISTINCT and DP_SET_UNION read the whole
// word column and are answered from the release index when the engine has
// one (NewEngine with planner.WithIndexes); the private SELECT DISTINCT
// with a filter always scans, and is compared with the same plain query.
func Queries(table string) []Query {
	groupBy := "SELECT word, COUNT(*), AVG(LENGTH(word)) FROM " + table + " GROUP BY word"
	filtered := "SELECT DISTINCT word FROM " + table + " WHERE LENGTH(word) > 3"
	return []Query{
		{"DP_SET_UNION", "SELECT DP_SET_UNION(word, user_id) FROM " + table, "", ""},
		{"private DP_SET_UNION", "SELECT DP_SET_UNION(word, user_id) FROM " + table, Analyst, ""},
		{"private SELECT DISTINCT", "SELECT DISTINCT word FROM " + table, Analyst, ""},
		{"private DISTINCT WHERE", filtered, Analyst, "DISTINCT WHERE"},
		{"DISTINCT WHERE", filtered, "", "DISTINCT WHERE"},
		{"COUNT(DISTINCT)", "SELECT COUNT(DISTINCT word) FROM " + table, "", ""},
		{"private GROUP BY", "SELECT /*+ SET_VAR(dp_contribution_bounds = '0,30') */" + groupBy[len("SELECT"):], Analyst, "GROUP BY"},
		{"GROUP BY", groupBy, "", "GROUP BY"},
		{"SELECT DISTINCT", "SELECT DISTINCT word FROM " + table, "", ""},
	}
}

// NewEngine returns the benchmark engine over p: dpsql's engine with the
// analyst rules (options opts), for which every table is protected by its
// user_id column and Analyst is governed with an unlimited budget.
func NewEngine(p *storage.Provider, opts ...planner.PolicyOption) (*sqle.Engine, error) {
	gov := benchGovernor{}
	return server.NewEngine(server.Config{
		Provider:  p,
		Functions: functions.Config{Governor: gov},
		Rules:     planner.PolicyRules(gov, opts...),
	})
}

// benchGovernor protects every table by user_id, governs Analyst and
// charges nothing.
type benchGovernor struct{}

func (benchGovernor) PrivacyUnit(string, string) (string, bool) { return "user_id", true }
func (benchGovernor) Governed(ctx *sql.Context) bool {
	return ctx.Session != nil && ctx.Session.Client().User == Analyst
}
func (benchGovernor) Check(*sql.Context, release.Request) error  { return nil }
func (benchGovernor) Charge(*sql.Context, release.Request) error { return nil }

// Run executes query on e and reads every row; it returns the number of
// rows.
func Run(ctx *sql.Context, e *sqle.Engine, query string) (int, error) {
	ctx = ctx.WithQuery(query) // as the server's handler does: hints are read from it
	_, it, _, err := e.Query(ctx, query)
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		_, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			it.Close(ctx)
			return n, err
		}
		n++
	}
	return n, it.Close(ctx)
}

// Result is the timing of one query over several runs.
type Result struct {
	Query
	Rows  int
	Times []time.Duration
}

// Min returns the fastest run.
func (r Result) Min() time.Duration { return r.sorted()[0] }

// Median returns the median run.
func (r Result) Median() time.Duration {
	s := r.sorted()
	return s[len(s)/2]
}

func (r Result) sorted() []time.Duration {
	s := append([]time.Duration(nil), r.Times...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// Measure runs each query runs times, interleaved (query 1, 2, 3, 1, 2, 3,
// …) so that load changes on a shared machine hit all of them alike.
// newCtx gives the context of each run, for the query's user.
func Measure(newCtx func(user string) *sql.Context, e *sqle.Engine, queries []Query, runs int) ([]Result, error) {
	out := make([]Result, len(queries))
	for i, q := range queries {
		out[i].Query = q
	}
	for r := 0; r < runs; r++ {
		for i, q := range queries {
			start := time.Now()
			n, err := Run(newCtx(q.User), e, q.SQL)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q.SQL, err)
			}
			out[i].Times = append(out[i].Times, time.Since(start))
			out[i].Rows = n
		}
	}
	return out, nil
}

// WriteTable prints results as a table, with each query's median time
// relative to its baseline's (the query named by Baseline, or the last
// query), then the queries' SQL.
func WriteTable(w io.Writer, results []Result) error {
	byName := map[string]Result{}
	for _, r := range results {
		byName[r.Name] = r
	}
	fmt.Fprintf(w, "%-26s %-8s %7s %10s %10s %8s  %s\n", "query", "user", "rows", "min", "median", "ratio", "baseline")
	for _, r := range results {
		base, ok := byName[r.Baseline]
		if !ok {
			base = results[len(results)-1]
		}
		ratio := float64(r.Median()) / float64(base.Median())
		user := r.User
		if user == "" {
			user = "admin"
		}
		fmt.Fprintf(w, "%-26s %-8s %7d %10s %10s %7.2f×  %s\n", r.Name, user, r.Rows, round(r.Min()), round(r.Median()), ratio, base.Name)
	}
	fmt.Fprintln(w)
	for _, r := range results {
		if _, err := fmt.Fprintf(w, "%-26s %s\n", r.Name+":", r.SQL); err != nil {
			return err
		}
	}
	return nil
}

func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.String()
}
