package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeTSV writes rows to a temporary TSV file and returns its path.
func writeTSV(t *testing.T, rows []string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.tsv")
	if err := os.WriteFile(p, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNgramsCommand(t *testing.T) {
	var rows []string
	for u := range 80 {
		rows = append(rows, fmt.Sprintf("u%d\tThe quick brown fox", u), fmt.Sprintf("u%d\tjumps over", u))
	}
	in := writeTSV(t, rows)
	out := filepath.Join(t.TempDir(), "out.txt")
	var stdout, stderr bytes.Buffer
	code := run([]string{"ngrams", "--input", in, "--user-column", "1", "--text-column", "2",
		"--epsilon", "8", "--eta", "1e-9", "--seed", "3", "--quiet", "--output", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := "1\tbrown\n1\tfox\n1\tjumps\n1\tover\n1\tquick\n1\tthe\n" +
		"2\tbrown fox\n2\tjumps over\n2\tquick brown\n2\tthe quick\n" +
		"3\tquick brown fox\n3\tthe quick brown\n"
	if string(got) != want {
		t.Fatalf("output\n%s\nwant\n%s", got, want)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if !strings.Contains(lines[0], "NOT differentially private") {
		t.Errorf("no --seed warning: %q", lines[0])
	}
	var sum struct {
		MaxN      int     `json:"max_n"`
		SigmaStar float64 `json:"sigma_star"`
		Users     int     `json:"users"`
		Released  int     `json:"released"`
		Seeded    bool    `json:"seeded"`
		Levels    []struct {
			N        int      `json:"n"`
			Sigma    float64  `json:"sigma"`
			Rho      float64  `json:"rho"`
			Valid    *float64 `json:"valid"`
			Observed int      `json:"observed"`
			Released int      `json:"released"`
			Spurious int      `json:"spurious"`
			Seconds  *float64 `json:"seconds"`
		} `json:"levels"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("summary %q: %v", lines[len(lines)-1], err)
	}
	if sum.MaxN != 3 || sum.Users != 80 || sum.Released != 12 || !sum.Seeded || len(sum.Levels) != 3 || !(sum.SigmaStar > 0) {
		t.Fatalf("summary %+v", sum)
	}
	for _, l := range sum.Levels {
		if !(l.Sigma > 0) || !(l.Rho > 0) || l.Seconds == nil || (l.N == 1) != (l.Valid == nil) {
			t.Fatalf("level summary %+v", l)
		}
	}
	if *sum.Levels[1].Valid != 36 || sum.Levels[1].Observed != 4 || sum.Levels[1].Released != 4 {
		t.Fatalf("level 2 summary %+v", sum.Levels[1])
	}

	// Without --output the n-grams go to stdout.
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"ngrams", "--input", in, "--user-column", "1", "--text-column", "2",
		"--epsilon", "8", "--eta", "1e-9", "--seed", "3", "--quiet"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.String() != want {
		t.Fatalf("stdout\n%s\nwant\n%s", stdout.String(), want)
	}
}

func TestNgramsCommandErrors(t *testing.T) {
	in := writeTSV(t, []string{"u\thello world"})
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--user-column", "1", "--text-column", "2"}, 2, "--input FILE is required"},
		{[]string{"--input", in, "--text-column", "2"}, 2, "--user-column N is required"},
		{[]string{"--input", in, "--user-column", "1"}, 2, "--text-column N is required"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "--max-n", "11"}, 2, "max_n must be an integer from 1 to 10, got 11"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "--max-n", "0"}, 2, "max_n must be an integer from 1 to 10, got 0"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "--mechanism", "policy_laplace"}, 2, "mechanism policy_laplace cannot be used for n-grams"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "--mechanism", "bogus"}, 2, "unknown mechanism"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "--update", "count_gaussian"}, 2, "update count_gaussian cannot be used"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "--eta", "1.5"}, 2, "eta must be greater than 0 and less than 1"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "--budget-split", "geometric:x"}, 2, "geometric:"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "--level-max-items", "10,x"}, 2, "--level-max-items"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "--seed", "-1"}, 2, "--seed must be a non-negative integer"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "3"}, 1, "column 3 is needed"},
		{[]string{"--input", in + ".missing", "--user-column", "1", "--text-column", "2"}, 1, "no such file"},
		{[]string{"--input", in, "--user-column", "1", "--text-column", "2", "extra"}, 2, "unexpected argument"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"ngrams", "--quiet"}, tc.args...), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: wrote %q to stdout", tc.args, stdout.String())
		}
	}
}

// TestNgramsWorkersDeterministic: with --seed, the released n-grams and the
// summary's counts are the same for any --workers and GOMAXPROCS, over an
// input of several read blocks.
func TestNgramsWorkersDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var rows []string
	u := 0
	for range 30000 { // about 2 MB: several blocks
		if r.IntN(4) == 0 {
			u = r.IntN(2000)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "user%d\t", u)
		for range 1 + r.IntN(12) {
			fmt.Fprintf(&b, "w%d ", int(r.ExpFloat64()*40))
		}
		rows = append(rows, b.String())
	}
	in := writeTSV(t, rows)
	// The summary without its timings and heap samples.
	counts := func(stderr string) string {
		m := lastJSON(t, stderr)
		for _, k := range []string{"seconds", "read_seconds", "run_seconds", "peak_heap_bytes", "max_rss_bytes"} {
			delete(m, k)
		}
		for _, l := range m["levels"].([]any) {
			delete(l.(map[string]any), "seconds")
			delete(l.(map[string]any), "peak_heap_bytes")
		}
		j, _ := json.Marshal(m)
		return string(j)
	}
	var wantOut, wantSum string
	for _, procs := range []int{1, 2} {
		for _, workers := range []string{"1", "2", "5"} {
			prev := runtime.GOMAXPROCS(procs)
			code, out, errOut := runCmd(t, "ngrams", "--input", in, "--user-column", "1", "--text-column", "2",
				"--epsilon", "4", "--seed", "7", "--quiet", "--workers", workers)
			runtime.GOMAXPROCS(prev)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			sum := counts(errOut)
			if wantOut == "" {
				wantOut, wantSum = out, sum
				if n := strings.Count(out, "\n2\t"); n < 5 {
					t.Fatalf("only %d bigrams released:\n%s", n, out)
				}
				continue
			}
			if out != wantOut || sum != wantSum {
				t.Fatalf("GOMAXPROCS %d, --workers %s: output differs\n%s\n%s", procs, workers, sum, wantSum)
			}
		}
	}
}
