package dpagg

import (
	"math/rand/v2"
	"testing"
)

// TestRoundQuantileLevel: the rounded level is the mechanism's level, and
// rounding is idempotent.
func TestRoundQuantileLevel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		p := r.Float64()
		if i%3 == 0 {
			p = float64(r.IntN(quantileDenominator+1))/quantileDenominator + (r.Float64()-0.5)*1e-9
			p = min(max(p, 0), 1)
		}
		q := RoundQuantileLevel(p)
		n1, d1 := quantileLevel(p)
		n2, d2 := quantileLevel(q)
		if n1 != n2 || d1 != d2 || RoundQuantileLevel(q) != q || q < 0 || q > 1 {
			t.Fatalf("p = %v: level %d/%d, rounded %v gives %d/%d", p, n1, d1, q, n2, d2)
		}
	}
}
