package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"

	"github.com/dpsql/dpsql/beam/beamdp"
	"github.com/dpsql/dpsql/beam/internal/skewed"
	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tabfile"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// union runs `dpsql-beam union args` in process with a fresh flag set.
func union(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stderr bytes.Buffer
	fs := flag.NewFlagSet("dpsql-beam union", flag.ContinueOnError)
	err := runUnion(context.Background(), fs, args, &stderr)
	return stderr.String(), err
}

// coreStats reads a corpus as `dpsql union --user-column 1 --text-column 2`
// does and returns the core's statistics of it.
func coreStats(t *testing.T, path string) (setunion.Stats, int64) {
	t.Helper()
	b, err := setunion.NewBuilder(setunion.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	r, err := tabfile.Open(path, tabfile.TSV)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var sc tokenize.Scanner
	var rows int64
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rows++
		if u, ok := b.UserID(f[0]); ok {
			sc.Each(f[1], func(tok []byte) { b.AddID(u, tok) })
		}
	}
	return b.Group(), rows
}

// summaryLine is the JSON summary that ends the command's stderr.
type summaryLine struct {
	Mechanism     string  `json:"mechanism"`
	Epsilon       float64 `json:"epsilon"`
	Delta         float64 `json:"delta"`
	Rho           float64 `json:"rho"`
	Output        string  `json:"output"`
	Runner        string  `json:"runner"`
	Shards        int     `json:"shards"`
	Rows          int64   `json:"rows"`
	Occurrences   int64   `json:"occurrences"`
	Users         int64   `json:"users"`
	Pairs         int64   `json:"pairs"`
	DistinctItems int64   `json:"distinct_items"`
	Released      int64   `json:"released"`
	Seeded        bool    `json:"seeded"`
}

// parseSummary parses the last line of stderr as the JSON summary.
func parseSummary(t *testing.T, stderr string) summaryLine {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var sum summaryLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last stderr line is not the JSON summary: %v\n%s", err, stderr)
	}
	return sum
}

// TestUnionCommand runs the command on git_rails with prism and checks the
// output file (sorted, one item per line), the spent budget line and the
// JSON summary, whose input statistics must equal the core's.
func TestUnionCommand(t *testing.T) {
	path := testenv.DataFile(t, "git_rails.tsv.gz")
	prefix := filepath.Join(t.TempDir(), "released")
	stderr, err := union(t, "--input", path, "--user-column", "1", "--text-column", "2", "--output", prefix,
		"--mechanism", "policy_laplace", "--shards", "4", "--seed", "5")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if !strings.Contains(stderr, "NOT differentially private") {
		t.Errorf("no warning about --seed in %q", stderr)
	}
	if !strings.Contains(lines[len(lines)-2], "spent ε = 1, δ = 1e-06") {
		t.Errorf("no spent-budget line before the summary: %q", lines[len(lines)-2])
	}
	sum := parseSummary(t, stderr)
	o := setunion.Defaults()
	o.Mechanism = setunion.PolicyLaplace
	cal, _ := setunion.Calibrate(o)
	st, rows := coreStats(t, path)
	if sum.Mechanism != "policy_laplace" || sum.Epsilon != 1 || sum.Delta != 1e-6 || sum.Rho != cal.Rho || sum.Runner != "prism" || sum.Shards != 4 || !sum.Seeded {
		t.Errorf("summary %+v", sum)
	}
	if sum.Rows != rows || sum.Occurrences != st.Occurrences || sum.Users != int64(st.Users) || sum.Pairs != st.Pairs || sum.DistinctItems != int64(st.DistinctItems) {
		t.Errorf("summary %+v, core stats %+v and %d rows", sum, st, rows)
	}
	data, err := os.ReadFile(sum.Output)
	if err != nil {
		t.Fatal(err)
	}
	items := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if int64(len(items)) != sum.Released || sum.Released == 0 || !slices.IsSorted(items) {
		t.Errorf("output has %d lines (sorted: %v), summary says %d released", len(items), slices.IsSorted(items), sum.Released)
	}
}

// TestUnionCommandErrors checks that bad command lines are usage errors
// that say what is wrong, before any pipeline runs.
func TestUnionCommandErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.tsv")
	if err := os.WriteFile(in, []byte("u\ta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--user-column", "1", "--item-column", "2", "--output", out}, "--input"},
		{[]string{"--input", in, "--user-column", "1", "--item-column", "2"}, "--output"},
		{[]string{"--input", in, "--user-column", "1", "--output", out}, "exactly one of"},
		{[]string{"--input", in, "--user-column", "1", "--item-column", "2", "--output", out, "--mechanism", "count_laplace", "--shards", "2"}, "sequential mechanisms only"},
		{[]string{"--input", in, "--user-column", "1", "--item-column", "2", "--output", out, "--mechanism", "greedy_public"}, "--public"},
		{[]string{"--input", in, "--user-column", "1", "--item-column", "2", "--output", out, "--mechanism", "policy_gaussian_l1"}, "disabled"},
		{[]string{"--input", in, "--user-column", "1", "--item-column", "2", "--output", out, "--epsilon", "-1"}, "epsilon"},
		{[]string{"--input", in, "--user-column", "1", "--item-column", "2", "--output", out, "--seed", "x"}, "--seed"},
		{[]string{"--input", in, "--user-column", "1", "--item-column", "2", "--output", out, "stray"}, "unexpected argument"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
	}
	for _, c := range cases {
		_, err := union(t, c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want a usage error mentioning %q", c.args, err, c.want)
		}
	}
	// A glob without files fails before the pipeline runs.
	if _, err := union(t, "--input", filepath.Join(dir, "none*.tsv"), "--user-column", "1", "--item-column", "2", "--output", out); err == nil || !strings.Contains(err.Error(), "no file matches") {
		t.Errorf("missing input: %v", err)
	}
}

// TestRunDispatch checks the commands and exit codes of the binary.
func TestRunDispatch(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "usage: dpsql-beam union") {
		t.Errorf("help: code %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"bogus"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unknown command "bogus"`) {
		t.Errorf("bogus: code %d, %q", code, stderr.String())
	}
}

// TestSummaryIsExact runs the command on a generated input of several files,
// with a parallel and a sharded mechanism, and checks that the summary's
// counts are exactly those of the input and of the output file, and that
// --quiet leaves only the budget line and the summary on stderr.
func TestSummaryIsExact(t *testing.T) {
	dir := t.TempDir()
	glob, want, rows, err := skewed.Write(dir, 3, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ mechanism, shards string }{{"count_gaussian", "1"}, {"policy_gaussian_l2", "4"}} {
		prefix := filepath.Join(dir, c.mechanism)
		stderr, err := union(t, "--input", glob, "--user-column", "1", "--item-column", "2", "--output", prefix,
			"--mechanism", c.mechanism, "--shards", c.shards, "--quiet")
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.mechanism, err, stderr)
		}
		if n := strings.Count(stderr, "\n"); n != 2 {
			t.Errorf("%s --quiet: %d lines on stderr, want the budget line and the summary:\n%s", c.mechanism, n, stderr)
		}
		sum := parseSummary(t, stderr)
		data, err := os.ReadFile(sum.Output)
		if err != nil {
			t.Fatal(err)
		}
		got := [6]int64{sum.Rows, sum.Occurrences, sum.Users, sum.Pairs, sum.DistinctItems, sum.Released}
		exp := [6]int64{rows, want.Occurrences, int64(want.Users), want.Pairs, int64(want.DistinctItems), int64(strings.Count(string(data), "\n"))}
		if got != exp {
			t.Errorf("%s: summary (rows, occurrences, users, pairs, distinct items, released) = %v, input and output file %v", c.mechanism, got, exp)
		}
	}
}

// TestStatus checks the progress line of the command.
func TestStatus(t *testing.T) {
	base := beamdp.Progress{Rows: 10, Bytes: 100}
	if got := status(base, base, 1<<20); !strings.Contains(got, "no progress from workers in this process") {
		t.Errorf("no progress: %q", got)
	}
	now := beamdp.Progress{Rows: 510, Bytes: 100 + 1<<19, Users: 7, Items: 3}
	if got, want := status(now, base, 1<<20), "500 rows read (50% of 1.0 MiB), 7 users grouped, 3 release decisions"; got != want {
		t.Errorf("status %q, want %q", got, want)
	}
	if got, want := status(now, base, 0), "500 rows read, 7 users grouped, 3 release decisions"; got != want {
		t.Errorf("unknown size: status %q, want %q", got, want)
	}
}

// TestPipelineReadsNoSideInput checks that no transform of the command's
// pipeline (buildUnion), for every proven mechanism, reads a side input:
// prism v2.77.0 may start a side input's reader before the side input is
// complete (docs/privacy.md §39), so a round, a shard or an output writer
// reading one could see part of its data. Each writer must gather its data
// with a join instead (two CoGroupByKeys a release: items and statistics).
func TestPipelineReadsNoSideInput(t *testing.T) {
	dir := t.TempDir()
	input, public := filepath.Join(dir, "in.tsv"), filepath.Join(dir, "public.tsv")
	for _, f := range []string{input, public} {
		if err := os.WriteFile(f, []byte("u1\ta\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, s := beam.NewPipelineWithRoot()
	releases := 0
	for _, m := range setunion.Mechanisms() {
		if !m.Proven() {
			continue
		}
		shards := []int{1}
		if m.Sequential() {
			shards = append(shards, 3)
		}
		for _, n := range shards {
			name := fmt.Sprintf("%s-S%d", m, n)
			o := setunion.Defaults()
			o.Mechanism = m
			pub := ""
			if m == setunion.GreedyPublic {
				pub = public
			}
			in := cli.InputFlags{Input: input, UserColumn: 1, ItemColumn: 2}
			if _, err := buildUnion(context.Background(), s.Scope(name), in, pub, beamdp.Config{Options: o, Shards: n}, filepath.Join(dir, name)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			releases++
		}
	}
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	writerJoins := 0
	for _, e := range edges {
		for _, in := range e.Input {
			if in.Kind != graph.Main {
				t.Errorf("%s (%s) reads a side input (%s)", e.Name(), e.Scope(), in.Kind)
			}
		}
		scope := e.Scope().String()
		if e.Op == graph.CoGBK && (strings.Contains(scope, "beamdp.WriteSorted") || strings.Contains(scope, "beamdp.WriteStats")) {
			writerJoins++
		}
	}
	if writerJoins != 2*releases {
		t.Errorf("%d joins in the writers of %d releases, want %d", writerJoins, releases, 2*releases)
	}
}
