package securerand

import (
	"math"
	"math/rand/v2"
)

// BernoulliFixed returns true with probability exactly p, as Bernoulli does,
// but reads exactly two 64-bit words whatever p is — also for p ≤ 0 and
// p ≥ 1 — and more only on an event of probability at most 2^−128. Bernoulli
// reads 0 words for p ∉ (0, 1), and otherwise a second word with probability
// about p (when U's leading bits do not decide), so the number of words it
// reads, hence its time, depends on p; where p is computed from protected
// data (a noisy test of a bound), that is work chosen by the data
// (docs/privacy.md, "Paired timing attacks").
//
// Exactness. Let U = (w₁·2⁶⁴ + w₂ + V)/2¹²⁸ be a uniform on [0, 1), w₁ and
// w₂ the two words and V ∈ [0, 1) uniform from the bits after them. For
// p ∈ (0, 1) write p·2¹²⁸ = h·2⁶⁴ + l + f with integers h, l ∈ [0, 2⁶⁴) and
// f ∈ [0, 1): every step (scaling by 2⁶⁴, taking the integer and fractional
// parts of a float64) is exact. Then U < p iff (w₁, w₂, V) < (h, l, f)
// lexicographically, so the result is decided by w₁ ≠ h or w₂ ≠ l, and
// otherwise (probability 2^−128) by V < f, sampled by Bernoulli(f) on the
// following bits — exact, since those bits are fresh uniform bits.
func BernoulliFixed(r *rand.Rand, p float64) bool {
	w1, w2 := r.Uint64(), r.Uint64()
	if !(p > 0) {
		return false
	}
	if p >= 1 {
		return true
	}
	hf, f1 := math.Modf(math.Ldexp(p, 64))
	lf, f := math.Modf(math.Ldexp(f1, 64))
	h, l := uint64(hf), uint64(lf)
	switch {
	case w1 != h:
		return w1 < h
	case w2 != l:
		return w2 < l
	}
	return Bernoulli(r, f)
}
