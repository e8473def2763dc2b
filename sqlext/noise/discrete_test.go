package noise

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// minPValue is the goodness-of-fit threshold. The randomness is seeded, so a
// test either always passes or always fails; 1e-4 keeps the chance that a
// correct sampler fails for an unlucky seed negligible while a sampler off by
// a few percent in any bin fails at these sample sizes.
const minPValue = 1e-4

// TestBernoulliExpFrequency: the frequency of BernoulliExp(n/d) matches
// e^(−n/d) within 5 binomial standard deviations, on both the machine-word
// and the big-integer paths.
func TestBernoulliExpFrequency(t *testing.T) {
	r := securerand.NewSeeded(11)
	huge := new(big.Int).Lsh(big.NewInt(1), 80) // forces the big path
	cases := []struct {
		name string
		n, d *big.Int
	}{
		{"0", big.NewInt(0), big.NewInt(1)},
		{"1/3", big.NewInt(1), big.NewInt(3)},
		{"1", big.NewInt(1), big.NewInt(1)},
		{"5/2", big.NewInt(5), big.NewInt(2)},
		{"10", big.NewInt(10), big.NewInt(1)},
		{"0.7 big", new(big.Int).Mul(huge, big.NewInt(7)), new(big.Int).Mul(huge, big.NewInt(10))},
		{"2.25 big", new(big.Int).Mul(huge, big.NewInt(9)), new(big.Int).Mul(huge, big.NewInt(4))},
	}
	const trials = 200_000
	for _, c := range cases {
		hits := 0
		for range trials {
			if BernoulliExp(r, c.n, c.d) {
				hits++
			}
		}
		g, _ := new(big.Rat).SetFrac(c.n, c.d).Float64()
		p := math.Exp(-g)
		sd := math.Sqrt(trials * p * (1 - p))
		if math.Abs(float64(hits)-trials*p) > 5*sd+1 {
			t.Errorf("BernoulliExp(%s): %d of %d, expected %.0f ± %.0f", c.name, hits, trials, trials*p, 5*sd)
		}
	}
}

// chiSquare returns the p-value of observed counts against expected counts
// (same length, expected > 0) with len−1 degrees of freedom.
func chiSquare(observed []int, expected []float64) (stat float64, p float64) {
	for i, e := range expected {
		d := float64(observed[i]) - e
		stat += d * d / e
	}
	return stat, distuv.ChiSquared{K: float64(len(expected) - 1)}.Survival(stat)
}

// binned groups samples into bins of consecutive integers [lo_i, hi_i] that
// each expect at least 20 draws, with the two open tails as their own bins,
// and returns observed and expected counts. cdf(y) is P(Y ≤ y).
func binned(samples []int64, cdf func(y int64) float64, width int64, maxAbs int64) ([]int, []float64) {
	n := float64(len(samples))
	// Edges: (−∞, −maxAbs−1], then bins of width, …, then [maxAbs+1, ∞).
	var edges []int64 // bin i covers (edges[i−1], edges[i]]
	for e := -maxAbs - 1; e <= maxAbs; e += width {
		edges = append(edges, e)
	}
	edges = append(edges, math.MaxInt64)
	expected := make([]float64, len(edges))
	prev := 0.0
	for i, e := range edges {
		c := 1.0
		if e != math.MaxInt64 {
			c = cdf(e)
		}
		expected[i] = (c - prev) * n
		prev = c
	}
	observed := make([]int, len(edges))
	for _, y := range samples {
		lo, hi := 0, len(edges)-1
		for lo < hi { // first edge ≥ y
			mid := (lo + hi) / 2
			if edges[mid] >= y {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		observed[lo]++
	}
	// Merge bins expecting fewer than 20 draws into their neighbour toward
	// the centre.
	var obs []int
	var exp []float64
	accO, accE := 0, 0.0
	for i := range edges {
		accO += observed[i]
		accE += expected[i]
		if accE >= 20 || i == len(edges)-1 {
			obs = append(obs, accO)
			exp = append(exp, accE)
			accO, accE = 0, 0
		}
	}
	if len(exp) > 1 && exp[len(exp)-1] < 20 { // fold a thin last bin back
		exp[len(exp)-2] += exp[len(exp)-1]
		obs[len(obs)-2] += obs[len(obs)-1]
		exp, obs = exp[:len(exp)-1], obs[:len(obs)-1]
	}
	return obs, exp
}

func sampleN(t *testing.T, n int, draw func() (int64, error)) []int64 {
	t.Helper()
	out := make([]int64, n)
	for i := range out {
		y, err := draw()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = y
	}
	return out
}

// TestLaplaceGoodnessOfFit: discrete Laplace draws fit the exact pmf
// (χ² test, 200,000 draws per scale) and their variance matches 2p/(1−p)².
func TestLaplaceGoodnessOfFit(t *testing.T) {
	r := securerand.NewSeeded(12)
	for _, sc := range []struct{ num, den uint64 }{{1, 2}, {1, 1}, {37, 10}, {1000, 1}, {1 << 40, 3}} {
		l, err := NewLaplace(sc.num, sc.den)
		if err != nil {
			t.Fatal(err)
		}
		b := float64(sc.num) / float64(sc.den)
		cdf := l.CDF
		samples := sampleN(t, 200_000, func() (int64, error) { return l.Sample(r) })
		width := max(int64(1), int64(b/4))
		obs, exp := binned(samples, cdf, width, int64(8*b)+2)
		stat, pv := chiSquare(obs, exp)
		if pv < minPValue {
			t.Errorf("Laplace(%d/%d): χ² = %.1f on %d bins, p = %.2g", sc.num, sc.den, stat, len(exp), pv)
		} else {
			t.Logf("Laplace(%d/%d): χ² = %.1f on %d bins, p = %.2g", sc.num, sc.den, stat, len(exp), pv)
		}
		checkVariance(t, "Laplace", samples, l.Variance())
	}
}

// checkVariance fails when the sample variance is outside 6 standard errors
// of want (the standard error of a variance estimate is about
// want·√((κ−1)/n) with kurtosis κ ≤ 6 for these distributions).
func checkVariance(t *testing.T, name string, samples []int64, want float64) {
	t.Helper()
	var s, s2 float64
	for _, y := range samples {
		f := float64(y)
		s += f
		s2 += f * f
	}
	n := float64(len(samples))
	v := s2/n - (s/n)*(s/n)
	if se := want * math.Sqrt(5/n); math.Abs(v-want) > 6*se {
		t.Errorf("%s: sample variance %.6g, want %.6g ± %.2g", name, v, want, 6*se)
	}
}

// TestGaussianGoodnessOfFit: discrete Gaussian draws fit the pmf (χ² test,
// 200,000 draws per σ²), on small σ where the lattice matters, on the
// machine-word acceptance path and on the big-integer path.
func TestGaussianGoodnessOfFit(t *testing.T) {
	r := securerand.NewSeeded(13)
	for _, s2 := range []*big.Rat{
		big.NewRat(1, 4), big.NewRat(1, 1), big.NewRat(5, 2), big.NewRat(100, 1),
		new(big.Rat).SetFrac(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 40), big.NewInt(1)), big.NewInt(3)),
	} {
		g, err := NewGaussian(s2)
		if err != nil {
			t.Fatal(err)
		}
		sf, _ := s2.Float64()
		sigma := math.Sqrt(sf)
		cdf := g.CDF
		samples := sampleN(t, 200_000, func() (int64, error) { return g.Sample(r) })
		width := max(int64(1), int64(sigma/4))
		obs, exp := binned(samples, cdf, width, int64(5*sigma)+2)
		stat, pv := chiSquare(obs, exp)
		if pv < minPValue {
			t.Errorf("Gaussian(σ²=%s): χ² = %.1f on %d bins, p = %.2g", s2.RatString(), stat, len(exp), pv)
		} else {
			t.Logf("Gaussian(σ²=%s): χ² = %.1f on %d bins, p = %.2g", s2.RatString(), stat, len(exp), pv)
		}
		checkVariance(t, "Gaussian "+s2.RatString(), samples, g.Variance())
		if v := g.Variance(); v > sf*(1+1e-12) {
			t.Errorf("Gaussian(σ²=%s): variance %v above σ²", s2.RatString(), v)
		}
	}
}

// TestHalfWidth: the 95 % half-width w is the smallest integer with
// P(|Y| ≤ w) ≥ 0.95.
func TestHalfWidth(t *testing.T) {
	l, _ := NewLaplace(37, 10)
	w := l.HalfWidth(0.95)
	mass := func(pmf func(int64) float64, w int64) float64 {
		m := pmf(0)
		for z := int64(1); z <= w; z++ {
			m += 2 * pmf(z)
		}
		return m
	}
	if mass(l.PMF, w) < 0.95 || mass(l.PMF, w-1) >= 0.95 {
		t.Errorf("Laplace half-width %d: mass %v, at w−1 %v", w, mass(l.PMF, w), mass(l.PMF, w-1))
	}
	g, _ := NewGaussian(big.NewRat(25, 1))
	w = g.HalfWidth(0.95)
	if mass(g.PMF, w) < 0.95 || mass(g.PMF, w-1) >= 0.95 {
		t.Errorf("Gaussian half-width %d: mass %v, at w−1 %v", w, mass(g.PMF, w), mass(g.PMF, w-1))
	}
	if w < 9 || w > 10 { // ≈ 1.96·5
		t.Errorf("Gaussian σ=5 half-width %d, want about 9.8", w)
	}
}

// TestCDF: the CDFs agree with the summed PMFs, on both sides of 0.
func TestCDF(t *testing.T) {
	l, _ := NewLaplace(37, 10)
	g, _ := NewGaussian(big.NewRat(5, 2))
	for _, d := range []struct {
		name     string
		pmf, cdf func(int64) float64
	}{{"Laplace", l.PMF, l.CDF}, {"Gaussian", g.PMF, g.CDF}} {
		c := 0.0
		for y := int64(-200); y <= 40; y++ {
			c += d.pmf(y)
			if y >= -40 && math.Abs(c-d.cdf(y)) > 1e-12 {
				t.Fatalf("%s: CDF(%d) = %v, summed PMF %v", d.name, y, d.cdf(y), c)
			}
		}
	}
}

// TestLaplaceHugeScale: the float helpers stay finite and right where
// p = e^(−1/b) rounds to 1.
func TestLaplaceHugeScale(t *testing.T) {
	l, err := NewLaplace(1<<60, 1)
	if err != nil {
		t.Fatal(err)
	}
	b := math.Ldexp(1, 60)
	if v := l.Variance(); math.Abs(v/(2*b*b)-1) > 1e-9 {
		t.Errorf("variance %v, want 2b² = %v", v, 2*b*b)
	}
	if w, want := float64(l.HalfWidth(0.95)), b*math.Log(20); math.Abs(w/want-1) > 1e-9 {
		t.Errorf("half-width %v, want b·ln 20 = %v", w, want)
	}
	if c := l.CDF(0); math.Abs(c-0.5) > 1e-9 {
		t.Errorf("CDF(0) = %v", c)
	}
}

// TestOutOfRange: a scale near 2^62 overflows int64 on a few percent of
// draws; those return ErrOutOfRange, never a wrapped value.
func TestOutOfRange(t *testing.T) {
	r := securerand.NewSeeded(14)
	l, err := NewLaplace(1<<62, 1)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for range 2000 {
		y, err := l.Sample(r)
		switch {
		case errors.Is(err, ErrOutOfRange):
			bad++
		case err != nil:
			t.Fatal(err)
		case y == math.MinInt64:
			t.Fatalf("wrapped value %d", y)
		}
	}
	// |Y| ≥ 2^63 needs U + t·V ≥ 2^63, i.e. V ≥ 2 (probability e^(−2)·… ≈ 12 %).
	if bad == 0 || bad > 600 {
		t.Errorf("%d of 2000 draws out of range, expected about 12 %%", bad)
	}
}

// TestRoundUp: RoundUp never rounds down and keeps the precision asked for.
func TestRoundUp(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		x := new(big.Rat).SetFloat64(math.Ldexp(r.Float64()+0.01, r.IntN(120)-60))
		for _, prec := range []int{2, 16, 48} {
			y := RoundUp(x, prec)
			if y.Cmp(x) < 0 {
				t.Fatalf("RoundUp(%s, %d) = %s is below", x.RatString(), prec, y.RatString())
			}
			diff, _ := new(big.Rat).Quo(new(big.Rat).Sub(y, x), x).Float64()
			if diff > math.Ldexp(1, 1-prec) {
				t.Fatalf("RoundUp(%s, %d) = %s: relative excess %g", x.FloatString(10), prec, y.FloatString(10), diff)
			}
		}
	}
	if got := RoundUp(big.NewRat(7, 2), 0); got.Cmp(big.NewRat(4, 1)) != 0 {
		t.Errorf("RoundUp(7/2, 0) = %s, want 4", got.RatString())
	}
}

func TestConstructorsRejectBadScales(t *testing.T) {
	if _, err := NewLaplace(0, 1); err == nil {
		t.Error("NewLaplace(0, 1) accepted")
	}
	if _, err := NewLaplace(1, 0); err == nil {
		t.Error("NewLaplace(1, 0) accepted")
	}
	if _, err := NewGaussian(new(big.Rat)); err == nil {
		t.Error("NewGaussian(0) accepted")
	}
	if _, err := NewGaussian(new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 130))); err == nil {
		t.Error("NewGaussian(2^130) accepted")
	}
}
