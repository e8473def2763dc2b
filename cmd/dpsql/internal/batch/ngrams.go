package batch

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/sqlext/ngrams"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

func init() {
	Commands["ngrams"] = Command{"DP n-gram extraction from the text of a TSV/CSV file", runNgrams}
}

// ngramsSummary is the JSON line `dpsql ngrams` prints to stderr. Apart from
// the calibration it describes the input exactly and is meant for the
// operator who holds the data.
type ngramsSummary struct {
	Input          string         `json:"input"`
	MaxN           int            `json:"max_n"`
	Epsilon        float64        `json:"epsilon"`
	Delta          float64        `json:"delta"`
	SigmaStar      float64        `json:"sigma_star"`
	Eta            float64        `json:"eta"`
	BudgetSplit    string         `json:"budget_split"`
	Mechanism      string         `json:"mechanism"`
	Update         string         `json:"update"`
	Rows           int64          `json:"rows"`
	Users          int            `json:"users"`
	Tokens         int64          `json:"tokens"`
	DistinctTokens int            `json:"distinct_tokens"`
	Levels         []levelSummary `json:"levels"`
	Released       int            `json:"released"`
	Seconds        float64        `json:"seconds"`
	ReadSeconds    float64        `json:"read_seconds"`
	RunSeconds     float64        `json:"run_seconds"`
	PeakHeapBytes  uint64         `json:"peak_heap_bytes"`
	MaxRSSBytes    uint64         `json:"max_rss_bytes,omitempty"`
	Seeded         bool           `json:"seeded,omitempty"`
}

type levelSummary struct {
	ngrams.LevelStats
	Fraction float64 `json:"fraction"`
	Alpha    float64 `json:"alpha,omitempty"`
	// PeakHeapBytes is the largest heap (live and not yet collected objects)
	// seen while the level ran, sampled every few milliseconds.
	PeakHeapBytes uint64 `json:"peak_heap_bytes"`
}

// ngramsFlags are the flags of `dpsql ngrams`.
type ngramsFlags struct {
	in       cli.InputFlags
	maxN     *int
	eps      *float64
	delta    *float64
	maxItems *int
	levelMax *string
	mech     *string
	update   *string
	alpha    *float64
	eta      *float64
	split    *string
	output   *string
	seed     *string
	quiet    *bool
	workers  *int
}

func (f *ngramsFlags) register(fs *flag.FlagSet) {
	f.in.Register(fs, true)
	d := ngrams.Defaults()
	f.maxN = fs.Int("max-n", d.MaxN, fmt.Sprintf("T: longest n-grams to extract (1 to %d)", ngrams.MaxMaxN))
	f.eps = fs.Float64("epsilon", d.Epsilon, "privacy parameter ε > 0 of the whole extraction")
	f.delta = fs.Float64("delta", d.Delta, "privacy parameter δ in (0, 1) of the whole extraction")
	f.maxItems = fs.Int("max-items", d.MaxItems, "Δ: most n-grams kept per user and level (sampled uniformly after pruning)")
	f.levelMax = fs.String("level-max-items", "", "Δ_k per level, comma-separated (for example 100,50,50); missing or 0 entries use --max-items")
	f.mech = fs.String("mechanism", string(d.Mechanism), "DPSU mechanism of the unigram level: count_gaussian, weighted_gaussian, policy_gaussian_l2, dp_sips (3 rounds)")
	f.update = fs.String("update", "", "update rule of the levels n ≥ 2: weighted_gaussian, policy_gaussian_l2 (default weighted_gaussian, Kim et al.'s choice)")
	fs.Var(cli.OptionalFloat(&f.alpha), "alpha", "cutoff parameter `α` ≥ 0 of the policies, Γ = ρ + α·σ (default 3)")
	f.eta = fs.Float64("eta", d.Eta, "η in (0, 1): levels n ≥ 2 expect about η·|S_{n−1}| spurious n-grams")
	f.split = fs.String("budget-split", "uniform", "share of the Gaussian budget per level: uniform, or geometric:r (level n gets a share ∝ r^(n−1); r > 1 favours longer n-grams)")
	f.output = fs.String("output", "", "write released n-grams to this file instead of stdout")
	f.seed = fs.String("seed", "", "seed the random source (tests only: the run becomes reproducible and therefore NOT private)")
	f.quiet = fs.Bool("quiet", false, "no progress output")
	f.workers = fs.Int("workers", 0, "goroutines that tokenise and intern rows (default GOMAXPROCS); the output does not depend on it")
}

// options converts the flags to the extraction's options; errors are usage
// errors naming the flag.
func (f *ngramsFlags) options() (ngrams.Options, error) {
	o := ngrams.Options{MaxN: *f.maxN, Epsilon: *f.eps, Delta: *f.delta, MaxItems: *f.maxItems, Eta: *f.eta, Alpha: f.alpha}
	var err error
	if o.Mechanism, err = setunion.ParseMechanism(*f.mech); err != nil {
		return o, UsageError{fmt.Errorf("--mechanism: %w", err)}
	}
	if *f.update != "" {
		if o.Update, err = setunion.ParseMechanism(*f.update); err != nil {
			return o, UsageError{fmt.Errorf("--update: %w", err)}
		}
	}
	if o.BudgetSplit, err = ngrams.ParseBudgetSplit(*f.split); err != nil {
		return o, UsageError{err}
	}
	if *f.levelMax != "" {
		for _, v := range strings.Split(*f.levelMax, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return o, Usagef("--level-max-items: %q is not an integer (give comma-separated integers, for example 100,50,50)", v)
			}
			o.LevelMaxItems = append(o.LevelMaxItems, n)
		}
	}
	return o, nil
}

func runNgrams(args []string, stdout, stderr io.Writer) error {
	fs := NewFlagSet("ngrams", stderr)
	var fl ngramsFlags
	fl.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpsql ngrams --input FILE[.gz] --user-column N --text-column N [options]")
		fmt.Fprintln(stderr, "\nReleases, under user-level (ε, δ)-differential privacy, n-grams of 1 to --max-n tokens of the")
		fmt.Fprintln(stderr, "text column (n-grams never cross rows): lines \"n<TAB>ngram\" on stdout, ordered by n then")
		fmt.Fprintln(stderr, "n-gram, then one JSON summary line on stderr (operator-only: it holds exact input counts).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if err := fl.in.Validate(); err != nil {
		return UsageError{err}
	}
	o, err := fl.options()
	if err != nil {
		return err
	}
	ex, err := ngrams.New(o)
	if err != nil {
		return UsageError{err}
	}
	cli.WarnDelta(stderr, o.Delta)
	rng, err := cli.Rand(*fl.seed, stderr)
	if err != nil {
		return UsageError{err}
	}
	var progress io.Writer = stderr
	if *fl.quiet {
		progress = nil
	}
	sum, ngs, err := extractNgrams(&fl, ex, rng, progress)
	if err != nil {
		return err
	}
	cli.WarnDeltaUsers(stderr, o.Delta, sum.Users)
	if err := writeFileOr(stdout, *fl.output, func(w io.Writer) error { return writeNgrams(w, ngs) }); err != nil {
		return fmt.Errorf("writing released n-grams: %w", err)
	}
	return cli.WriteJSON(stderr, sum)
}

// extractNgrams reads the input into ex, runs the extraction and returns
// its summary and the released n-grams.
func extractNgrams(fl *ngramsFlags, ex *ngrams.Extractor, rng *rand.Rand, progress io.Writer) (ngramsSummary, []ngrams.NGram, error) {
	heap := startHeapSampler()
	defer heap.stop()
	start := time.Now()
	// Rows are tokenised and interned in batches on up to --workers
	// goroutines and added in input order (ngrams.Batch), so the seeded
	// output does not depend on the number of workers.
	if _, err := cli.RowsParallel(&fl.in, progress, *fl.workers, func() *ngrams.Batch { return new(ngrams.Batch) },
		func(rb *cli.RowBlock, bt *ngrams.Batch) {
			bt.Reset()
			for i := range rb.Len() {
				bt.AddRow(rb.Row(i))
			}
		}, ex.AddBatch); err != nil {
		return ngramsSummary{}, nil, err
	}
	readDone := time.Now()
	plan := ex.Plan()
	var levels []levelSummary
	heap.reset()
	ex.OnLevel = func(st ngrams.LevelStats) {
		lp := plan.Levels[st.N-1]
		levels = append(levels, levelSummary{LevelStats: st, Fraction: lp.Fraction, Alpha: lp.Alpha, PeakHeapBytes: heap.reset()})
		if progress != nil {
			fmt.Fprintf(progress, "level %d: %d released (%d spurious) in %.1fs\n", st.N, st.Released, st.Spurious, st.Seconds)
		}
	}
	res, err := ex.Run(rng)
	if err != nil {
		return ngramsSummary{}, nil, err
	}
	runDone := time.Now()
	return ngramsSummary{
		Input:          fl.in.Input,
		MaxN:           plan.MaxN,
		Epsilon:        plan.Epsilon,
		Delta:          plan.Delta,
		SigmaStar:      plan.SigmaStar,
		Eta:            plan.Eta,
		BudgetSplit:    plan.BudgetSplit,
		Mechanism:      string(plan.Mechanism),
		Update:         string(plan.Update),
		Rows:           res.Input.Rows,
		Users:          res.Input.Users,
		Tokens:         res.Input.Tokens,
		DistinctTokens: res.Input.DistinctTokens,
		Levels:         levels,
		Released:       len(res.NGrams),
		Seconds:        time.Since(start).Seconds(),
		ReadSeconds:    readDone.Sub(start).Seconds(),
		RunSeconds:     runDone.Sub(readDone).Seconds(),
		PeakHeapBytes:  heap.max(),
		MaxRSSBytes:    maxRSS(),
		Seeded:         *fl.seed != "",
	}, res.NGrams, nil
}

// writeFileOr calls write with the file at path (created or truncated), or
// with stdout when path is empty, and reports the file's Close error.
func writeFileOr(stdout io.Writer, path string, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeNgrams writes "n<TAB>ngram" lines.
func writeNgrams(w io.Writer, ngs []ngrams.NGram) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, g := range ngs {
		bw.WriteString(strconv.Itoa(g.N))
		bw.WriteByte('\t')
		bw.WriteString(g.Text)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// heapSampler records the largest Go heap (bytes of live and unswept
// objects) seen, sampling runtime/metrics every 5 ms and at every reset.
type heapSampler struct {
	mu     sync.Mutex
	peak   uint64 // since the last reset
	all    uint64 // since the start
	sample []metrics.Sample
	done   chan struct{}
	wg     sync.WaitGroup
}

func startHeapSampler() *heapSampler {
	s := &heapSampler{done: make(chan struct{}), sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
	s.read()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.read()
			}
		}
	}()
	return s
}

func (s *heapSampler) read() {
	s.mu.Lock()
	defer s.mu.Unlock()
	metrics.Read(s.sample)
	v := s.sample[0].Value.Uint64()
	s.peak = max(s.peak, v)
	s.all = max(s.all, v)
}

// reset returns the peak since the previous reset and starts a new period.
func (s *heapSampler) reset() uint64 {
	s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peak
	s.peak = 0
	return p
}

func (s *heapSampler) max() uint64 {
	s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all
}

func (s *heapSampler) stop() {
	close(s.done)
	s.wg.Wait()
}

// maxRSS returns the peak resident set size of the process (Linux VmHWM),
// or 0 where /proc is not available.
func maxRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, err := strconv.ParseUint(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
