package batch

import (
	"fmt"
	"io"
	"strings"

	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/explain"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

func init() {
	Commands["params"] = Command{"explain, without data, what a release with these options does: noise, threshold, users a key needs, aggregates' noise", runParams}
}

func runParams(args []string, stdout, stderr io.Writer) error {
	fs := NewFlagSet("params", stderr)
	var mf cli.MechanismFlags
	mf.Register(fs, false)
	asJSON := fs.Bool("json", false, "print the calibration as one JSON object instead of a table")
	aggs := fs.String("aggregates", "", "explain a GROUP BY with DP aggregates instead of a set union: a comma list of count, count_column, count_distinct_unit, sum, avg")
	bounds := fs.String("bounds", "", "clamping bounds 'lower,upper' of sum and avg (required for them)")
	maxGroups := fs.Int("max-groups-contributed", dpagg.DefaultMaxGroupsContributed, "with --aggregates: Δ0, the keys each user contributes to")
	maxRows := fs.Int("max-rows-per-group", dpagg.DefaultMaxRowsPerGroup, "with --aggregates: the rows of a user counted in one key")
	noiseName := fs.String("noise", "auto", "with --aggregates: the aggregates' noise: laplace, gaussian or auto")
	share := fs.Float64("selection-share", dpagg.DefaultSelectionShare, "with --aggregates: the share of ε that selects the keys")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpsql params [--mechanism M] [--epsilon E] [--delta D] [--max-items K] [--alpha A] [--rounds R] [--json]")
		fmt.Fprintln(stderr, "       dpsql params --aggregates count,avg --bounds 0,100 [--epsilon E] [--max-groups-contributed K] [--json]")
		fmt.Fprintln(stderr, "\nPrints, without reading any data, what a release with these options does: the mechanism, its noise")
		fmt.Fprintln(stderr, "and threshold, how many users a key needs to be released with probability 1/2 and 0.95, and with")
		fmt.Fprintln(stderr, "--aggregates each aggregate's noise and 95% interval. The SQL function DP_EXPLAIN('query') shows the")
		fmt.Fprintln(stderr, "same for a query. --json prints the full calibration as JSON.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	opts, err := mf.Options()
	if err != nil {
		return UsageError{err}
	}
	cli.WarnDelta(stderr, opts.Delta)
	if *aggs == "" {
		cal, err := setunion.Calibrate(opts)
		if err != nil {
			return UsageError{err}
		}
		if *asJSON {
			return cli.WriteJSON(stdout, cal)
		}
		return explain.WriteTable(stdout, cal.Facts())
	}
	o := dpagg.Defaults()
	o.Epsilon, o.Delta = opts.Epsilon, opts.Delta
	o.MaxGroupsContributed, o.MaxRowsPerGroup, o.SelectionShare = *maxGroups, *maxRows, *share
	if opts.Mechanism != setunion.DPSIPS {
		// dp_sips (the set union's default) samples a user's keys afresh
		// each round, which the aggregates cannot share: the aggregates'
		// default selection (dpagg.DefaultSelectionMechanism) is used.
		o.Mechanism = opts.Mechanism
	}
	if o.Noise, err = dpagg.ParseNoise(*noiseName); err != nil {
		return UsageError{err}
	}
	var lower, upper float64
	if *bounds != "" {
		if _, err := fmt.Sscanf(strings.ReplaceAll(*bounds, " ", ""), "%g,%g", &lower, &upper); err != nil {
			return UsageError{fmt.Errorf("--bounds must be 'lower,upper', e.g. 0,100: %v", err)}
		}
	}
	for _, k := range strings.Split(*aggs, ",") {
		a := dpagg.Aggregate{Kind: dpagg.Kind(strings.TrimSpace(strings.ToLower(k)))}
		if a.Kind == "median" || a.Kind == dpagg.Quantile {
			a.Kind, a.Quantile = dpagg.Quantile, 0.5 // MEDIAN
		}
		if a.Kind.NeedsBounds() {
			if *bounds == "" {
				return UsageError{fmt.Errorf("%s needs --bounds lower,upper (bounds are never derived from the data)", a.Kind)}
			}
			a.Lower, a.Upper = lower, upper
		}
		o.Aggregates = append(o.Aggregates, a)
	}
	plan, err := dpagg.Calibrate(o)
	if err != nil {
		return UsageError{err}
	}
	if *asJSON {
		return cli.WriteJSON(stdout, plan)
	}
	return explain.WriteTable(stdout, plan.Facts())
}
