// Exact samplers (discrete.go). This file samples exactly from the discrete Laplace and discrete
// Gaussian distributions on the integers, the integer-valued noises of the
// DP aggregates (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for
// Differential Privacy", NeurIPS; CKS20 below).
//
// Exact means that no sampling decision uses floating point: every decision
// is a comparison of uniformly random integers (math/rand/v2's Uint64N, which
// is exactly uniform by rejection) with integers derived from the rational
// parameters, so the output distribution is the stated one to the last bit.
// Parameters are rationals (math/big.Rat); a caller with a float64 scale
// rounds it up to a rational first (see RoundUp), so that privacy is never
// weaker than the float asked for.
//
// The algorithms are those of CKS20:
//
//   - Algorithm 1, BernoulliExp: Bernoulli(exp(−γ)) for rational γ ≥ 0. For
//     γ ∈ [0, 1], draw A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the first
//     A_k = 0 and return whether that k is odd: P(k odd) = Σ_k (−γ)^(k−1)/(k−1)!
//     ·(1 − γ/k)… = e^(−γ). For γ > 1, return ∧_{i ≤ ⌊γ⌋} Bernoulli(e^(−1)) ∧
//     Bernoulli(e^(−(γ−⌊γ⌋))). Bernoulli(n/(d·k)) is drawn as
//     Bernoulli(n/d) ∧ Bernoulli(1/k) (independent), so only integers of the
//     size of d are ever drawn.
//   - Algorithm 2, Laplace: P(Y = y) ∝ exp(−|y|·s/t) for integers t, s ≥ 1.
//     U uniform on {0, …, t−1} accepted with probability e^(−U/t) and V
//     geometric (the number of Bernoulli(e^(−1)) successes before the first
//     failure) make X = U + t·V geometric with P(X = x) ∝ e^(−x/t); ⌊X/s⌋ is
//     then geometric with ratio e^(−s/t); a fair sign, rejecting "−0", gives
//     the two-sided distribution.
//   - Algorithm 3, Gaussian: P(Y = y) ∝ exp(−y²/(2σ²)) for rational σ². With
//     t = ⌊σ⌋ + 1, draw Y from the discrete Laplace of scale t and accept it
//     with probability exp(−(|Y| − σ²/t)²/(2σ²)), an exact BernoulliExp with
//     γ = (|Y|·q·t − p)²/(2·p·q·t²) for σ² = p/q.
//
// Samples are int64. A draw whose magnitude would not fit (probability below
// e^(−2^63/scale), for instance e^(−8192) at scale 2^50) returns
// ErrOutOfRange instead of a wrapped or saturated value.

package noise

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"sync"
)

// ErrOutOfRange reports a draw whose magnitude does not fit in an int64.
var ErrOutOfRange = errors.New("discrete: noise sample outside the int64 range")

// BernoulliExp returns true with probability exactly exp(−n/d), for n ≥ 0
// and d > 0 (CKS20 Algorithm 1). It panics on other arguments.
func BernoulliExp(r *rand.Rand, n, d *big.Int) bool {
	if n.Sign() < 0 || d.Sign() <= 0 {
		panic("discrete: BernoulliExp needs n ≥ 0 and d > 0")
	}
	if n.IsUint64() && d.IsUint64() {
		return bernoulliExp64(r, n.Uint64(), d.Uint64())
	}
	q, rem := new(big.Int).QuoRem(n, d, new(big.Int))
	if !expIntegerPart(r, q) {
		return false
	}
	return bernoulliExpFracBig(r, rem, d, new(big.Int))
}

var one = big.NewInt(1)

// bernoulliExp64 is BernoulliExp on machine words.
func bernoulliExp64(r *rand.Rand, n, d uint64) bool {
	// ⌊n/d⌋ independent Bernoulli(e^(−1)) draws; each fails with probability
	// 1 − e^(−1), so the expected number is below 1.6 however large n/d is.
	for q := n / d; q > 0; q-- {
		if !bernoulliExpFrac64(r, 1, 1) {
			return false
		}
	}
	return bernoulliExpFrac64(r, n%d, d)
}

// bernoulliExpFrac64 returns true with probability exp(−n/d) for 0 ≤ n ≤ d,
// d > 0: the first k with A_k = 0, A_k ~ Bernoulli(n/(d·k)), is odd.
func bernoulliExpFrac64(r *rand.Rand, n, d uint64) bool {
	k := uint64(1)
	for {
		// A_k = Bernoulli(n/d) ∧ Bernoulli(1/k).
		if r.Uint64N(d) >= n {
			break
		}
		if k > 1 && r.Uint64N(k) != 0 {
			break
		}
		k++
	}
	return k%2 == 1
}

// bernoulliExpFracBig is bernoulliExpFrac64 for big n ≤ d; tmp is scratch.
func bernoulliExpFracBig(r *rand.Rand, n, d, tmp *big.Int) bool {
	k := uint64(1)
	for {
		if uniformBig(r, d, tmp).Cmp(n) >= 0 {
			break
		}
		if k > 1 && r.Uint64N(k) != 0 {
			break
		}
		k++
	}
	return k%2 == 1
}

// uniformBig sets z to a uniform integer in [0, n) for n > 0 and returns it:
// draw n's bit length in random bits and reject values ≥ n (fewer than two
// tries on average).
func uniformBig(r *rand.Rand, n, z *big.Int) *big.Int {
	nb := n.BitLen()
	words := (nb + 63) / 64
	buf := make([]big.Word, words*(64/bits.UintSize))
	for {
		for i := 0; i < words; i++ {
			w := r.Uint64()
			if i == words-1 && nb%64 != 0 {
				w >>= 64 - uint(nb%64)
			}
			if bits.UintSize == 64 {
				buf[i] = big.Word(w)
			} else {
				buf[2*i] = big.Word(uint32(w))
				buf[2*i+1] = big.Word(w >> 32)
			}
		}
		z.SetBits(buf)
		if z.Cmp(n) < 0 {
			return z
		}
		buf = make([]big.Word, len(buf)) // SetBits aliased buf
	}
}

// geometric returns the number of Bernoulli(e^(−1)) successes before the
// first failure: P(V = v) = e^(−v)(1 − e^(−1)).
func geometric(r *rand.Rand) uint64 {
	v := uint64(0)
	for bernoulliExpFrac64(r, 1, 1) {
		v++
	}
	return v
}

// laplace64 draws from P(Y = y) ∝ exp(−|y|·s/t) (CKS20 Algorithm 2) for
// t, s ≥ 1.
func laplace64(r *rand.Rand, t, s uint64) (int64, error) {
	for {
		u := r.Uint64N(t)
		if !bernoulliExpFrac64(r, u, t) {
			continue
		}
		v := geometric(r)
		// x = u + t·v in 128 bits, y = ⌊x/s⌋.
		hi, lo := bits.Mul64(t, v)
		var c uint64
		lo, c = bits.Add64(lo, u, 0)
		hi += c
		if hi >= s {
			return 0, ErrOutOfRange
		}
		y, _ := bits.Div64(hi, lo, s)
		neg := r.Uint64()&1 == 1
		if neg && y == 0 {
			continue
		}
		if y > math.MaxInt64 {
			return 0, ErrOutOfRange
		}
		if neg {
			return -int64(y), nil
		}
		return int64(y), nil
	}
}

// Laplace is the discrete Laplace distribution with scale b = t/s:
// P(Y = y) = (1 − p)/(1 + p)·p^|y| with p = e^(−1/b).
type Laplace struct {
	t, s  uint64
	scale *big.Rat
}

// NewLaplace returns the discrete Laplace distribution of scale b = num/den
// exactly (num, den ≥ 1, both below 2^63). Privacy calibrations pass a scale
// already rounded up (RoundUp).
func NewLaplace(num, den uint64) (*Laplace, error) {
	if num == 0 || den == 0 || num > math.MaxInt64 || den > math.MaxInt64 {
		return nil, fmt.Errorf("discrete: Laplace scale %d/%d must have a numerator and a denominator from 1 to 2^63−1", num, den)
	}
	g := gcd(num, den)
	num, den = num/g, den/g
	return &Laplace{t: num, s: den, scale: new(big.Rat).SetFrac(new(big.Int).SetUint64(num), new(big.Int).SetUint64(den))}, nil
}

// NewLaplaceRat is NewLaplace for a rational scale.
func NewLaplaceRat(scale *big.Rat) (*Laplace, error) {
	if scale.Sign() <= 0 || !scale.Num().IsUint64() || !scale.Denom().IsUint64() {
		return nil, fmt.Errorf("discrete: Laplace scale %s must be positive with numerator and denominator below 2^63", scale.RatString())
	}
	return NewLaplace(scale.Num().Uint64(), scale.Denom().Uint64())
}

// Scale returns b.
func (l *Laplace) Scale() *big.Rat { return new(big.Rat).Set(l.scale) }

// Sample draws one value.
func (l *Laplace) Sample(r *rand.Rand) (int64, error) { return laplace64(r, l.t, l.s) }

// params returns b, p = e^(−1/b) and 1 − p, the last through expm1 so that
// it keeps its digits when b is large (p rounds to 1 from b ≈ 2^53 on).
func (l *Laplace) params() (b, p, q float64) {
	b, _ = l.scale.Float64()
	return b, math.Exp(-1 / b), -math.Expm1(-1 / b)
}

// PMF returns P(Y = y) = (1 − p)/(1 + p)·e^(−|y|/b), evaluated in floating
// point (for tests and reports; sampling never uses it).
func (l *Laplace) PMF(y int64) float64 {
	b, p, q := l.params()
	return q / (1 + p) * math.Exp(-math.Abs(float64(y))/b)
}

// CDF returns P(Y ≤ y): e^(y/b)/(1 + p) below 0, 1 − e^(−(y+1)/b)/(1 + p)
// from 0.
func (l *Laplace) CDF(y int64) float64 {
	b, p, _ := l.params()
	if y < 0 {
		return math.Exp(float64(y)/b) / (1 + p)
	}
	return 1 - math.Exp(-(float64(y)+1)/b)/(1+p)
}

// Variance returns Var(Y) = 2p/(1 − p)².
func (l *Laplace) Variance() float64 {
	_, p, q := l.params()
	return 2 * p / (q * q)
}

// HalfWidth returns the smallest integer w with P(|Y| ≤ w) ≥ level, from
// P(|Y| > w) = 2e^(−(w+1)/b)/(1 + p): w = ⌈b·ln(2/((1 − level)(1 + p)))⌉ − 1,
// checked against its neighbours.
func (l *Laplace) HalfWidth(level float64) int64 {
	b, p, _ := l.params()
	mass := func(w float64) float64 { return 1 - 2*math.Exp(-(w+1)/b)/(1+p) }
	w := max(math.Ceil(b*math.Log(2/((1-level)*(1+p))))-1, 0)
	for i := 0; i < 4 && w > 0 && mass(w-1) >= level; i++ {
		w--
	}
	for i := 0; i < 4 && mass(w) < level; i++ {
		w++
	}
	return int64(w)
}

// Gaussian is the discrete Gaussian distribution N_Z(0, σ²) with rational
// σ² = p/q: P(Y = y) = e^(−y²/(2σ²)) / Σ_z e^(−z²/(2σ²)). Its variance is
// below σ² (CKS20 Proposition 19), and its privacy is that of the
// continuous Gaussian in zero-concentrated DP: for integer queries of ℓ2
// sensitivity Δ, adding independent N_Z(0, σ²) per coordinate is
// Δ²/(2σ²)-zCDP (CKS20 Theorems 4 and 14).
type Gaussian struct {
	p, q   *big.Int
	t      uint64
	den    *big.Int // 2·p·q·t²
	qt     *big.Int // q·t
	sigma2 *big.Rat

	normOnce sync.Once
	normVal  float64
}

// NewGaussian returns N_Z(0, σ²) for rational σ² > 0 with σ < 2^62.
func NewGaussian(sigma2 *big.Rat) (*Gaussian, error) {
	if sigma2.Sign() <= 0 {
		return nil, fmt.Errorf("discrete: Gaussian σ² must be positive, got %s", sigma2.RatString())
	}
	p, q := new(big.Int).Set(sigma2.Num()), new(big.Int).Set(sigma2.Denom())
	fl := new(big.Int).Quo(p, q) // ⌊σ²⌋
	s := new(big.Int).Sqrt(fl)   // ⌊σ⌋ = ⌊√⌊σ²⌋⌋
	if s.BitLen() > 62 {
		return nil, fmt.Errorf("discrete: Gaussian σ² = %s is too large (σ must be below 2^62)", sigma2.FloatString(3))
	}
	t := s.Uint64() + 1
	bt := new(big.Int).SetUint64(t)
	qt := new(big.Int).Mul(q, bt)
	den := new(big.Int).Mul(p, qt)
	den.Mul(den, bt)
	den.Lsh(den, 1)
	return &Gaussian{p: p, q: q, t: t, den: den, qt: qt, sigma2: new(big.Rat).Set(sigma2)}, nil
}

// Sigma2 returns σ².
func (g *Gaussian) Sigma2() *big.Rat { return new(big.Rat).Set(g.sigma2) }

// Sample draws one value (CKS20 Algorithm 3).
func (g *Gaussian) Sample(r *rand.Rand) (int64, error) {
	num := new(big.Int)
	rem := new(big.Int)
	tmp := new(big.Int)
	for {
		y, err := laplace64(r, g.t, 1)
		if err != nil {
			return 0, err
		}
		// γ = (|y|·q·t − p)² / (2·p·q·t²).
		num.SetUint64(uint64(abs64(y)))
		num.Mul(num, g.qt)
		num.Sub(num, g.p)
		num.Mul(num, num)
		if num.IsUint64() && g.den.IsUint64() {
			if bernoulliExp64(r, num.Uint64(), g.den.Uint64()) {
				return y, nil
			}
			continue
		}
		if g.bernoulliExpBig(r, num, rem, tmp) {
			return y, nil
		}
	}
}

// bernoulliExpBig is BernoulliExp(num/g.den) reusing scratch integers.
func (g *Gaussian) bernoulliExpBig(r *rand.Rand, num, rem, tmp *big.Int) bool {
	quo, _ := tmp.QuoRem(num, g.den, rem)
	if !expIntegerPart(r, quo) {
		return false
	}
	return bernoulliExpFracBig(r, rem, g.den, tmp)
}

// expIntegerPart returns the conjunction of q independent Bernoulli(e^(−1))
// draws (true with probability e^(−q)), decrementing q to 0 or stopping at the
// first failure; q is modified.
func expIntegerPart(r *rand.Rand, q *big.Int) bool {
	if q.IsUint64() {
		for n := q.Uint64(); n > 0; n-- {
			if !bernoulliExpFrac64(r, 1, 1) {
				return false
			}
		}
		return true
	}
	for ; q.Sign() > 0; q.Sub(q, one) {
		if !bernoulliExpFrac64(r, 1, 1) {
			return false
		}
	}
	return true
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// exactSumLimit bounds σ for the summed PMF, variance and quantiles; above it
// the continuous formulas are used, which differ from the discrete ones by
// less than e^(−2π²σ²) relative (CKS20 Proposition 19 and §2.1).
const exactSumLimit = 20_000

func (g *Gaussian) sigma() float64 {
	s2, _ := g.sigma2.Float64()
	return math.Sqrt(s2)
}

// norm returns Σ_z e^(−z²/(2σ²)), computed once.
func (g *Gaussian) norm() float64 {
	g.normOnce.Do(func() {
		s := g.sigma()
		if s > exactSumLimit {
			g.normVal = s * math.Sqrt(2*math.Pi)
			return
		}
		s2 := s * s
		total := 1.0
		for z := 1.0; z <= 40*s+10; z++ {
			total += 2 * math.Exp(-z*z/(2*s2))
		}
		g.normVal = total
	})
	return g.normVal
}

// CDF returns P(Y ≤ y), summed for σ ≤ 20,000 (O(|y| + σ) terms) and from
// the continuous normal with a continuity correction above.
func (g *Gaussian) CDF(y int64) float64 {
	s := g.sigma()
	if s > exactSumLimit {
		return 0.5 * math.Erfc(-(float64(y)+0.5)/(s*math.Sqrt2))
	}
	// Sum the smaller side: P(Y ≤ y) for y < 0, else 1 − P(Y ≤ −y−1).
	neg := y < 0
	if !neg {
		y = -y - 1
	}
	s2 := s * s
	tail := 0.0
	for z := float64(y); z >= -(40*s + 10); z-- {
		tail += math.Exp(-z * z / (2 * s2))
	}
	tail /= g.norm()
	if neg {
		return tail
	}
	return 1 - tail
}

// PMF returns P(Y = y), evaluated in floating point (for tests and reports;
// sampling never uses it).
func (g *Gaussian) PMF(y int64) float64 {
	s := g.sigma()
	fy := float64(y)
	return math.Exp(-fy*fy/(2*s*s)) / g.norm()
}

// Variance returns Var(Y) (below σ²), summed for σ ≤ 20,000 and σ² above.
func (g *Gaussian) Variance() float64 {
	s := g.sigma()
	if s > exactSumLimit {
		return s * s
	}
	s2 := s * s
	total := 0.0
	for z := 1.0; z <= 40*s+10; z++ {
		total += 2 * z * z * math.Exp(-z*z/(2*s2))
	}
	return total / g.norm()
}

// HalfWidth returns the smallest integer w with P(|Y| ≤ w) ≥ level, summed
// for σ ≤ 20,000; above, ⌈z·σ⌉ with z the continuous two-sided quantile.
func (g *Gaussian) HalfWidth(level float64) int64 {
	s := g.sigma()
	if s > exactSumLimit {
		return int64(math.Ceil(normalQuantile((1+level)/2) * s))
	}
	s2 := s * s
	n := g.norm()
	mass := 1 / n
	w := int64(0)
	for mass < level {
		w++
		fw := float64(w)
		mass += 2 * math.Exp(-fw*fw/(2*s2)) / n
	}
	return w
}

// normalQuantile is Φ⁻¹(p) for the standard normal, by bisection on erfc.
func normalQuantile(p float64) float64 {
	lo, hi := -40.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(-mid/math.Sqrt2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// RoundUp returns the smallest rational m/2^k ≥ x whose numerator m has
// about bitsOfPrecision significant bits (k ≥ 0; k = 0, rounding up to an
// integer, once x ≥ 2^bitsOfPrecision). The relative excess is below
// 2^(1−bitsOfPrecision). It is how a calibration becomes a sampler parameter
// that is never smaller than asked for.
func RoundUp(x *big.Rat, bitsOfPrecision int) *big.Rat {
	if x.Sign() <= 0 {
		return new(big.Rat)
	}
	// x ≥ 2^(nb−db−1), so x·2^k ≥ 2^(bitsOfPrecision−1).
	k := bitsOfPrecision - (x.Num().BitLen() - x.Denom().BitLen())
	if k < 0 {
		k = 0
	}
	scaled := new(big.Int).Lsh(x.Num(), uint(k))
	m, rem := new(big.Int).QuoRem(scaled, x.Denom(), new(big.Int))
	if rem.Sign() != 0 {
		m.Add(m, one)
	}
	return new(big.Rat).SetFrac(m, new(big.Int).Lsh(one, uint(k)))
}
