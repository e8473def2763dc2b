package setunion

import (
	"math/bits"
	"slices"
)

// radixMin is the length from which sortByItem sorts by radix instead of
// by comparison (BenchmarkSortByItem: at 256 entries the two cost about the
// same, at 4096 the radix sort takes a third of pdqsort's time).
const radixMin = 256

// radixBits is the widest digit sortByItem uses: 2¹¹ counters of 4 bytes
// stay in the first-level cache.
const radixBits = 11

// sortByItem sorts entries item<<32 | count by item and returns buf, perhaps
// grown, for reuse. Entries with equal items may end in any order (a long
// list keeps their input order, a short one is sorted by count too):
// compaction merges them by saturating sums of their counts, which do not
// depend on the order of the terms, so the compacted list is that of a full
// sort.
//
// A long list is sorted by a least-significant-digit radix sort on the item
// id alone: ⌈b/11⌉ stable counting passes of ⌈b/⌈b/11⌉⌉ bits each, where b
// is the bit length of the largest item id (17 bits, two passes of 9, for the
// 124k items of git_python_ecosystem). That is O(n) per pass against pdqsort's
// O(n log n) comparisons, most of them mispredicted branches.
func sortByItem(l, buf []uint64) []uint64 {
	if len(l) < radixMin {
		slices.Sort(l)
		return buf
	}
	var hi uint64
	for _, e := range l {
		hi |= e
	}
	b := bits.Len64(hi >> 32)
	if b == 0 {
		return buf // one item: already grouped
	}
	passes := (b + radixBits - 1) / radixBits
	width := uint((b + passes - 1) / passes)
	if cap(buf) < len(l) {
		buf = make([]uint64, len(l))
	}
	src, dst := l, buf[:len(l)]
	var count [1 << radixBits]uint32
	mask := uint64(1)<<width - 1
	for p := range passes {
		shift := 32 + uint(p)*width
		cnt := count[:1<<width]
		clear(cnt)
		for _, e := range src {
			cnt[e>>shift&mask]++
		}
		sum := uint32(0)
		for d, c := range cnt {
			cnt[d] = sum
			sum += c
		}
		for _, e := range src {
			d := e >> shift & mask
			dst[cnt[d]] = e
			cnt[d]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(l, src)
	}
	return buf
}
