// Package radix sorts unsigned integer keys by a bit field, in time linear
// in the number of keys: the least-significant-digit radix sort that the
// release index (keys by item) and the n-gram levels (support indices) both
// use where comparison sorts were a measured share of a release.
package radix

// digit is the width of one pass: 2^11 counters fit in L1 and three passes
// cover a 33-bit field.
const digit = 11

// SortBits sorts keys by the field of width bits starting at bit shift
// (bits of the field above width must be zero), stably: keys with equal
// fields keep their order. It makes ⌈width/11⌉ passes over the keys and
// one scratch slice of len(keys); its work is a function of len(keys) and
// width only.
func SortBits(keys []uint64, shift, width int) {
	if len(keys) < 2 || width <= 0 {
		return
	}
	tmp := make([]uint64, len(keys))
	src, dst := keys, tmp
	var count [1 << digit]int
	for s := shift; s < shift+width; s += digit {
		clear(count[:])
		for _, k := range src {
			count[k>>s&(1<<digit-1)]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range src {
			d := k >> s & (1<<digit - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}
