package radix

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortBitsStable checks SortBits against a stable comparison sort on
// the field, for random keys, shifts and widths.
func TestSortBitsStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		shift, width := rng.IntN(33), 1+rng.IntN(31)
		keys := make([]uint64, rng.IntN(3000))
		for i := range keys {
			field := rng.Uint64() & (1<<width - 1)
			keys[i] = field<<shift | rng.Uint64()&(1<<shift-1)
		}
		want := slices.Clone(keys)
		slices.SortStableFunc(want, func(a, b uint64) int {
			return int(a>>shift) - int(b>>shift)
		})
		SortBits(keys, shift, width)
		if !slices.Equal(keys, want) {
			t.Fatalf("trial %d (shift %d, width %d): not the stable order", trial, shift, width)
		}
	}
}
