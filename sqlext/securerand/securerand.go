// Package securerand provides the randomness of the privacy core: a
// cryptographic source for production, a seeded source for tests and
// reproducible runs, an exact Bernoulli sampler, and uniform sampling without
// replacement.
//
// All randomness flows through math/rand/v2's *rand.Rand, whose methods are
// deterministic functions of the underlying rand.Source. In production that
// source is a ChaCha8 stream keyed once per release from crypto/rand (New),
// so that a draw costs a few nanoseconds rather than a system call; tests
// inject a ChaCha8 source with a fixed seed (NewSeeded). A reproducible run is, by construction, not private: an
// observer who knows the seed can undo the noise.
package securerand

import (
	crand "crypto/rand"
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// New returns the generator of one release: ChaCha8 (math/rand/v2's
// rand.ChaCha8, a CSPRNG) keyed with 32 bytes read from crypto/rand at this
// call. Call it once per release and never share the result between
// goroutines or releases.
//
// Why this and not crypto/rand per draw: a release draws one word per item
// (tens of thousands), and each refill of a crypto/rand buffer is a
// getrandom call; keying a stream once costs one such call per release and
// then a few nanoseconds per word. Why a fresh key per release rather than
// one server-wide generator deriving keys: two releases then share no state
// (no lock, no stream one release could advance for another), a memory
// disclosure of one release's generator reveals nothing about any other
// release, and every release is reseeded from the kernel's pool, so nothing
// outlives a release. ChaCha8 erases its key every 1 KiB of output (Go's
// internal/chacha8rand), so the generator's state reveals at most the last
// 1 KiB the release drew, and its future draws. docs/privacy.md §15 states
// the argument.
func New() *rand.Rand {
	var key [32]byte
	// crypto/rand.Read never returns an error since Go 1.24; it crashes the
	// program irrecoverably if the OS cannot provide randomness, which is the
	// right behaviour for a privacy mechanism.
	_, _ = crand.Read(key[:])
	src := rand.NewChaCha8(key)
	clear(key[:])
	return rand.New(src)
}

// NewSeeded returns a reproducible generator (ChaCha8 keyed by seed). It is
// for tests and for the --seed option, whose output is not private.
func NewSeeded(seed uint64) *rand.Rand {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	binary.LittleEndian.PutUint64(key[8:], 0x6470_7371_6c00_0001) // "dpsql" domain tag
	return rand.New(rand.NewChaCha8(key))
}

// Bernoulli returns true with probability exactly p (for every float64 p; p ≤ 0
// gives false, p ≥ 1 true).
//
// It compares the binary expansion of p with a uniform U = 0.b₁b₂b₃… built
// from random bits and returns U < p. Write p = M·2^(e−53) with a 53-bit
// integer mantissa M (2^52 ≤ M < 2^53) and e ≤ 0: the expansion of p is −e
// zero bits followed by the bits of M and then zeros. U < p iff U's first −e
// bits are zero and its next 53 bits, read as an integer R, satisfy R < M
// (R = M leaves U ≥ p, since p's expansion ends there). Hence
// P(true) = 2^e · M/2^53 = p with no rounding, including for p < 2⁻⁵³, where
// the common "r.Float64() < p" is wrong. This samples the release decision
// itself, so no noise value exists that could leak through its low bits
// (Mironov 2012; docs/privacy.md §2, "Exact sampling"). Bits are read in 64-bit
// words; the unused low bits of a partly needed word are discarded, which
// keeps every compared bit fresh and the result exact. About 1–2 words per
// call on average.
func Bernoulli(r *rand.Rand, p float64) bool {
	if !(p > 0) {
		return false
	}
	if p >= 1 {
		return true
	}
	return bernoulliFrom(r, p, r.Uint64())
}

// bernoulliFrom is Bernoulli for p ∈ (0, 1) whose first random word w the
// caller has already drawn.
func bernoulliFrom(r *rand.Rand, p float64, w uint64) bool {
	frac, exp := math.Frexp(p) // p = frac·2^exp, frac ∈ [0.5, 1), exp ≤ 0
	// Leading zeros of p's expansion: the first −exp bits of U must all be 0.
	for z := -exp; z > 0; z -= 64 {
		if z < 64 {
			w >>= 64 - uint(z) // keep the top z bits
		}
		if w != 0 {
			return false
		}
		w = r.Uint64()
	}
	m := uint64(math.Ldexp(frac, 53)) // 53-bit mantissa of p
	return w>>11 < m
}

// BernoulliBelow returns Bernoulli(r, p()) for a probability known to lie in
// (0, 2^−k), 1 ≤ k ≤ 64, and calls p only when the first random word does
// not decide alone. It reads exactly the words Bernoulli(r, p()) reads, so a
// seeded run gives the same result and leaves r in the same state; only the
// cost differs.
//
// Why: p < 2^−k means that p = frac·2^e with e ≤ −k, so Bernoulli's uniform U
// is below p only if U's first −e ≥ k bits, all taken from its first word,
// are zero. If the top k bits of that word are not all zero, U ≥ p whatever
// p is exactly, and Bernoulli returns false after that one word as well. That
// happens with probability 1 − 2^−k; otherwise p() is evaluated and the
// comparison goes on from the same word. Releases use it for the many items
// whose weight lies far below the threshold, where p costs an erfc or an exp.
//
// It panics if p() is not in (0, 2^−k): the caller's bound was wrong, and
// the draws would differ from Bernoulli's.
func BernoulliBelow(r *rand.Rand, k int, p func() float64) bool {
	if k < 1 || k > 64 {
		panic("securerand: BernoulliBelow needs 1 ≤ k ≤ 64")
	}
	w := r.Uint64()
	if w>>(64-uint(k)) != 0 {
		return false
	}
	v := p()
	if !(v > 0) || v >= math.Ldexp(1, -k) {
		panic("securerand: BernoulliBelow's probability is outside (0, 2^-k)")
	}
	return bernoulliFrom(r, v, w)
}

// SampleInPlace moves a uniformly random k-subset of s (sampled without
// replacement) to s[:k] by a partial Fisher–Yates shuffle and returns s[:k].
// If k ≥ len(s) it returns s unchanged.
func SampleInPlace[T any](r *rand.Rand, s []T, k int) []T {
	n := len(s)
	if k >= n {
		return s
	}
	for i := 0; i < k; i++ {
		j := i + r.IntN(n-i)
		s[i], s[j] = s[j], s[i]
	}
	return s[:k]
}

// Key returns a fresh 128-bit key (for the keyed hashes that order users and
// break ties) drawn from r.
func Key(r *rand.Rand) [2]uint64 {
	return [2]uint64{r.Uint64(), r.Uint64()}
}
