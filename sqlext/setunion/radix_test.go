package setunion

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortByItemMatchesSort checks that compaction after sortByItem gives
// the entries of a full sort, for lengths on both sides of radixMin and item
// ids of 1 to 32 bits (one, two and three radix passes), with repeated items
// whose counts saturate.
func TestSortByItemMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []uint64
	for _, n := range []int{0, 1, 5, radixMin - 1, radixMin, radixMin + 1, 3000, 20000} {
		for _, b := range []int{1, 2, 9, 11, 12, 17, 22, 23, 32} {
			l := make([]uint64, n)
			for k := range l {
				item := rng.Uint64N(1 << b)
				count := uint64(1 + rng.IntN(3))
				if rng.IntN(50) == 0 {
					count = 0xffffffff - uint64(rng.IntN(2))
				}
				l[k] = item<<32 | count
			}
			want := slices.Clone(l)
			slices.Sort(want)
			want = dedupSorted(want)
			buf = sortByItem(l, buf)
			for k := 1; k < len(l); k++ {
				if l[k-1]>>32 > l[k]>>32 {
					t.Fatalf("n=%d bits=%d: not sorted by item at %d", n, b, k)
				}
			}
			if got := dedupSorted(l); !slices.Equal(got, want) {
				t.Fatalf("n=%d bits=%d: compacted entries differ from a full sort's", n, b)
			}
		}
	}
}

// BenchmarkSortByItem compares sortByItem with slices.Sort on a list of
// entries with 17-bit item ids (git_python_ecosystem's 124k items).
func BenchmarkSortByItem(b *testing.B) {
	for _, n := range []int{64, 256, 1024, 4096, 65536} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		src := make([]uint64, n)
		for k := range src {
			src[k] = rng.Uint64N(124_000)<<32 | 1
		}
		l := make([]uint64, n)
		b.Run(fmt.Sprintf("radix/n=%d", n), func(b *testing.B) {
			var buf []uint64
			for b.Loop() {
				copy(l, src)
				buf = sortByItem(l, buf)
			}
		})
		b.Run(fmt.Sprintf("pdqsort/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				copy(l, src)
				slices.Sort(l)
			}
		})
	}
}
