package ngrams

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortBelowAsSort compares sortBelow with slices.Sort on distinct keys
// below sizes from 1 to 2^40, short and long inputs, keys using every bit of
// the width and none.
func TestSortBelowAsSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, size := range []uint64{1, 2, 3, 1000, 1 << 11, 1<<11 + 1, 1 << 22, 123456789, 1 << 40} {
		for _, n := range []int{0, 1, 100, 511, 512, 513, 5000, 40000} {
			if uint64(n) > size {
				continue
			}
			seen := make(map[uint64]bool, n)
			keys := make([]uint64, 0, n)
			for len(keys) < n {
				v := r.Uint64N(size)
				if len(keys) == 0 && size > 1 {
					v = size - 1 // the largest key the width allows
				}
				if !seen[v] {
					seen[v] = true
					keys = append(keys, v)
				}
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			sortBelow(keys, size)
			if !slices.Equal(keys, want) {
				t.Fatalf("size %d, %d keys: radix order differs from slices.Sort", size, n)
			}
		}
	}
}
