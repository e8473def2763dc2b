package noise

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGaussianThresholdMaxAsLoop: the early-stopping maximum equals the
// term-by-term loop bit for bit, over σ from 0.01 to 1,000, δ from 1e-15
// to 0.9 and maxT up to 3,000 (the calibrations of releases use up to
// 1,000), and at the edges the loop handles alone.
func TestGaussianThresholdMaxAsLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 3))
	cases := [][3]float64{{1, 1e-6, 1000}, {0.3, 1e-9, 1000}, {50, 1e-6, 1000}, {0, 1e-6, 10}, {1, 0, 10}, {1, 1e-6, 1}, {1, 1e-6, 0}, {math.Inf(1), 1e-6, 5}}
	for range 400 {
		cases = append(cases, [3]float64{math.Pow(10, -2+5*r.Float64()), math.Pow(10, -15+15*r.Float64()) * 0.9, float64(1 + r.IntN(3000))})
	}
	for _, c := range cases {
		got, want := GaussianThresholdMax(c[0], c[1], int(c[2])), gaussianThresholdLoop(c[0], c[1], int(c[2]))
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("GaussianThresholdMax(%v, %v, %v) = %v, the loop gives %v", c[0], c[1], c[2], got, want)
		}
	}
}
