package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// runCmd runs the dpsql command line in-process.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// lastJSON decodes the last line of stderr (the summary).
func lastJSON(t *testing.T, stderr string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last stderr line is not JSON: %v\n%s", err, stderr)
	}
	return m
}

func writeCorpus(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for u := 0; u < 300; u++ {
		fmt.Fprintf(&b, "user%d\tThe common words, and the COMMON words\n", u)
		fmt.Fprintf(&b, "user%d\tmy secret%d\n", u, u)
		if u%7 == 0 {
			fmt.Fprintf(&b, "\tno privacy unit: dropped\n")
		}
	}
	p := filepath.Join(t.TempDir(), "posts.tsv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnionText(t *testing.T) {
	in := writeCorpus(t)
	code, out, errOut := runCmd(t, "union", "--input", in, "--user-column", "1", "--text-column", "2",
		"--epsilon", "1", "--delta", "1e-6", "--seed", "42")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := strings.Fields(out); strings.Join(got, " ") != "and common my the words" {
		t.Errorf("released %q", got)
	}
	if !strings.Contains(errOut, "NOT differentially private") {
		t.Errorf("--seed printed no warning:\n%s", errOut)
	}
	s := lastJSON(t, errOut)
	for k, want := range map[string]float64{"users": 300, "distinct_items": 305, "pairs": 300 * 6, "released": 5, "epsilon": 1, "delta": 1e-6,
		"missing_mass": 300.0 / 1800, "missing_occurrences": 300.0 / 2700} {
		if s[k] != want {
			t.Errorf("summary %s = %v, want %v", k, s[k], want)
		}
	}
	// Δ0 was chosen privately: at least 6 (every user holds 6 items, so a
	// smaller bound truncates all of them and its test fails), at most the cap.
	auto, _ := s["auto_max_items"].(map[string]any)
	if auto == nil || s["max_items"] != auto["chosen"] || s["max_items"].(float64) < 6 || s["max_items"].(float64) > 1000 {
		t.Errorf("summary max_items %v, auto_max_items %v: want a privately chosen Δ0 in 6..1000", s["max_items"], auto)
	}
	if cost, _ := s["cost"].(map[string]any); cost == nil || cost["epsilon"] != 1.0 || !(cost["rho"].(float64) > 0) {
		t.Errorf("summary cost %v", s["cost"])
	}
	for _, k := range []string{"mechanism", "noise", "scale", "rho", "gamma", "seconds", "pairs_per_second"} {
		if _, ok := s[k]; !ok {
			t.Errorf("summary lacks %q: %v", k, s)
		}
	}
	if s["mechanism"] != "dp_sips" || s["noise"] != "gaussian" {
		t.Errorf("default mechanism: %v %v", s["mechanism"], s["noise"])
	}
}

func TestUnionItemsCSVToFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "visits.csv")
	var b strings.Builder
	b.WriteString("item,user\n")
	for u := 0; u < 200; u++ {
		fmt.Fprintf(&b, "\"a, popular page\",u%d\nrare%d,u%d\n", u, u, u)
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	outPath := filepath.Join(dir, "out.txt")
	code, out, errOut := runCmd(t, "union", "--input", in, "--skip-header", "--user-column", "2", "--item-column", "1",
		"--mechanism", "weighted_laplace", "--epsilon", "2", "--delta", "1e-5", "--max-items", "3", "--output", outPath, "--quiet", "--seed", "7")
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, out, errOut)
	}
	got, _ := os.ReadFile(outPath)
	if string(got) != "a, popular page\n" {
		t.Errorf("released %q", got)
	}
	if s := lastJSON(t, errOut); s["mechanism"] != "weighted_laplace" || s["noise"] != "laplace" {
		t.Errorf("summary %v", s)
	}
}

func TestUnionErrors(t *testing.T) {
	in := writeCorpus(t)
	bad := filepath.Join(t.TempDir(), "bad.tsv")
	os.WriteFile(bad, []byte("u1\tok\nonly-one-column\n"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"union", "--user-column", "1", "--text-column", "2"}, 2, "--input FILE is required"},
		{[]string{"union", "--input", in, "--text-column", "2"}, 2, "--user-column N is required"},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--item-column", "2"}, 2, "exactly one of --item-column N and --text-column N"},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--mechanism", "magic"}, 2, `unknown mechanism "magic"`},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--epsilon", "0"}, 2, "epsilon must be a finite number greater than 0"},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--delta", "1"}, 2, "delta must be greater than 0 and less than 1"},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--max-items", "-1"}, 2, "max_items must be an integer from 1"},
		{[]string{"union", "--input", in, "--user-column", "1", "--item-column", "2", "--mechanism", "greedy_frequency_unproven"}, 2, "is unproven"},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--alpha", "-1"}, 2, "alpha must be a finite number ≥ 0"},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--mechanism", "greedy_public"}, 2, "greedy_public needs --public FILE"},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--mechanism", "policy_gaussian_l1"}, 2, "policy_gaussian_l1 is disabled"},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--seed", "x"}, 2, "--seed must be a non-negative integer"},
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"union", "--input", bad, "--user-column", "1", "--text-column", "2"}, 1, "line 2 has 1 column(s) but column 2 is needed"},
		{[]string{"union", "--input", bad + ".missing", "--user-column", "1", "--text-column", "2"}, 1, "no such file"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
	}
	for _, c := range cases {
		code, _, errOut := runCmd(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

func TestUnionGreedyPublic(t *testing.T) {
	in := writeCorpus(t)
	pub := filepath.Join(t.TempDir(), "public.tsv")
	os.WriteFile(pub, []byte("the\t1000\nwords\t10\ncommon\n"), 0o644)
	code, out, errOut := runCmd(t, "union", "--input", in, "--user-column", "1", "--text-column", "2",
		"--mechanism", "greedy_public", "--public", pub, "--epsilon", "1", "--delta", "1e-6", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "secret") {
		t.Errorf("released a secret: %s", out)
	}
}

func TestParams(t *testing.T) {
	code, out, errOut := runCmd(t, "params", "--mechanism", "policy_gaussian_l2", "--epsilon", "3", "--delta", "4.5399929762484854e-05", "--max-items", "10", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if m["noise"] != "gaussian" || fmt.Sprintf("%.4f", m["scale"]) != "1.3328" || fmt.Sprintf("%.4f", m["rho"]) != "6.4353" || m["alpha"] != 3.0 {
		t.Errorf("params %v", m)
	}
	// By default, a table for people with the users a key needs.
	code, out, errOut = runCmd(t, "params", "--mechanism", "policy_gaussian_l2", "--epsilon", "3", "--delta", "4.5399929762484854e-05", "--max-items", "10")
	if code != 0 || !strings.HasPrefix(out, "parameter") || !strings.Contains(out, "threshold") || !strings.Contains(out, "6.43") || !strings.Contains(out, "users_for_95pct") {
		t.Errorf("table: exit %d %s %s", code, out, errOut)
	}
	// Aggregates: their noise and 95% interval; SUM needs bounds.
	code, out, errOut = runCmd(t, "params", "--aggregates", "count,sum", "--bounds", "0,10", "--json")
	var plan map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || len(plan["aggregates"].([]any)) != 2 {
		t.Errorf("aggregates: exit %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "params", "--aggregates", "sum"); code != 2 || !strings.Contains(errOut, "--bounds") {
		t.Errorf("sum without bounds: exit %d %s", code, errOut)
	}
	if code, _, _ := runCmd(t, "params", "--mechanism", "greedy_public"); code != 0 {
		t.Error("params for greedy_public needs no public table")
	}
	if code, _, errOut := runCmd(t, "params", "--delta", "2"); code != 2 || !strings.Contains(errOut, "delta") {
		t.Errorf("bad delta: exit %d %s", code, errOut)
	}
}

// TestUnionCorpus runs the command on a real corpus and checks the exact
// input statistics of the summary.
func TestUnionCorpus(t *testing.T) {
	in := testenv.DataFile(t, "git_rails.tsv.gz")
	code, out, errOut := runCmd(t, "union", "--input", in, "--user-column", "1", "--text-column", "2",
		"--epsilon", "3", "--delta", "4.5399929762484854e-05", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	s := lastJSON(t, errOut)
	for k, want := range map[string]float64{"users": 6815, "distinct_items": 43988, "rows": 73048, "occurrences": 1768796} {
		if s[k] != want {
			t.Errorf("%s = %v, want %v", k, s[k], want)
		}
	}
	if n := len(strings.Fields(out)); n < 900 || float64(n) != s["released"] {
		t.Errorf("released %d items, summary says %v", n, s["released"])
	}
}

// TestUnionUnprovenWarns: an unproven mechanism runs only with
// --allow-unproven, and then with a warning on stderr.
func TestUnionUnprovenWarns(t *testing.T) {
	in := writeCorpus(t)
	code, _, errOut := runCmd(t, "union", "--input", in, "--user-column", "1", "--text-column", "2",
		"--mechanism", "greedy_frequency_unproven", "--allow-unproven")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "WARNING: --allow-unproven: this release has NO differential privacy guarantee") ||
		!strings.Contains(errOut, "Lemma 2") {
		t.Errorf("no warning for an unproven mechanism:\n%s", errOut)
	}
	code, _, errOut = runCmd(t, "union", "--input", in, "--user-column", "1", "--text-column", "2", "--mechanism", "greedy_frequency")
	if code != 0 || strings.Contains(errOut, "WARNING") {
		t.Errorf("the proven greedy_frequency: exit %d, stderr %s", code, errOut)
	}
}

// TestUnionWorkersDeterministic: with --seed, the released items and the
// summary (timings aside) are the same for any --workers and GOMAXPROCS, and
// the same as adding every pair to one builder in input order.
func TestUnionWorkersDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var b strings.Builder
	u := 0
	for range 40000 { // about 2.5 MB: ten blocks
		if r.IntN(5) == 0 {
			u = r.IntN(3000)
		}
		fmt.Fprintf(&b, "user%d\t", u)
		for range 1 + r.IntN(15) {
			fmt.Fprintf(&b, "Word%d ", int(r.ExpFloat64()*300))
		}
		b.WriteString("\n")
	}
	in := filepath.Join(t.TempDir(), "words.tsv")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	strip := func(summary map[string]any) string {
		for _, k := range []string{"seconds", "read_seconds", "group_seconds", "release_seconds", "pairs_per_second"} {
			delete(summary, k)
		}
		j, _ := json.Marshal(summary)
		return string(j)
	}
	for _, mech := range []string{"dp_sips", "policy_gaussian_l2"} {
		var wantOut, wantSum string
		for _, procs := range []int{1, 2} {
			for _, workers := range []string{"1", "2", "5"} {
				prev := runtime.GOMAXPROCS(procs)
				code, out, errOut := runCmd(t, "union", "--input", in, "--user-column", "1", "--text-column", "2",
					"--epsilon", "3", "--delta", "1e-6", "--mechanism", mech, "--seed", "11", "--quiet", "--workers", workers)
				runtime.GOMAXPROCS(prev)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				sum := strip(lastJSON(t, errOut))
				if wantOut == "" {
					wantOut, wantSum = out, sum
					if len(strings.Fields(out)) < 10 {
						t.Fatalf("%s: only %d items released", mech, len(strings.Fields(out)))
					}
					continue
				}
				if out != wantOut || sum != wantSum {
					t.Fatalf("%s, GOMAXPROCS %d, --workers %s: output differs\n%s\n%s", mech, procs, workers, sum, wantSum)
				}
			}
		}
		// One builder, pairs in input order.
		var mf cli.MechanismFlags
		fs := flag.NewFlagSet("union", flag.ContinueOnError)
		mf.Register(fs, true)
		if err := fs.Parse([]string{"--epsilon", "3", "--delta", "1e-6", "--mechanism", mech}); err != nil {
			t.Fatal(err)
		}
		opts, err := mf.Options()
		if err != nil {
			t.Fatal(err)
		}
		bu, err := setunion.NewBuilder(opts)
		if err != nil {
			t.Fatal(err)
		}
		var sc tokenize.Scanner
		fin := cli.InputFlags{Input: in, UserColumn: 1, TextColumn: 2}
		if _, err := fin.Rows(nil, func(user, text []byte) {
			if id, ok := bu.UserID(user); ok {
				sc.Each(text, func(tok []byte) { bu.AddID(id, tok) })
			}
		}); err != nil {
			t.Fatal(err)
		}
		res := bu.Release(securerand.NewSeeded(11))
		if got := strings.Join(res.Items, "\n") + "\n"; got != wantOut {
			t.Fatalf("%s: one builder released %d items, the command %d", mech, len(res.Items), len(strings.Fields(wantOut)))
		}
	}
}
