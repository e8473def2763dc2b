// Command dpsql-beam runs dpsql's DP set union as an Apache Beam pipeline
// (package beamdp), for inputs larger than one machine. It is a binary of its
// own so that the dpsql server does not link Beam.
//
//	dpsql-beam union --input GLOB --output PREFIX --user-column N
//	                 (--item-column N | --text-column N) [mechanism flags]
//	                 [--shards S] [Beam pipeline flags]
//
// The mechanism and column flags are those of `dpsql union`; the Beam flags
// (--runner, default prism, --endpoint, --environment_type, --project,
// --region, --temp_location, …) are the Go SDK's own. The released items are
// written, sorted, to PREFIX-00000-of-00001 and the run's exact input
// statistics to PREFIX-stats.json; while the pipeline runs, progress lines go
// to stderr (--quiet: none), and a one-line JSON summary ends the output on
// stderr, as for `dpsql union`.
//
// The same binary is also the pipeline's worker: a runner that starts it with
// --worker (Dataflow, Flink and Spark job services, through the Beam Go SDK
// container) gets the SDK harness instead of a command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/dpsql/dpsql/beam/beamdp"
	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/internal/progress"
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args and returns the exit code: 0 on success, 2 for usage
// errors, 1 for everything else.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		return 0
	}
	if strings.HasPrefix(args[0], "-") {
		// No command: a runner starting the binary as a worker (--worker);
		// beam.Init runs the SDK harness and exits.
		if err := flag.CommandLine.Parse(args); err != nil {
			return 2
		}
		beam.Init()
		usage(stderr)
		return 2
	}
	if args[0] != "union" {
		fmt.Fprintf(stderr, "dpsql-beam: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	err := runUnion(context.Background(), flag.CommandLine, args[1:], stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "dpsql-beam union: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "dpsql-beam union: %v\n", err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dpsql-beam union --input GLOB --output PREFIX --user-column N (--item-column N | --text-column N) [flags]")
	fmt.Fprintln(w, "\nDP set union of (user, item) pairs as an Apache Beam pipeline (default runner: prism, in process).")
	fmt.Fprintln(w, "Run 'dpsql-beam union -h' for the flags.")
}

// usageError marks errors in the command line (exit code 2).
type usageError struct{ error }

// summary is the JSON line dpsql-beam prints last on stderr: the fields of
// `dpsql union`'s summary that a distributed run can measure, plus the
// runner, the output and statistics files and the shards. Its counts are
// read from the statistics file the pipeline wrote (beamdp.WriteStats), so
// they are complete; they describe the input exactly and are meant for the
// operator who holds the data.
type summary struct {
	setunion.Calibration
	Input          string  `json:"input"`
	Output         string  `json:"output"`
	Stats          string  `json:"stats"`
	Runner         string  `json:"runner"`
	Shards         int     `json:"shards"`
	Rows           int64   `json:"rows"`
	Occurrences    int64   `json:"occurrences"`
	Users          int64   `json:"users"`
	Pairs          int64   `json:"pairs"`
	DistinctItems  int64   `json:"distinct_items"`
	Released       int64   `json:"released"`
	Seconds        float64 `json:"seconds"`
	PairsPerSecond float64 `json:"pairs_per_second"`
	Seeded         bool    `json:"seeded,omitempty"`
}

// runUnion parses the union flags into fs, which must be flag.CommandLine in
// the binary (Beam's pipeline flags live there), builds the pipeline and runs
// it on the runner named by --runner.
func runUnion(ctx context.Context, fs *flag.FlagSet, args []string, stderr io.Writer) error {
	beamFlags := map[string]bool{} // registered by the Beam SDK, before ours
	fs.VisitAll(func(f *flag.Flag) { beamFlags[f.Name] = true })
	var in cli.InputFlags
	var mf cli.MechanismFlags
	in.Register(fs, false)
	mf.Register(fs, true)
	fs.Lookup("input").Usage = "input files: a glob on any Beam filesystem (local, gs://…), TSV or CSV, gzip allowed (required)"
	fs.Lookup("skip-header").Usage = "skip the first row of every input file (a header)"
	fs.Lookup("public").Usage = "public frequency table for greedy_public, a glob read by the pipeline: lines ITEM[<TAB>COUNT] (gzip allowed); must not come from the protected data"
	output := fs.String("output", "", "write the released items, sorted, to PREFIX-00000-of-00001 (required)")
	shards := fs.Int("shards", 1, "number of shards S of a sequential mechanism (policy_*, greedy_*): users are split by keyed hash; 1 is the single-machine mechanism")
	distinct := fs.Bool("distinct-items", true, "count the distinct items of the input for the summary; false saves the parallel mechanisms (count_*, weighted_*, single_item, dp_sips) about a third of their work and reports 0")
	verbose := fs.Bool("verbose", false, "show the runner's informational logs (always shown for runners other than prism)")
	quiet := fs.Bool("quiet", false, "no progress output")
	fs.SetOutput(stderr)
	fs.Usage = unionUsage(fs, stderr, beamFlags)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (all options are flags; see -h)", fs.Arg(0))}
	}
	if err := in.Validate(); err != nil {
		return usageError{err}
	}
	if *output == "" {
		return usageError{fmt.Errorf("--output PREFIX is required")}
	}
	opts, err := mf.BaseOptions()
	if err != nil {
		return usageError{err}
	}
	if _, err := mf.Rand(stderr); err != nil { // validates --seed and warns
		return usageError{err}
	}
	cfg := beamdp.Config{Options: opts, Shards: *shards, CountDistinctItems: *distinct}
	if mf.Seed != "" {
		seed, _ := strconv.ParseUint(mf.Seed, 10, 64)
		cfg.Seed = &seed
	}
	runner := *runners.Runner
	if runner == "" {
		runner = "prism"
	}
	if !*verbose && (runner == "prism" || runner == "PrismRunner") {
		beamlog.LogLevel = "warn" // read by beam.Init
	}
	beam.Init()

	start := time.Now()
	p, s := beam.NewPipelineWithRoot()
	rel, err := buildUnion(ctx, s, in, mf.Public, cfg, *output)
	if err != nil {
		return err
	}
	statsPath := beamdp.StatsName(*output)

	var progressW io.Writer = stderr
	if *quiet {
		progressW = nil
	}
	size := inputSize(ctx, in.Input)
	base := beamdp.CurrentProgress()
	rep := progress.Start(progressW, "dpsql-beam: "+runner, func() string { return status(beamdp.CurrentProgress(), base, size) })
	_, err = beamx.RunWithMetrics(ctx, p)
	rep.Stop()
	if err != nil {
		return fmt.Errorf("pipeline failed on runner %s: %w", runner, err)
	}
	var st beamdp.Stats
	if *jobopts.Async {
		fmt.Fprintf(stderr, "dpsql-beam: the job was submitted with --async and may still be running: the counts below are not known yet (0); %s and %s appear when it finishes\n", beamdp.ShardName(*output), statsPath)
	} else if st, err = beamdp.ReadStats(ctx, statsPath); err != nil {
		return fmt.Errorf("the pipeline succeeded but its statistics are unreadable: %w", err)
	}
	return writeSummary(stderr, rel.Calibration, start, in.Input, *output, statsPath, runner, cfg, st)
}

// buildUnion adds the command's pipeline to s: read the input (and the
// public table, if any), release with cfg, write the items to
// ShardName(output) and the statistics to StatsName(output). A bad
// configuration is a usageError.
func buildUnion(ctx context.Context, s beam.Scope, in cli.InputFlags, public string, cfg beamdp.Config, output string) (beamdp.Release, error) {
	rows, rowStats, err := beamdp.ReadRows(ctx, s, beamdp.Input{
		Glob: in.Input, Format: tabfile.Format(strings.ToLower(in.Format)), UserColumn: in.UserColumn,
		ItemColumn: in.ItemColumn, TextColumn: in.TextColumn, SkipHeader: in.SkipHeader,
	})
	if err != nil {
		return beamdp.Release{}, err
	}
	if public != "" {
		if cfg.Public, err = beamdp.ReadPublic(ctx, s, public); err != nil {
			return beamdp.Release{}, err
		}
	}
	rel, err := beamdp.Union(s, rows, cfg)
	if err != nil {
		return rel, usageError{err}
	}
	beamdp.WriteSorted(s, output, rel.Items)
	beamdp.WriteStats(s, beamdp.StatsName(output), rowStats, rel.Stats)
	return rel, nil
}

// unionUsage returns the union command's usage: its own flags, then the Beam
// SDK's (beamFlags).
func unionUsage(fs *flag.FlagSet, stderr io.Writer, beamFlags map[string]bool) func() {
	return func() {
		fmt.Fprintln(stderr, "usage: dpsql-beam union --input GLOB --output PREFIX --user-column N (--item-column N | --text-column N) [flags]")
		fmt.Fprintln(stderr, "\nReleases, under user-level (ε, δ)-differential privacy, items of the input, with the mechanisms of")
		fmt.Fprintln(stderr, "`dpsql union` run as an Apache Beam pipeline. Ends with one JSON summary line on stderr.")
		fmt.Fprintf(stderr, "--max-items 0 (the default) bounds each user to %d items: a pipeline cannot choose Δ0 privately.\n\nflags:\n", setunion.FixedMaxItems)
		printFlags(stderr, fs, func(name string) bool { return !beamFlags[name] })
		if len(beamFlags) > 0 {
			fmt.Fprintln(stderr, "\nBeam pipeline flags (the Go SDK's; --runner chooses the runner, default prism; most others apply to one runner):")
			printFlags(stderr, fs, func(name string) bool { return beamFlags[name] })
		}
	}
}

// writeSummary prints the budget the release spent and the JSON summary
// line of a finished pipeline.
func writeSummary(stderr io.Writer, cal setunion.Calibration, start time.Time, input, output, statsPath, runner string, cfg beamdp.Config, st beamdp.Stats) error {
	total := time.Since(start).Seconds()
	fmt.Fprintf(stderr, "dpsql-beam: this release spent ε = %g, δ = %g of privacy budget (%s; no dpsql ledger was charged)\n", cal.Epsilon, cal.Delta, cal.Mechanism)
	return cli.WriteJSON(stderr, summary{
		Calibration:    cal,
		Input:          input,
		Output:         beamdp.ShardName(output),
		Stats:          statsPath,
		Runner:         runner,
		Shards:         cfg.Shards,
		Rows:           st.Rows,
		Occurrences:    st.Occurrences,
		Users:          st.Users,
		Pairs:          st.Pairs,
		DistinctItems:  st.DistinctItems,
		Released:       st.Released,
		Seconds:        total,
		PairsPerSecond: float64(st.Pairs) / total,
		Seeded:         cfg.Seed != nil,
	})
}

// inputSize returns the total size of the files of glob, or 0 if it cannot
// be listed (the pipeline then reports the error).
func inputSize(ctx context.Context, glob string) int64 {
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return 0
	}
	defer fs.Close()
	files, err := fs.List(ctx, glob)
	if err != nil {
		return 0
	}
	var n int64
	for _, f := range files {
		if sz, err := fs.Size(ctx, f); err == nil {
			n += sz
		}
	}
	return n
}

// status describes the work done since base by the workers in this process
// (prism's; a remote runner's workers report nothing here) for an input of
// size bytes.
func status(now, base beamdp.Progress, size int64) string {
	rows, bytes := now.Rows-base.Rows, now.Bytes-base.Bytes
	users, items := now.Users-base.Users, now.Items-base.Items
	if rows == 0 && users == 0 && items == 0 {
		return "running (no progress from workers in this process yet; a remote runner reports in its own console)"
	}
	read := fmt.Sprintf("%d rows read", rows)
	if size > 0 {
		read = fmt.Sprintf("%d rows read (%.0f%% of %s)", rows, 100*float64(min(bytes, size))/float64(size), progress.Bytes(size))
	}
	return fmt.Sprintf("%s, %d users grouped, %d release decisions", read, users, items)
}

// printFlags prints the defaults of the flags of fs that keep selects.
func printFlags(w io.Writer, fs *flag.FlagSet, keep func(name string) bool) {
	sub := flag.NewFlagSet("", flag.ContinueOnError)
	sub.SetOutput(w)
	fs.VisitAll(func(f *flag.Flag) {
		if keep(f.Name) {
			sub.Var(f.Value, f.Name, f.Usage)
		}
	})
	sub.PrintDefaults()
}
