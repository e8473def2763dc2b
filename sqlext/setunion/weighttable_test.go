package setunion

import (
	"math"
	"testing"
)

// TestWeightTableAsAdditiveWeight checks that the histogram's table of
// per-user weights holds additiveWeight's values bit for bit, for every
// additive rule and bounds around the cap, and that weightFrom falls back
// beyond it.
func TestWeightTableAsAdditiveWeight(t *testing.T) {
	for _, m := range []Mechanism{CountLaplace, CountGaussian, SingleItem, WeightedLaplace, WeightedGaussian, DPSIPS} {
		for _, bound := range []int{1, 2, 20, 100, weightTableMax, weightTableMax + 5} {
			tab := weightTable(m, bound)
			if len(tab) != min(bound, weightTableMax)+1 {
				t.Fatalf("%s, bound %d: table of %d entries", m, bound, len(tab))
			}
			for n := 1; n <= bound+3; n++ {
				if got, want := weightFrom(tab, m, n), additiveWeight(m, n); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%s, bound %d, n = %d: %v, want %v", m, bound, n, got, want)
				}
			}
		}
	}
	if weightTable(PolicyGaussianL2, 10) != nil || weightTable(DPSIPS, 0) != nil {
		t.Fatal("a table for a rule that is not additive, or for no bound")
	}
}
