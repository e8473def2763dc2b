package batch

import (
	"fmt"
	"io"
	"time"

	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

func init() {
	Commands["union"] = Command{"DP set union of the items in a TSV/CSV file", runUnion}
}

// unionSummary is the JSON line `dpsql union` prints to stderr. It describes
// the input exactly and is meant for the operator who holds the data.
type unionSummary struct {
	setunion.Calibration
	Input         string `json:"input"`
	Rows          int64  `json:"rows"`
	Occurrences   int64  `json:"occurrences"`
	Users         int    `json:"users"`
	Pairs         int64  `json:"pairs"`
	DistinctItems int    `json:"distinct_items"`
	Released      int    `json:"released"`
	// Missing is the missing mass: the share of distinct (user, item) pairs
	// (and of all occurrences) whose item was not released.
	setunion.Missing
	// Cost is the privacy cost of the release in both accountings (package
	// accounting); an unproven mechanism is accounted by basic composition.
	Cost           accounting.Cost `json:"cost"`
	Seconds        float64         `json:"seconds"`
	ReadSeconds    float64         `json:"read_seconds"`
	GroupSeconds   float64         `json:"group_seconds"`
	ReleaseSeconds float64         `json:"release_seconds"`
	PairsPerSecond float64         `json:"pairs_per_second"`
	Seeded         bool            `json:"seeded,omitempty"`
}

func runUnion(args []string, stdout, stderr io.Writer) error {
	fs := NewFlagSet("union", stderr)
	var in cli.InputFlags
	var mf cli.MechanismFlags
	in.Register(fs, false)
	mf.Register(fs, true)
	output := fs.String("output", "", "write released items to this file instead of stdout")
	quiet := fs.Bool("quiet", false, "no progress output")
	workers := fs.Int("workers", 0, "goroutines that tokenise and intern rows (default GOMAXPROCS; 1 uses the least CPU); the output does not depend on it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpsql union --input FILE[.gz] --user-column N (--item-column N | --text-column N) [options]")
		fmt.Fprintln(stderr, "\nReleases, under user-level (ε, δ)-differential privacy, items of the input: one per line")
		fmt.Fprintln(stderr, "on stdout (sorted), then one JSON summary line on stderr: the calibration (with the Δ0")
		fmt.Fprintln(stderr, "chosen), the input statistics, released keys and missing mass (share of distinct")
		fmt.Fprintln(stderr, "(user, item) pairs whose item was not released), and the privacy cost.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return UsageError{err}
	}
	opts, err := mf.Options()
	if err != nil {
		return UsageError{err}
	}
	cli.WarnUnproven(stderr, opts.Mechanism)
	cli.WarnDelta(stderr, opts.Delta)
	rng, err := mf.Rand(stderr)
	if err != nil {
		return UsageError{err}
	}
	b, err := setunion.NewBuilder(opts)
	if err != nil {
		return UsageError{err}
	}
	// The histograms are summed on one goroutine: measured on
	// git_python_ecosystem, summing them on two cores made the release
	// slower, 0.05–0.10 s against 0.03–0.04 s, since its serial draws and
	// the lists' second reading leave the second core little to win; that
	// path is gone (docs/performance.md, 27 November 2026).
	var progress io.Writer = stderr
	if *quiet {
		progress = nil
	}

	defer startTrace(stderr)()
	heap := startBatchHeap(in.Input)
	defer heap.done()
	start := time.Now()
	// Rows are tokenised and interned in batches on up to --workers
	// goroutines and added in input order (setunion.Batch), so the seeded
	// output does not depend on the number of workers. The batches come
	// from b.NewBatch: their items are interned in the builder's shared
	// dictionary by the workers, so adding a batch hashes no item.
	fill := unionFill(in.Text())
	rows, err := cli.RowsParallel(&in, progress, *workers, b.NewBatch,
		func(rb *cli.RowBlock, bt *setunion.Batch) {
			bt.Reset()
			fill(rb, bt)
			bt.Group()
		}, b.AddBatch)
	if err != nil {
		return err
	}
	readDone := time.Now()
	region("group", func() { b.Group() })
	heap.collectAfterReading()
	groupDone := time.Now()
	var res setunion.Result
	region("release", func() { res = b.Release(rng) })
	releaseDone := time.Now()
	cli.WarnDeltaUsers(stderr, opts.Delta, res.Stats.Users)

	if err := writeFileOr(stdout, *output, func(w io.Writer) error { return cli.WriteLines(w, res.Items) }); err != nil {
		return fmt.Errorf("writing released items: %w", err)
	}
	total := time.Since(start).Seconds()
	cost, err := accounting.SetUnion(b.Calibration())
	if err != nil {
		return err
	}
	return cli.WriteJSON(stderr, unionSummary{
		Calibration:    b.Calibration(),
		Missing:        res.Missing,
		Cost:           cost,
		Input:          in.Input,
		Rows:           rows,
		Occurrences:    res.Stats.Occurrences,
		Users:          res.Stats.Users,
		Pairs:          res.Stats.Pairs,
		DistinctItems:  res.Stats.DistinctItems,
		Released:       len(res.Items),
		Seconds:        total,
		ReadSeconds:    readDone.Sub(start).Seconds(),
		GroupSeconds:   groupDone.Sub(readDone).Seconds(),
		ReleaseSeconds: releaseDone.Sub(groupDone).Seconds(),
		PairsPerSecond: float64(res.Stats.Pairs) / total,
		Seeded:         mf.Seed != "",
	})
}

// unionFill returns what a worker does with a block of rows: tokenise the
// text column (tokens) or take the item column, adding each (user, item) to
// the batch.
func unionFill(tokens bool) func(*cli.RowBlock, *setunion.Batch) {
	if tokens {
		return func(rb *cli.RowBlock, bt *setunion.Batch) {
			var sc tokenize.Scanner
			for i := range rb.Len() {
				user, text := rb.Row(i)
				u, ok := bt.UserID(user)
				if !ok {
					continue
				}
				sc.Each(text, func(tok []byte) { bt.AddID(u, tok) })
			}
		}
	}
	return func(rb *cli.RowBlock, bt *setunion.Batch) {
		for i := range rb.Len() {
			bt.AddBytes(rb.Row(i))
		}
	}
}
