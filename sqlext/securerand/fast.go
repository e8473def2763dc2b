package securerand

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// The release loops' fast paths: the same words read from r, and the same
// results, as Bernoulli, BernoulliBelow and SampleInPlace, for less work
// per call (no function value, no generic call, no second bound check).
// TestFastSameDraws compares them word for word.

// BernoulliBelowWord is the rest of BernoulliBelow(r, k, p) once its first
// word w is drawn: false when w's top k bits are not all zero (without
// calling p), else the exact comparison with p(), which must lie in
// (0, 2^−k). A loop that draws w itself (one call less per item) and
// continues when w>>(64−k) != 0 reads exactly the words BernoulliBelow
// reads.
func BernoulliBelowWord(r *rand.Rand, k int, w uint64, p float64) bool {
	if k < 1 || k > 64 {
		panic("securerand: BernoulliBelow needs 1 ≤ k ≤ 64")
	}
	if w>>(64-uint(k)) != 0 {
		return false
	}
	if !(p > 0) || p >= math.Ldexp(1, -k) {
		panic("securerand: BernoulliBelow's probability is outside (0, 2^-k)")
	}
	return bernoulliFrom(r, p, w)
}

// SampleIDs is SampleInPlace for item ids: the same swaps, from the same
// words (rand.Rand.IntN's: a power-of-two bound takes a word's low bits,
// any other Lemire's multiply-and-reject), so the same k-subset in the
// same order.
func SampleIDs(r *rand.Rand, s []uint32, k int) []uint32 {
	n := len(s)
	if k >= n {
		return s
	}
	if bits.UintSize == 32 {
		return SampleInPlace(r, s, k) // IntN draws 32-bit words there
	}
	for i := 0; i < k; i++ {
		m := uint64(n - i)
		var j uint64
		if m&(m-1) == 0 {
			j = r.Uint64() & (m - 1)
		} else {
			hi, lo := bits.Mul64(r.Uint64(), m)
			if lo < m {
				thresh := -m % m
				for lo < thresh {
					hi, lo = bits.Mul64(r.Uint64(), m)
				}
			}
			j = hi
		}
		j += uint64(i)
		s[i], s[j] = s[j], s[i]
	}
	return s[:k]
}
