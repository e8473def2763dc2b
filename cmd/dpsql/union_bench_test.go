package main

import (
	"io"
	"testing"

	"github.com/dpsql/dpsql/internal/testenv"
)

// BenchmarkUnionPythonEcosystem runs the whole `dpsql union --text-column`
// command in-process on git_python_ecosystem (4.4M tokens, 1.36M distinct
// pairs), seeded, with the default mechanism: compare runs with benchstat.
func BenchmarkUnionPythonEcosystem(b *testing.B) {
	in := testenv.DataFile(b, "git_python_ecosystem.tsv.gz")
	args := []string{"union", "--input", in, "--user-column", "1", "--text-column", "2",
		"--epsilon", "3", "--delta", "1e-6", "--seed", "1", "--quiet"}
	for b.Loop() {
		if code := run(args, io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}
