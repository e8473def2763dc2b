package batch

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/trace"
)

// traceEnv names the environment variable that makes a batch command write
// an execution trace (runtime/trace) of its run to the file it names, for
// `go tool trace`: where the cores sat idle, what the collector did, which
// goroutine held up the others (docs/performance.md). It is for the
// engineer measuring the command, so it is not a flag.
const traceEnv = "DPSQL_TRACE"

// startTrace starts the execution trace asked for by DPSQL_TRACE, if any,
// and returns the function that stops it; a trace that cannot start is
// reported on stderr and the command runs untraced.
func startTrace(stderr io.Writer) (stop func()) {
	path := os.Getenv(traceEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "dpsql: %s: %v (running untraced)\n", traceEnv, err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		fmt.Fprintf(stderr, "dpsql: %s: %v (running untraced)\n", traceEnv, err)
		f.Close()
		return func() {}
	}
	return func() {
		trace.Stop()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "dpsql: %s: %v\n", traceEnv, err)
		}
	}
}

// region runs f inside a trace region named name (a no-op when no trace is
// running), so that `go tool trace` shows the command's phases.
func region(name string, f func()) {
	trace.WithRegion(context.Background(), name, f)
}
