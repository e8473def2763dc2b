package bench

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server"
)

// BenchmarkFirstRelease compares, in one process, the analyst's first
// private SELECT DISTINCT over the word column — which builds the release
// index, in a fresh cache each time — with the plain SELECT DISTINCT it
// stands in for (issue 24: the first must cost at most the second). Each
// sub-benchmark reports, besides ns/op, the process's CPU time per
// operation (cpu-ns/op: user + system, all goroutines), which a shared
// machine's load disturbs less than the wall time. Compare the two
// sub-benchmarks' cpu-ns/op and ns/op.
func BenchmarkFirstRelease(b *testing.B) {
	e := corpusEngine(b)
	p := engineProvider
	const distinct = "SELECT DISTINCT word FROM t"
	b.Run("plain SELECT DISTINCT", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			if _, err := Run(server.NewContext(context.Background(), "", "bench"), e, distinct); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("first private release", func(b *testing.B) {
		cpu := cpuTime()
		for b.Loop() {
			ix := release.NewIndexes(release.DefaultIndexBytes, nil)
			ie, err := NewEngine(p, planner.WithIndexes(ix))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Run(server.NewContext(context.Background(), Analyst, "bench"), ie, distinct); err != nil {
				b.Fatal(err)
			}
			if ix.Paths().Index != 1 {
				b.Fatalf("paths %+v: the release did not read the index", ix.Paths())
			}
			ie.Close()
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	})
}

// cpuTime returns the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
