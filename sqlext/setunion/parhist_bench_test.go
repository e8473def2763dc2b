package setunion

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// BenchmarkReleaseHistogramWorkers times a dp_sips release (three additive
// rounds) of prepared input shaped like git_python_ecosystem (about 1.4M
// distinct pairs, 12k users whose numbers of items have a Pareto tail, a
// few percent above Δ0 = 256) with the histograms summed on 1 and 2
// goroutines: `dpsql union`'s release on one core and on two
// (docs/performance.md).
func BenchmarkReleaseHistogramWorkers(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	var pairs [][2]string
	for u := range 12_000 {
		size := min(20_000, int(10*math.Pow(1-r.Float64(), -1/1.1)))
		for range size {
			pairs = append(pairs, [2]string{fmt.Sprintf("u%d", u), fmt.Sprintf("i%d", int(r.ExpFloat64()*120_000/5)%120_000)})
		}
	}
	p, err := Prepare(groupPairs(pairs))
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			o := Defaults()
			o.MaxItems = 256
			cpu0 := rusageCPU()
			seed := uint64(0)
			for b.Loop() {
				seed++
				bl, err := NewPreparedBuilder(o, p)
				if err != nil {
					b.Fatal(err)
				}
				bl.SetHistogramWorkers(w)
				if _, err := bl.ReleaseContext(context.Background(), securerand.NewSeeded(seed)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rusageCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
