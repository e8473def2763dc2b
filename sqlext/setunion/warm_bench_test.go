package setunion

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// BenchmarkWarmSIPS is the mechanism of a warm release from a release
// index (the server's load test): dp_sips over the prepared demo-shaped
// input, Δ0 chosen privately (max_items=0) or fixed as the load test's
// statements set it, a seeded ChaCha8 source. It reports cpu-ns/op, the
// process's CPU time per release, which a shared machine's load disturbs
// less than the wall time.
//
//	go test -run '^$' -bench WarmSIPS -benchtime 40x -count 6 ./sqlext/setunion
func BenchmarkWarmSIPS(b *testing.B) {
	p, err := Prepare(demoGrouped())
	if err != nil {
		b.Fatal(err)
	}
	for _, mi := range []int{0, 20, 100} {
		b.Run(fmt.Sprintf("max_items=%d", mi), func(b *testing.B) {
			o := Defaults()
			o.MaxItems = mi
			b.ReportAllocs()
			cpu0 := rusageCPU()
			seed := uint64(0)
			for b.Loop() {
				seed++
				bl, err := NewPreparedBuilder(o, p)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := bl.ReleaseContext(context.Background(), securerand.NewSeeded(seed)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rusageCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// rusageCPU returns the CPU time (user + system) this process has used.
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
