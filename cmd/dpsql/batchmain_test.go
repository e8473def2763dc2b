package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBatchSkipsEngineInit runs `dpsql union` and `dpsql params` as a
// process (this test binary, which links the same packages as dpsql) with
// GODEBUG=inittrace=1: package batchmain must run them before Go
// initialises go-mysql-server's sql package (and so its system variables,
// types and information_schema), and `dpsql query` must still get there.
func TestBatchSkipsEngineInit(t *testing.T) {
	const engine = "init github.com/dolthub/go-mysql-server/sql @"
	in := writeCorpus(t)
	for _, c := range []struct {
		args       []string
		wantEngine bool
	}{
		{[]string{"union", "--input", in, "--user-column", "1", "--text-column", "2", "--quiet", "--seed", "1"}, false},
		{[]string{"params", "--epsilon", "1"}, false},
		{[]string{"query", "--quiet", "-e", "SELECT 1"}, true},
	} {
		cmd := exec.Command(os.Args[0], c.args...)
		cmd.Env = append(os.Environ(), "DPSQL_TEST_MAIN=1", "GODEBUG=inittrace=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "init runtime @") {
			t.Fatalf("%v: no init trace in stderr:\n%s", c.args, stderr.String())
		}
		if stdout.Len() == 0 {
			t.Errorf("%v: no output", c.args)
		}
		if got := strings.Contains(stderr.String(), engine); got != c.wantEngine {
			t.Errorf("%v: go-mysql-server's sql package initialised: %v, want %v", c.args, got, c.wantEngine)
		}
	}
}
