package integration

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
)

// processCPU returns the CPU time (user + system) this process has used:
// the governed server runs in the test's process, so a benchmark's CPU per
// statement is the server's and the client's together, whatever share of
// the machine's cores the process gets.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLoadRelease runs, one at a time over one connection of the go
// driver, each kind of statement TestLoad sends (loadOps) against the
// governed demo with release indexes, warm (each kind's first release, which
// builds its index, is before the timer), with dp_reuse = OFF as in the load
// test. It reports cpu-ns/op, the process's CPU time per statement (server
// and client): on a machine shared with other work, wall time per statement
// follows the CPU the process gets, CPU per statement does not.
//
//	go test -run '^$' -bench LoadRelease -benchtime 100x ./integration
func BenchmarkLoadRelease(b *testing.B) {
	s := startDemoLimits(b, nil, extraAnalyst{"bench", "bench-pw", 1e9, 0.5})
	<-s.IndexesPrebuilt()
	db := openGo(b, s.analystAs("bench", "bench-pw"))
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "SET dp_reuse = OFF"); err != nil {
		b.Fatal(err)
	}
	for _, op := range loadOps {
		b.Run(op.name, func(b *testing.B) {
			rnd := rand.New(rand.NewPCG(1, 2))
			run := func() {
				rows, err := c.QueryContext(ctx, op.sql(rnd))
				if err == nil {
					_, err = clients.ScanRows(rows)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			run() // builds the release index of the statement's column or expression
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for range b.N {
				run()
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
