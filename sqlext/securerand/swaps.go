package securerand

import (
	"math/bits"
	"math/rand/v2"
)

// SampleSwaps appends to dst the k swap targets that SampleIDs(r, s, k)
// draws for a slice s of n > k elements, j_i ∈ [i, n) for i = 0, …, k−1,
// reading the same words from r; for k ≥ n it appends nothing and reads
// none, as SampleIDs. ApplySwaps(s, js) then makes SampleIDs' swaps, so
//
//	ApplySwaps(s, SampleSwaps(r, len(s), k, nil)) == SampleIDs(r, s, k)
//
// with r left in the same state (TestSampleSwapsSameDraws). The targets
// depend on n, k and the words only, never on s, so a caller can draw the
// samples of many lists on one goroutine, in the order the random stream
// fixes, and apply them on several. n must be below 2^32.
func SampleSwaps(r *rand.Rand, n, k int, dst []uint32) []uint32 {
	if k >= n {
		return dst
	}
	if bits.UintSize == 32 {
		for i := 0; i < k; i++ { // SampleInPlace's draws, as SampleIDs there
			dst = append(dst, uint32(i+r.IntN(n-i)))
		}
		return dst
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
		dst = append(dst, uint32(j+uint64(i)))
	}
	return dst
}

// ApplySwaps swaps s[i] and s[js[i]] for i = 0, …, len(js)−1, in order, and
// returns s[:len(js)]: the sample SampleSwaps drew (len(js) ≤ len(s)).
func ApplySwaps(s []uint32, js []uint32) []uint32 {
	s = s[:len(s):len(s)]
	for i, j := range js {
		s[i], s[j] = s[j], s[i]
	}
	return s[:len(js)]
}
