package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
