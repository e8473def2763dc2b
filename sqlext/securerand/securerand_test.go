package securerand

import (
	"math"
	"math/rand/v2"
	"testing"
)

// scripted is a rand.Source returning fixed words, then zeros.
type scripted struct {
	words []uint64
	used  int
}

func (s *scripted) Uint64() uint64 {
	s.used++
	if len(s.words) == 0 {
		return 0
	}
	w := s.words[0]
	s.words = s.words[1:]
	return w
}

// TestBernoulliFrequency: over many draws the frequency of true matches p
// within a 5-sigma binomial interval.
func TestBernoulliFrequency(t *testing.T) {
	r := NewSeeded(1)
	const n = 200_000
	for _, p := range []float64{0.5, 0.9, 0.1, 1e-2, 1e-3, 0.3333333333333333, 1 - 1e-4} {
		hits := 0
		for i := 0; i < n; i++ {
			if Bernoulli(r, p) {
				hits++
			}
		}
		sd := math.Sqrt(n * p * (1 - p))
		if math.Abs(float64(hits)-n*p) > 5*sd+1 {
			t.Errorf("p=%v: %d of %d, expected %.0f ± %.0f", p, hits, n, n*p, 5*sd)
		}
	}
}

// TestBernoulliEdges: out-of-range and degenerate probabilities.
func TestBernoulliEdges(t *testing.T) {
	r := NewSeeded(2)
	for _, p := range []float64{0, -1, math.NaN(), math.Inf(-1)} {
		if Bernoulli(r, p) {
			t.Errorf("Bernoulli(%v) returned true", p)
		}
	}
	for _, p := range []float64{1, 2, math.Inf(1)} {
		if !Bernoulli(r, p) {
			t.Errorf("Bernoulli(%v) returned false", p)
		}
	}
}

// TestBernoulliExactBits checks the comparison of binary expansions on
// scripted bits, including probabilities far below 2⁻⁵³ where
// "uniform() < p" would always be false or always be wrong.
func TestBernoulliExactBits(t *testing.T) {
	// p = 2⁻⁷⁰ = 0.5·2⁻⁶⁹: 69 leading zero bits, then the mantissa 2⁵².
	// The sampler reads the 69 leading bits from the top of two words (64 +
	// 5; the rest of the second word is unused) and the next 53 bits from the
	// top of a third word.
	p := math.Ldexp(1, -70)
	if !Bernoulli(rand.New(&scripted{}), p) {
		t.Error("all-zero bits must give U < 2⁻⁷⁰")
	}
	// A 1 among the leading bits (bit 65, top of the second word): U ≥ 2⁻⁶⁵ > p.
	if Bernoulli(rand.New(&scripted{words: []uint64{0, 1 << 63}}), p) {
		t.Error("U ≥ 2⁻⁶⁵ must give false for p = 2⁻⁷⁰")
	}
	// The bits below the 69 leading ones in the second word are not read.
	if !Bernoulli(rand.New(&scripted{words: []uint64{0, 1 << 58}}), p) {
		t.Error("bits past the leading zeros of a partly used word must not count")
	}
	// Leading zeros, then 53 bits equal to the mantissa: U ≥ p, so false.
	if Bernoulli(rand.New(&scripted{words: []uint64{0, 0, 1 << 63}}), p) {
		t.Error("U ≥ p must give false")
	}
	// p = 0.75 = 0.11₂: true iff the first two bits are not both 1.
	for _, c := range []struct {
		w    uint64
		want bool
	}{{0, true}, {1 << 63, true}, {1 << 62, true}, {3 << 62, false}} {
		if got := Bernoulli(rand.New(&scripted{words: []uint64{c.w}}), 0.75); got != c.want {
			t.Errorf("p=0.75, bits %064b: got %v", c.w, got)
		}
	}
	// The smallest subnormal 2⁻¹⁰⁷⁴ is accepted only after 1074 zero bits.
	tiny := math.SmallestNonzeroFloat64
	s := &scripted{}
	if !Bernoulli(rand.New(s), tiny) {
		t.Error("all-zero bits must give U < 2⁻¹⁰⁷⁴")
	}
	if s.used < 1074/64 {
		t.Errorf("used %d words, need at least %d", s.used, 1074/64)
	}
}

// TestBernoulliCost: the expected number of 64-bit words is about 1–2.
func TestBernoulliCost(t *testing.T) {
	src := &counting{src: rand.NewChaCha8([32]byte{3})}
	r := rand.New(src)
	const n = 100_000
	for i := 0; i < n; i++ {
		Bernoulli(r, rand.Float64())
	}
	if per := float64(src.n) / n; per > 2.1 {
		t.Errorf("%.2f words per draw", per)
	}
}

type counting struct {
	src rand.Source
	n   int
}

func (c *counting) Uint64() uint64 { c.n++; return c.src.Uint64() }

// TestSampleInPlaceUniform: every 2-subset of 5 items is equally likely
// (chi-square with 9 degrees of freedom, p > 1e-4).
func TestSampleInPlaceUniform(t *testing.T) {
	r := NewSeeded(4)
	counts := map[[2]int]int{}
	const n = 100_000
	for i := 0; i < n; i++ {
		s := SampleInPlace(r, []int{0, 1, 2, 3, 4}, 2)
		a, b := min(s[0], s[1]), max(s[0], s[1])
		counts[[2]int{a, b}]++
	}
	if len(counts) != 10 {
		t.Fatalf("saw %d subsets, want 10", len(counts))
	}
	exp := float64(n) / 10
	chi := 0.0
	for _, c := range counts {
		chi += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	if chi > 33.7 { // χ²₉ upper 1e-4 quantile
		t.Errorf("chi-square %.1f", chi)
	}
	if got := SampleInPlace(r, []int{1, 2}, 5); len(got) != 2 {
		t.Errorf("k > len returned %v", got)
	}
}

func TestSources(t *testing.T) {
	a, b := NewSeeded(7), NewSeeded(7)
	for i := 0; i < 10; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatal("seeded sources with the same seed differ")
		}
	}
	c := New()
	seen := map[uint64]bool{}
	for i := 0; i < 1000; i++ { // crosses ChaCha8's 1 KiB key erasure
		seen[c.Uint64()] = true
	}
	if len(seen) != 1000 {
		t.Errorf("crypto source repeated values: %d distinct of 1000", len(seen))
	}
}

// leadingZeros is a source whose words often start with many zero bits, so
// that Bernoulli's slow paths (several words, a comparison of mantissas) run
// often.
type leadingZeros struct{ r *rand.Rand }

func (s leadingZeros) Uint64() uint64 {
	switch s.r.IntN(4) {
	case 0:
		return 0
	case 1:
		return s.r.Uint64() >> s.r.IntN(64)
	}
	return s.r.Uint64()
}

// TestBernoulliBelowSameDraws checks BernoulliBelow's promise: for every
// p() in (0, 2^−k) it returns what Bernoulli returns and leaves the source in
// the same state, including when the first word does not decide.
func TestBernoulliBelowSameDraws(t *testing.T) {
	g := rand.New(rand.NewPCG(3, 4))
	slow := 0
	for trial := range 200_000 {
		k := 1 + g.IntN(64)
		// p just below 2^−k, or anywhere below, down to subnormals.
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
		called := false
		got := BernoulliBelow(a, k, func() float64 { called = true; return p })
		if called {
			slow++
		}
		if want := Bernoulli(b, p); got != want || a.Uint64() != b.Uint64() {
			t.Fatalf("k=%d p=%g: BernoulliBelow %v, Bernoulli %v (or the sources diverged)", k, p, got, want)
		}
	}
	if slow < 1000 {
		t.Fatalf("the probability was evaluated only %d times: the slow path is barely tested", slow)
	}
}

func TestBernoulliBelowRefusesWrongBound(t *testing.T) {
	zero := rand.New(leadingZeros{rand.New(rand.NewPCG(1, 1))})
	for _, p := range []float64{0, 0.25, 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("p = %v with k = 2 did not panic", p)
				}
			}()
			for range 1000 { // until a first word leaves the decision to p
				BernoulliBelow(zero, 2, func() float64 { return p })
			}
		}()
	}
}

// TestNewKeysEachStream checks that New keys every generator afresh: two
// releases' streams share no prefix (equal first words would mean a reused
// key, with probability 2^-64 otherwise).
func TestNewKeysEachStream(t *testing.T) {
	seen := map[uint64]bool{}
	for i := 0; i < 100; i++ {
		w := New().Uint64()
		if seen[w] {
			t.Fatalf("two generators from New start with the same word %#x", w)
		}
		seen[w] = true
	}
}
