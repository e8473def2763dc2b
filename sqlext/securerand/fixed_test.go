package securerand

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBernoulliFixedWords: two words for every p, including 0, 1, values
// outside [0, 1], NaN and probabilities far below 2^−64.
func TestBernoulliFixedWords(t *testing.T) {
	src := &counting{src: rand.NewChaCha8([32]byte{3})}
	r := rand.New(src)
	ps := []float64{0, 1, -1, 2, math.NaN(), math.Inf(1), 0.5, 0.75, 1e-3, 0.999999, math.Ldexp(1, -70), math.SmallestNonzeroFloat64}
	for i := range 2000 {
		ps = append(ps, float64(i)/2000, math.Ldexp(1, -i%200))
	}
	for _, p := range ps {
		before := src.n
		BernoulliFixed(r, p)
		if d := src.n - before; d != 2 {
			t.Fatalf("p=%v: %d words, want 2", p, d)
		}
	}
}

// TestBernoulliFixedExactBits: the decision is U < p on scripted bits, at
// both words and past them.
func TestBernoulliFixedExactBits(t *testing.T) {
	p := math.Ldexp(1, -70) // h = 0, l = 2^58, f = 0
	for _, c := range []struct {
		words []uint64
		want  bool
	}{
		{[]uint64{0, 0}, true},
		{[]uint64{0, 1<<58 - 1}, true},
		{[]uint64{0, 1 << 58}, false}, // U ≥ p: equal prefix and f = 0
		{[]uint64{1, 0}, false},
		{[]uint64{1 << 63, 0}, false},
	} {
		if got := BernoulliFixed(rand.New(&scripted{words: c.words}), p); got != c.want {
			t.Errorf("p=2^-70, words %x: got %v", c.words, got)
		}
	}
	// p = 0.75: true iff the first two bits are not both 1.
	for _, c := range []struct {
		w    uint64
		want bool
	}{{0, true}, {1 << 63, true}, {1 << 62, true}, {3 << 62, false}} {
		if got := BernoulliFixed(rand.New(&scripted{words: []uint64{c.w, 0}}), 0.75); got != c.want {
			t.Errorf("p=0.75, bits %064b: got %v", c.w, got)
		}
	}
	// Below 2^−128 the two words decide only if one of them is not zero;
	// then the comparison goes on, exactly, with Bernoulli(p·2^128).
	tiny := math.SmallestNonzeroFloat64
	if !BernoulliFixed(rand.New(&scripted{}), tiny) {
		t.Error("all-zero bits must give U < 2^-1074")
	}
	if BernoulliFixed(rand.New(&scripted{words: []uint64{0, 1}}), tiny) {
		t.Error("a one in the second word must give U ≥ 2^-1074")
	}
	// A probability with bits past 128: p = 2^-100·(1 + 2^-52), h = 0,
	// l = 2^28, f = 2^-24; equal words, then V < f iff the next 24 bits
	// are zero.
	p2 := math.Ldexp(1+math.Ldexp(1, -52), -100)
	if !BernoulliFixed(rand.New(&scripted{words: []uint64{0, 1 << 28, 0}}), p2) {
		t.Error("p=2^-100+2^-152: equal prefix and V = 0 must give true")
	}
	if BernoulliFixed(rand.New(&scripted{words: []uint64{0, 1 << 28, 1 << 41}}), p2) {
		t.Error("p=2^-100+2^-152: equal prefix and V > 2^-24 must give false")
	}
}

// TestBernoulliFixedFrequency: the frequency of true is p.
func TestBernoulliFixedFrequency(t *testing.T) {
	r := rand.New(rand.NewChaCha8([32]byte{9}))
	const n = 200000
	for _, p := range []float64{0.5, 0.1, 0.9, 0.01} {
		k := 0
		for range n {
			if BernoulliFixed(r, p) {
				k++
			}
		}
		sd := math.Sqrt(p * (1 - p) / n)
		if got := float64(k) / n; math.Abs(got-p) > 5*sd {
			t.Errorf("p=%v: frequency %v (sd %v)", p, got, sd)
		}
	}
}
