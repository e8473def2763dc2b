package beamdp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/dpsql/dpsql/beam/beamdp"
	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tabfile"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

func TestMain(m *testing.M) {
	beamlog.LogLevel = "warn" // prism's per-job information is noise in test output
	beam.Init()
	os.Exit(m.Run())
}

// matchOptions are the options of the comparisons with the core: ε = 4,
// δ = 1e-5, Δ0 = 10 release several hundred items of git_rails with every
// mechanism, so that a release count is stable to about 2% between seeds.
func matchOptions(m setunion.Mechanism) setunion.Options {
	o := setunion.Defaults()
	o.Mechanism, o.Epsilon, o.Delta, o.MaxItems = m, 4, 1e-5, 10
	return o
}

// branch is one release of a multi-release test pipeline.
type branch struct {
	name   string
	cfg    beamdp.Config
	public string // greedy_public: the public table's file
}

// result is what a branch released.
type result struct {
	items []string
	stats beamdp.Stats
}

// runBranches reads input once and runs every branch on it in one prism
// pipeline; it returns each branch's released items and statistics, read
// back from the files WriteSorted and WriteStats wrote.
func runBranches(t *testing.T, input beamdp.Input, branches []branch) map[string]result {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	p, s := beam.NewPipelineWithRoot()
	rows, rowStats, err := beamdp.ReadRows(ctx, s, input)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range branches {
		bs := s.Scope(b.name)
		cfg := b.cfg
		if b.public != "" {
			if cfg.Public, err = beamdp.ReadPublic(ctx, bs, b.public); err != nil {
				t.Fatal(err)
			}
		}
		rel, err := beamdp.Union(bs, rows, cfg)
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		beamdp.WriteSorted(bs, filepath.Join(dir, b.name), rel.Items)
		beamdp.WriteStats(bs, beamdp.StatsName(filepath.Join(dir, b.name)), rowStats, rel.Stats)
	}
	start := time.Now()
	if err := executePrism(t, ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Logf("prism ran %d releases in %.1fs", len(branches), time.Since(start).Seconds())
	out := make(map[string]result)
	for _, b := range branches {
		data, err := os.ReadFile(beamdp.ShardName(filepath.Join(dir, b.name)))
		if err != nil {
			t.Fatal(err)
		}
		items := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(data) == 0 {
			items = nil
		}
		if !slices.IsSorted(items) {
			t.Errorf("%s: output is not sorted", b.name)
		}
		st, err := beamdp.ReadStats(ctx, beamdp.StatsName(filepath.Join(dir, b.name)))
		if err != nil {
			t.Fatal(err)
		}
		if st.Released != int64(len(items)) {
			t.Errorf("%s: statistics say %d released, file has %d", b.name, st.Released, len(items))
		}
		out[b.name] = result{items: items, stats: st}
	}
	return out
}

// corpusRows reads a corpus into (user, tokens) rows with the core's reader
// and tokeniser, once per test binary.
var corpusCache = map[string][][2][]string{}

func corpusRows(t *testing.T, path string) [][2][]string {
	t.Helper()
	if rows, ok := corpusCache[path]; ok {
		return rows
	}
	r, err := tabfile.Open(path, tabfile.TSV)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows [][2][]string
	var sc tokenize.Scanner
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var toks []string
		sc.Each(f[1], func(tok []byte) { toks = append(toks, string(tok)) })
		rows = append(rows, [2][]string{{string(f[0])}, toks})
	}
	corpusCache[path] = rows
	return rows
}

// coreRelease runs the single-machine mechanism (setunion.Builder) on rows.
func coreRelease(t *testing.T, rows [][2][]string, o setunion.Options, seed uint64) setunion.Result {
	t.Helper()
	b, err := setunion.NewBuilder(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		u, ok := b.UserID([]byte(r[0][0]))
		if !ok {
			continue
		}
		for _, tok := range r[1] {
			b.AddID(u, []byte(tok))
		}
	}
	return b.Release(securerand.NewSeeded(seed))
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// TestParallelMatchesCore runs every parallel mechanism on git_rails (text
// column 2, user column 1) on prism and checks that its mean release count
// over two seeds is within ±5% of the single-machine mechanism's mean over
// three seeds, with the same options, and that the pipeline's statistics
// describe the input exactly as the core's Stats do.
func TestParallelMatchesCore(t *testing.T) {
	path := testenv.DataFile(t, "git_rails.tsv.gz")
	mechs := []setunion.Mechanism{setunion.CountLaplace, setunion.CountGaussian, setunion.WeightedLaplace,
		setunion.WeightedGaussian, setunion.SingleItem, setunion.DPSIPS}
	const beamSeeds, coreSeeds = 2, 3
	var branches []branch
	for _, m := range mechs {
		for seed := range uint64(beamSeeds) {
			branches = append(branches, branch{name: fmt.Sprintf("%s-%d", m, seed), cfg: beamdp.Config{Options: matchOptions(m), Seed: &seed, CountDistinctItems: true}})
		}
	}
	res := runBranches(t, beamdp.Input{Glob: path, UserColumn: 1, TextColumn: 2}, branches)
	rows := corpusRows(t, path)
	t.Logf("%-18s %12s %12s %8s", "mechanism", "beam mean", "core mean", "diff")
	for _, m := range mechs {
		var bc, cc []float64
		for seed := range uint64(beamSeeds) {
			bc = append(bc, float64(len(res[fmt.Sprintf("%s-%d", m, seed)].items)))
		}
		var core setunion.Result
		for seed := range uint64(coreSeeds) {
			core = coreRelease(t, rows, matchOptions(m), 100+seed)
			cc = append(cc, float64(len(core.Items)))
		}
		diff := mean(bc)/mean(cc) - 1
		t.Logf("%-18s %12.1f %12.1f %+7.2f%%", m, mean(bc), mean(cc), 100*diff)
		if math.Abs(diff) > 0.05 {
			t.Errorf("%s: beam releases %.1f items on average, the core %.1f: %+.1f%% (allowed ±5%%)", m, mean(bc), mean(cc), 100*diff)
		}
		checkStats(t, string(m), res[fmt.Sprintf("%s-0", m)].stats, core.Stats, int64(len(rows)))
	}
}

func checkStats(t *testing.T, name string, got beamdp.Stats, want setunion.Stats, rows int64) {
	t.Helper()
	if got.Occurrences != want.Occurrences || got.Users != int64(want.Users) || got.Pairs != want.Pairs || got.DistinctItems != int64(want.DistinctItems) {
		t.Errorf("%s: pipeline statistics %+v, core stats %+v", name, got, want)
	}
	if got.Rows != rows {
		t.Errorf("%s: %d rows counted, %d in the file", name, got.Rows, rows)
	}
}

// TestShardedMatchesCore runs the sequential mechanisms on git_rails on
// prism. With S = 1 each mean release count is within ±5% of the
// single-machine mechanism's (policy_gaussian_l2, the core's default policy,
// over three seeds; policy_laplace, greedy_frequency and greedy_public over
// two). With S = 4 and S = 16, policy_gaussian_l2's change against S = 1 is
// logged (utility, not correctness: it is only asserted not to lose half).
func TestShardedMatchesCore(t *testing.T) {
	path := testenv.DataFile(t, "git_rails.tsv.gz")
	public := filepath.Join(t.TempDir(), "public.tsv")
	// A public table not derived from the data: common English words.
	if err := os.WriteFile(public, []byte("the\t1000\nfix\t500\nadd\t400\nto\t300\nin\t200\nof\t100\nfor\t90\nand\t80\na\t70\nis\t10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type run struct {
		m      setunion.Mechanism
		shards int
		seeds  int
	}
	runs := []run{
		{setunion.PolicyGaussianL2, 1, 3}, {setunion.PolicyGaussianL2, 4, 2}, {setunion.PolicyGaussianL2, 16, 2},
		{setunion.PolicyLaplace, 1, 2}, {setunion.GreedyFrequency, 1, 2}, {setunion.GreedyPublic, 1, 2},
	}
	name := func(r run, seed uint64) string { return fmt.Sprintf("%s-S%d-%d", r.m, r.shards, seed) }
	var branches []branch
	for _, r := range runs {
		for seed := range uint64(r.seeds) {
			b := branch{name: name(r, seed), cfg: beamdp.Config{Options: matchOptions(r.m), Shards: r.shards, Seed: &seed}}
			if r.m == setunion.GreedyPublic {
				b.public = public
			}
			branches = append(branches, b)
		}
	}
	res := runBranches(t, beamdp.Input{Glob: path, UserColumn: 1, TextColumn: 2}, branches)
	rows := corpusRows(t, path)
	publicTable := map[string]float64{}
	for _, l := range strings.Split(strings.TrimSpace(string(must(os.ReadFile(public)))), "\n") {
		var w string
		var c float64
		fmt.Sscanf(l, "%s\t%g", &w, &c)
		publicTable[w] = c
	}
	means := map[string]float64{}
	t.Logf("%-28s %12s %12s %8s", "mechanism", "beam mean", "core mean", "diff")
	for _, r := range runs {
		var bc []float64
		for seed := range uint64(r.seeds) {
			bc = append(bc, float64(len(res[name(r, seed)].items)))
		}
		key := fmt.Sprintf("%s S=%d", r.m, r.shards)
		means[key] = mean(bc)
		if r.shards != 1 {
			continue
		}
		var cc []float64
		var core setunion.Result
		for seed := range uint64(3) {
			o := matchOptions(r.m)
			if r.m == setunion.GreedyPublic {
				o.Public = publicTable
			}
			core = coreRelease(t, rows, o, 100+seed)
			cc = append(cc, float64(len(core.Items)))
		}
		diff := mean(bc)/mean(cc) - 1
		t.Logf("%-28s %12.1f %12.1f %+7.2f%%", key, mean(bc), mean(cc), 100*diff)
		if math.Abs(diff) > 0.05 {
			t.Errorf("%s: beam releases %.1f items on average, the core %.1f: %+.1f%% (allowed ±5%%)", key, mean(bc), mean(cc), 100*diff)
		}
		checkStats(t, key, res[name(r, 0)].stats, core.Stats, int64(len(rows)))
	}
	base := means["policy_gaussian_l2 S=1"]
	for _, s := range []int{4, 16} {
		m := means[fmt.Sprintf("policy_gaussian_l2 S=%d", s)]
		change := m/base - 1
		t.Logf("policy_gaussian_l2 S=%-2d releases %.1f items: %+.1f%% against S=1 (%.1f)", s, m, 100*change, base)
		if change < -0.5 {
			t.Errorf("S=%d loses %.0f%% of the release against S=1", s, -100*change)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
