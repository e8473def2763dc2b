package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/cmd/dpsql/internal/bench"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/storage"
)

func init() {
	commands["bench"] = command{"time private releases against the same non-private queries on a corpus; prints a table", runBench}
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
	e, err := bench.NewEngine(p)
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Fprintf(stdout, "table t(user_id, word): %d rows from %s, built in %s\n\n", t.Len(), *input, loaded.Round(time.Millisecond))
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
	newCtx := func(user string) *sql.Context { return server.NewContext(context.Background(), user, "bench") }
	results, err := bench.Measure(newCtx, e, bench.Queries("t"), *runs)
	if err != nil {
		return err
	}
	return bench.WriteTable(stdout, results)
}
