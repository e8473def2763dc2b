package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/cmd/dpsql/internal/bench"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/storage"
)

func init() {
	commands["bench"] = command{Summary: "time private releases against the same non-private queries on a corpus; prints a table", Run: runBench}
}

// defaultCorpus is the benchmark input: $DPSQL_DATA_DIR or ../shared/data.
func defaultCorpus() string {
	dir := os.Getenv("DPSQL_DATA_DIR")
	if dir == "" {
		dir = filepath.Join("..", "shared", "data")
	}
	return filepath.Join(dir, "git_python_ecosystem.tsv.gz")
}

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", stderr)
	input := fs.String("input", defaultCorpus(), "corpus: user_id<TAB>text rows (TSV or CSV, gzip allowed); every token becomes a (user_id, word) row")
	runs := fs.Int("runs", 3, "runs of each query (interleaved); the table shows the minimum and the median")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the query runs to this file")
	quiet := fs.Bool("quiet", false, "no progress output")
	index := fs.Bool("index", true, "keep a release index of t (releases reading the whole word column use it); it is built before the timed runs")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpsql bench [--input FILE] [--runs N] [--cpuprofile FILE]")
		fmt.Fprintln(stderr, "\nBuilds the table t(user_id, word) from the tokens of a corpus and times, in this process,")
		fmt.Fprintln(stderr, "SELECT DP_SET_UNION(word, user_id) FROM t and an analyst's private SELECT DISTINCT word FROM t")
		fmt.Fprintln(stderr, "against SELECT COUNT(DISTINCT word) FROM t and the plain SELECT DISTINCT word FROM t, and an")
		fmt.Fprintln(stderr, "analyst's private SELECT word, COUNT(*), AVG(LENGTH(word)) FROM t GROUP BY word against the same")
		fmt.Fprintln(stderr, "non-private GROUP BY. Each row's ratio is its median over its baseline's median.")
		fmt.Fprintln(stderr, "Timings on a shared machine are noisy; compare ratios.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *runs < 1 {
		return usagef("--runs must be at least 1")
	}
	var progress io.Writer = stderr
	if *quiet {
		progress = nil
	}
	start := time.Now()
	t, err := bench.WordsTable(*input, "t", progress)
	if err != nil {
		return err
	}
	loaded := time.Since(start)
	db := storage.NewDatabase("bench")
	if err := db.AddTable(t); err != nil {
		return err
	}
	p, err := storage.NewProvider(db)
	if err != nil {
		return err
	}
	var ix *release.Indexes
	var popts []planner.PolicyOption
	if *index {
		ix = release.NewIndexes(release.DefaultIndexBytes, func(format string, args ...any) {
			fmt.Fprintf(stdout, format+"\n", args...)
		})
		popts = append(popts, planner.WithIndexes(ix))
	}
	e, err := bench.NewEngine(p, popts...)
	if err != nil {
		return err
	}
	defer e.Close()
	newCtx := func(user string) *sql.Context { return server.NewContext(context.Background(), user, "bench") }
	fmt.Fprintf(stdout, "table t(user_id, word): %d rows from %s, built in %s\n", t.Len(), *input, loaded.Round(time.Millisecond))
	fmt.Fprintf(stdout, "machine: %d CPUs, load average %s\n", runtime.NumCPU(), loadAverage())
	var first time.Duration
	if *index {
		// The first release over the column builds the index: timed
		// here, outside the runs.
		start := time.Now()
		if _, err := bench.Run(newCtx(bench.Analyst), e, "SELECT DISTINCT word FROM t"); err != nil {
			return err
		}
		first = time.Since(start)
		fmt.Fprintf(stdout, "first private release (builds the release index): %s; indexes hold %.1f MiB\n",
			first.Round(time.Millisecond), float64(ix.Bytes())/(1<<20))
	} else {
		fmt.Fprintln(stdout, "no release index (--index=false): every release scans")
	}
	fmt.Fprintln(stdout)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	results, err := bench.Measure(newCtx, e, bench.Queries("t"), *runs)
	if err != nil {
		return err
	}
	if err := bench.WriteTable(stdout, results); err != nil {
		return err
	}
	for _, r := range results {
		if first > 0 && r.Name == "SELECT DISTINCT" {
			fmt.Fprintf(stdout, "\nfirst private release (index build) %s = %.2f× the plain SELECT DISTINCT's median (%s)\n",
				first.Round(time.Millisecond), float64(first)/float64(r.Median()), r.Median().Round(time.Millisecond))
		}
	}
	_, err = fmt.Fprintf(stdout, "\nload average after the runs: %s\n", loadAverage())
	return err
}

// loadAverage returns the 1, 5 and 15-minute load averages ("unknown"
// where /proc/loadavg is missing).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
