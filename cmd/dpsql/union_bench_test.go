package main

import (
	"io"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/dpsql/dpsql/internal/testenv"
)

// BenchmarkUnionPythonEcosystem runs the whole `dpsql union --text-column`
// command in-process on git_python_ecosystem (4.4M tokens, 1.36M distinct
// pairs), seeded, with the default mechanism: compare runs with benchstat.
//
// busy-procs is how many of the GOMAXPROCS processors had a goroutine to run,
// on average over the runs (Go's own accounting, /cpu/classes: the time
// GOMAXPROCS × wall less the time processors sat idle for want of work): an
// upper bound on the speed-up over one core. It is loose: a processor counts
// as busy while the OS has descheduled its thread, and two threads do not
// run at twice one thread's speed (shared caches and memory), so compare
// wall times on an idle machine for the speed-up itself.
func BenchmarkUnionPythonEcosystem(b *testing.B) {
	in := testenv.DataFile(b, "git_python_ecosystem.tsv.gz")
	args := []string{"union", "--input", in, "--user-column", "1", "--text-column", "2",
		"--epsilon", "3", "--delta", "1e-6", "--seed", "1", "--quiet"}
	total0, idle0 := cpuClasses()
	for b.Loop() {
		if code := run(args, io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
	total, idle := cpuClasses()
	if total > total0 {
		busy := 1 - (idle-idle0)/(total-total0)
		b.ReportMetric(busy*float64(runtime.GOMAXPROCS(0)), "busy-procs")
	}
}

// cpuClasses returns the runtime's total and idle processor time. The
// runtime updates them at each garbage collection, so it collects first.
func cpuClasses() (total, idle float64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64(), s[1].Value.Float64()
}
