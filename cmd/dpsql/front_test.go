package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSearches writes a CSV of (user, query) rows, with a header row when
// header is set: 200 users share "weather", each has a private query.
func writeSearches(t *testing.T, header bool) string {
	t.Helper()
	var b strings.Builder
	if header {
		b.WriteString("user_id,query\n")
	}
	for u := 0; u < 200; u++ {
		fmt.Fprintf(&b, "u%03d,weather\nu%03d,divorce lawyer for u%03d\n", u, u, u)
	}
	p := filepath.Join(t.TempDir(), "searches.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUnionHeader: a header row is detected and skipped (with a notice)
// unless --skip-header=false; --skip-header skips the first row whatever it
// is; a first row of data is read as data.
func TestUnionHeader(t *testing.T) {
	withHeader, without := writeSearches(t, true), writeSearches(t, false)
	for _, c := range []struct {
		name   string
		input  string
		flags  []string
		users  float64
		rows   float64
		notice bool
	}{
		{"detected", withHeader, nil, 200, 400, true},
		{"kept as data", withHeader, []string{"--skip-header=false"}, 201, 401, false},
		{"forced", withHeader, []string{"--skip-header"}, 200, 400, false},
		{"no header", without, nil, 200, 400, false},
		{"forced on data", without, []string{"--skip-header=true"}, 200, 399, false},
	} {
		args := append([]string{"union", "--input", c.input, "--user-column", "1", "--item-column", "2", "--quiet", "--seed", "1"}, c.flags...)
		code, _, errOut := runCmd(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errOut)
		}
		s := lastJSON(t, errOut)
		if s["users"] != c.users || s["rows"] != c.rows {
			t.Errorf("%s: users %v rows %v, want %v and %v", c.name, s["users"], s["rows"], c.users, c.rows)
		}
		notice := strings.Contains(errOut, `looks like a header and is skipped`) && strings.Contains(errOut, `("user_id", "query")`) &&
			strings.Contains(errOut, "--skip-header=false")
		if notice != c.notice {
			t.Errorf("%s: header notice %v, want %v:\n%s", c.name, notice, c.notice, errOut)
		}
	}
	// ngrams shares the input flags.
	code, _, errOut := runCmd(t, "ngrams", "--input", withHeader, "--user-column", "1", "--text-column", "2", "--quiet", "--seed", "1", "--max-n", "1")
	if s := lastJSON(t, errOut); code != 0 || s["users"] != 200.0 || !strings.Contains(errOut, "looks like a header") {
		t.Errorf("ngrams: exit %d, users %v:\n%s", code, s["users"], errOut)
	}
}

// TestBatchDeltaWarnings: union, ngrams and params warn on stderr when
// δ > 1e-4, and union and ngrams when δ ≥ 1/users, saying what it means; the
// defaults do not warn.
func TestBatchDeltaWarnings(t *testing.T) {
	in := writeSearches(t, true) // 200 users
	union := func(delta string) string {
		code, _, errOut := runCmd(t, "union", "--input", in, "--user-column", "1", "--item-column", "2", "--quiet", "--seed", "1", "--delta", delta)
		if code != 0 {
			t.Fatalf("union --delta %s: exit %d: %s", delta, code, errOut)
		}
		lastJSON(t, errOut) // the summary stays the last line
		return errOut
	}
	large := "is large (above 0.0001)"
	perUser := "is at least 1/users (200 users)"
	for _, c := range []struct {
		delta            string
		large, perUser   bool
		practicalMeaning string
	}{
		{"1e-6", false, false, ""},
		{"1e-4", false, false, ""},
		{"2e-4", true, false, "about 1 in 5000 of all users"},
		{"0.005", true, true, "about 1 of the 200 users"},
		{"0.5", true, true, "about 50% of all users"},
	} {
		errOut := union(c.delta)
		if strings.Contains(errOut, large) != c.large || strings.Contains(errOut, perUser) != c.perUser {
			t.Errorf("--delta %s: warnings (large %v, 1/users %v), want (%v, %v):\n%s", c.delta,
				strings.Contains(errOut, large), strings.Contains(errOut, perUser), c.large, c.perUser, errOut)
		}
		if c.practicalMeaning != "" && (!strings.Contains(errOut, c.practicalMeaning) || !strings.Contains(errOut, "single user's own items")) {
			t.Errorf("--delta %s: the warning does not say what it means (%q):\n%s", c.delta, c.practicalMeaning, errOut)
		}
	}
	code, _, errOut := runCmd(t, "ngrams", "--input", in, "--user-column", "1", "--text-column", "2", "--quiet", "--seed", "1", "--max-n", "1", "--delta", "0.01")
	if code != 0 || !strings.Contains(errOut, large) || !strings.Contains(errOut, perUser) {
		t.Errorf("ngrams --delta 0.01: exit %d:\n%s", code, errOut)
	}
	code, out, errOut := runCmd(t, "params", "--delta", "0.01")
	if code != 0 || !strings.Contains(errOut, large) || strings.Contains(out, "WARNING") {
		t.Errorf("params --delta 0.01: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "params"); code != 0 || errOut != "" {
		t.Errorf("params with the defaults: exit %d, stderr %q", code, errOut)
	}
}

// TestHelpListsUsableMechanisms: the batch commands' help lists the
// mechanisms they can run, the unproven ones as needing --allow-unproven,
// and never the disabled policy_gaussian_l1 (nor a "(default NaN)").
func TestHelpListsUsableMechanisms(t *testing.T) {
	for _, cmd := range []string{"union", "params", "ngrams"} {
		code, _, errOut := runCmd(t, cmd, "-h")
		if code != 0 {
			t.Fatalf("%s -h: exit %d", cmd, code)
		}
		if strings.Contains(errOut, "policy_gaussian_l1") || strings.Contains(errOut, "NaN") {
			t.Errorf("%s -h lists the disabled policy_gaussian_l1 or a NaN default:\n%s", cmd, errOut)
		}
		if cmd != "ngrams" && !strings.Contains(errOut, "only with --allow-unproven: greedy_frequency_unproven, greedy_public_unproven") {
			t.Errorf("%s -h does not mark the unproven mechanisms:\n%s", cmd, errOut)
		}
	}
	_, _, errOut := runCmd(t, "union", "--input", "x", "--user-column", "1", "--item-column", "2", "--mechanism", "nope")
	if strings.Contains(errOut, "policy_gaussian_l1") || !strings.Contains(errOut, "dp_sips") {
		t.Errorf("unknown mechanism: %s", errOut)
	}
}

// TestQueryBanner: dpsql query says on stderr that it runs ungoverned,
// unless --quiet.
func TestQueryBanner(t *testing.T) {
	code, _, errOut := runCmd(t, "query", "-e", "SELECT 1")
	if code != 0 || !strings.Contains(errOut, "UNGOVERNED") || !strings.Contains(errOut, "dpsql serve") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	code, _, errOut = runCmd(t, "query", "--quiet", "-e", "SELECT 1")
	if code != 0 || errOut != "" {
		t.Errorf("--quiet: exit %d, stderr %q", code, errOut)
	}
}

// TestSecondServerSaysWhatToDo: a second `dpsql serve` whose port is taken
// fails at once, before generating the demo data, naming --addr; one on
// another port but the same data directory names --data-dir.
func TestSecondServerSaysWhatToDo(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	start := time.Now()
	code, _, errOut := runCmd(t, "serve", "--addr", taken.Addr().String(), "--data-dir", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "address already in use") || !strings.Contains(errOut, "--addr") ||
		strings.Contains(errOut, "demo database") || strings.Contains(errOut, "privacy-budget ledger:") {
		t.Errorf("port in use: exit %d:\n%s", code, errOut)
	}
	t.Logf("port in use refused in %v", time.Since(start))
	code, _, errOut = runCmd(t, "serve", "--ungoverned", "--addr", taken.Addr().String())
	if code != 1 || !strings.Contains(errOut, "address already in use") || !strings.Contains(errOut, "--addr") || strings.Contains(errOut, "demo database") {
		t.Errorf("--ungoverned, port in use: exit %d:\n%s", code, errOut)
	}

	// The same data directory as a running server.
	dataDir := t.TempDir()
	pr, pw := io.Pipe()
	serveStop = make(chan struct{})
	defer func() { serveStop = nil }()
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir}, io.Discard, pw)
		pw.Close()
	}()
	waitListening(t, pr)
	go io.Copy(io.Discard, pr)
	code, _, errOut = runCmd(t, "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	if code != 1 || !strings.Contains(errOut, "ledger in use") || !strings.Contains(errOut, "--data-dir DIR") {
		t.Errorf("same data directory: exit %d:\n%s", code, errOut)
	}
	close(serveStop)
	if code := <-done; code != 0 {
		t.Errorf("first server exited %d", code)
	}
}
