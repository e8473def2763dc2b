package securerand

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSampleSwapsSameDraws: drawing the swap targets with SampleSwaps and
// applying them with ApplySwaps gives SampleIDs' sample and leaves the
// source in the same state, over bounds of every kind (powers of two, and
// others on sources whose zero words Lemire's method rejects), with the
// targets of several lists appended to one slice.
func TestSampleSwapsSameDraws(t *testing.T) {
	g := rand.New(rand.NewPCG(7, 8))
	var js []uint32
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
			a = rand.New(leadingZeros{rand.New(rand.NewPCG(seed, 2))})
			b = rand.New(leadingZeros{rand.New(rand.NewPCG(seed, 2))})
		}
		at := len(js)
		js = SampleSwaps(a, n, k, js)
		want := SampleIDs(b, slices.Clone(s), k)
		if len(js)-at != min(k, n) && k < n {
			t.Fatalf("trial %d: %d targets for n=%d k=%d", trial, len(js)-at, n, k)
		}
		got := s
		if k < n {
			got = ApplySwaps(slices.Clone(s), js[at:])
		}
		if !slices.Equal(got, want) || a.Uint64() != b.Uint64() {
			t.Fatalf("trial %d (n=%d k=%d): got %v, want %v (or the sources differ after)", trial, n, k, got, want)
		}
		if len(js) > 1<<16 {
			js = js[:0]
		}
	}
}
