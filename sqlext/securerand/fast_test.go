package securerand

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFastSameDraws: SampleIDs makes the same sample as SampleInPlace and
// BernoulliBelowWord (after the caller's first word) returns what
// BernoulliBelow returns, each leaving the source in the same state, over
// bounds of every kind (powers of two, and others on sources whose zero
// words Lemire's method rejects)
// and probabilities down to subnormals.
func TestFastSameDraws(t *testing.T) {
	g := rand.New(rand.NewPCG(5, 6))
	for trial := range 20_000 {
		n := g.IntN(300)
		switch trial % 4 {
		case 1:
			n = 1 << g.IntN(9)
		case 2:
			n = 1 + g.IntN(5)
		}
		s := make([]uint32, n)
		for i := range s {
			s[i] = g.Uint32()
		}
		k := g.IntN(n + 2)
		seed := g.Uint64()
		a, b := rand.New(rand.NewPCG(seed, 2)), rand.New(rand.NewPCG(seed, 2))
		if trial%3 == 0 {
			// Zero words: Lemire's method rejects them (lo = 0 < 2^64 mod m).
			a = rand.New(leadingZeros{rand.New(rand.NewPCG(seed, 2))})
			b = rand.New(leadingZeros{rand.New(rand.NewPCG(seed, 2))})
		}
		got := SampleIDs(a, slices.Clone(s), k)
		want := SampleInPlace(b, slices.Clone(s), k)
		if !slices.Equal(got, want) || a.Uint64() != b.Uint64() {
			t.Fatalf("n=%d k=%d: SampleIDs %v, SampleInPlace %v (or the sources diverged)", n, k, got, want)
		}
	}
	slow := 0
	for trial := range 200_000 {
		k := 1 + g.IntN(64)
		p := math.Ldexp(1, -k) * (1 - g.Float64())
		if trial%2 == 1 {
			p = math.Ldexp(p, -g.IntN(1100))
		}
		if !(p > 0) || p >= math.Ldexp(1, -k) {
			continue
		}
		seed := g.Uint64()
		a := rand.New(leadingZeros{rand.New(rand.NewPCG(seed, 1))})
		b := rand.New(leadingZeros{rand.New(rand.NewPCG(seed, 1))})
		w := a.Uint64()
		if w>>(64-uint(k)) == 0 {
			slow++
		}
		got := BernoulliBelowWord(a, k, w, p)
		if want := BernoulliBelow(b, k, func() float64 { return p }); got != want || a.Uint64() != b.Uint64() {
			t.Fatalf("k=%d p=%g: BernoulliBelowWord %v, BernoulliBelow %v (or the sources diverged)", k, p, got, want)
		}
	}
	if slow < 1000 {
		t.Fatalf("the first word decided alone in all but %d draws: the slow path is barely tested", slow)
	}
}
