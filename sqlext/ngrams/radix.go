package ngrams

import (
	"math/bits"
	"slices"
)

// sortBelow sorts keys, distinct integers below size, ascending: the same
// order as slices.Sort (for distinct keys every sort gives the same), by an
// LSD radix sort of 11 bits a pass over the bits.Len64(size−1) bits a key
// may have. A level's support indices (up to a few hundred thousand below
// |S_{k−1}|²) sort about ten times faster than by comparisons; short inputs
// are sorted by comparisons. Its work is a function of len(keys) and size.
func sortBelow(keys []uint64, size uint64) {
	if len(keys) < 512 || size == 0 {
		slices.Sort(keys)
		return
	}
	const digit = 11
	width := bits.Len64(size - 1)
	tmp := make([]uint64, len(keys))
	src, dst := keys, tmp
	var count [1 << digit]int
	for shift := 0; shift < width; shift += digit {
		clear(count[:])
		for _, k := range src {
			count[k>>shift&(1<<digit-1)]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range src {
			d := k >> shift & (1<<digit - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}
