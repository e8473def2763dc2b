// Package testenv locates what tests need outside the repository: the shared
// corpora and client programs. On a developer machine a missing corpus or
// client skips the test with a message saying what to install; under CI
// (DPSQL_CI set, as .ci/run does) it fails the test instead. Under
// `go test -short` (the quick local lane) every test that reads a corpus is
// skipped.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// CI reports whether the tests run under .ci/run.
func CI() bool { return os.Getenv("DPSQL_CI") != "" }

var (
	rootOnce sync.Once
	root     string
)

// ModuleRoot returns the directory holding go.mod, found by walking up from
// the working directory ("" if none).
func ModuleRoot() string {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				// A nested module (such as beam/) defers to the outer one.
				if _, err := os.Stat(filepath.Join(dir, "..", "go.mod")); err == nil {
					dir = filepath.Dir(dir)
					continue
				}
				root = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return
			}
			dir = parent
		}
	})
	return root
}

// DataDir returns the shared corpora directory: $DPSQL_DATA_DIR, or
// ../shared/data next to the repository.
func DataDir() string {
	if d := os.Getenv("DPSQL_DATA_DIR"); d != "" {
		return d
	}
	if r := ModuleRoot(); r != "" {
		return filepath.Join(r, "..", "shared", "data")
	}
	return filepath.Join("..", "shared", "data")
}

// DataFile returns the path of a shared corpus file, skipping (or, under CI,
// failing) the test when it is absent. Under -short it skips the test: the
// short lane reads no corpus.
func DataFile(tb testing.TB, name string) string {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("-short: reads the corpus %s", name)
	}
	p := filepath.Join(DataDir(), name)
	if _, err := os.Stat(p); err != nil {
		missing(tb, "corpus %s not found (%v); put the shared data at ../shared/data or set DPSQL_DATA_DIR", name, err)
	}
	return p
}

// Tool returns the path of a client program, skipping (or, under CI, failing)
// the test when it is not installed.
func Tool(tb testing.TB, name, install string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(tb, "%s not installed (%s); .ci/run installs it", name, install)
	}
	return p
}

func missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if CI() {
		tb.Fatalf("required under CI: "+format, args...)
	}
	tb.Skipf(format, args...)
}
