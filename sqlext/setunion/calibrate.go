package setunion

import (
	"math"
	"math/rand/v2"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Calibration is what a release will use, computed from options alone (no
// data): the noise kind and scale, the threshold ρ and the cutoff Γ. It is
// what `dpsql params` prints, so that users can see how thresholds are chosen.
type Calibration struct {
	Mechanism Mechanism `json:"mechanism"`
	Epsilon   float64   `json:"epsilon"`
	Delta     float64   `json:"delta"`
	// MaxItems is the effective Δ0: Options.MaxItems, 1 for single_item, and
	// 0 for the unproven greedy mechanisms, which do not bound users.
	MaxItems int     `json:"max_items"`
	Alpha    float64 `json:"alpha"`
	Noise    Noise   `json:"noise"`
	// Scale is λ (Laplace) or σ (Gaussian); for dp_sips, the σ* of the whole
	// composition (each round's σ is in Rounds); 0 for single_item.
	Scale float64 `json:"scale"`
	// Rho is the release threshold: an item is released iff H[u] + Z > ρ.
	// For single_item it is the smallest user count n with π(n) ≥ 1/2; for
	// dp_sips the threshold of the last round.
	Rho float64 `json:"rho"`
	// Gamma is the cutoff Γ = ρ + α·Scale of the policies and greedy
	// mechanisms (no item is raised above it), 0 for the others.
	Gamma float64 `json:"gamma"`
	// ThresholdDelta is δ_T, the share of δ that pays for the thresholds
	// (items only the added user holds); the rest, δ − δ_T, is the Gaussian
	// mechanism's δ_G. Accounting keeps it apart (package accounting). 0 for
	// single_item and the unproven mechanisms.
	ThresholdDelta float64 `json:"threshold_delta"`
	// Rounds holds the per-round calibration of dp_sips.
	Rounds []Round `json:"rounds,omitempty"`
	// Auto describes the private choice of Δ0 (Options.MaxItems =
	// AutoMaxItems), nil when Δ0 is fixed. Before a release, MaxItems, Rho and
	// Rounds are those of Δ0 = AutoMaxItemsCap (the largest thresholds);
	// Builder.Calibration returns them for the chosen Δ0 after Release.
	Auto *AutoPlan `json:"auto_max_items,omitempty"`

	pi []float64 // single_item: π(0..n*) with π(n*) = 1
}

// AutoPlan is the calibration of the private choice of Δ0: Tests noisy
// tests of sensitivity ≤ 1, each with Gaussian noise of scale TestSigma,
// together the share Share of the Gaussian budget (Tests/TestSigma² =
// Share/σ*²). Chosen is the Δ0 the release chose (0 before it).
type AutoPlan struct {
	Share     float64 `json:"share"`
	Truncate  float64 `json:"truncate"`
	Cap       int     `json:"cap"`
	Tests     int     `json:"tests"`
	TestSigma float64 `json:"test_sigma"`
	Chosen    int     `json:"chosen,omitempty"`
}

// Round is the calibration of one DP-SIPS round r (0-based): its share f_r of
// the Gaussian budget μ² = 1/σ*² and of the threshold's δ, σ_r = σ*/√f_r,
// δ_r = f_r·δ_T, the threshold ρ_r at (σ_r, δ_r), the round's bound Δ0_r and
// its update rule (weighted_gaussian, or policy_gaussian_l2 with cutoff
// Γ_r = ρ_r + α·σ_r).
type Round struct {
	Fraction float64   `json:"fraction"`
	Sigma    float64   `json:"sigma"`
	Delta    float64   `json:"delta"`
	Rho      float64   `json:"rho"`
	MaxItems int       `json:"max_items"`
	Rule     Mechanism `json:"rule"`
	Gamma    float64   `json:"gamma,omitempty"`
}

// Calibrate validates o and computes its calibration (docs/privacy.md §2,
// §5, §6).
//
//	count_laplace       λ = Δ0/ε, ρ = 1 + λ·ln(1/(2(1−(1−δ)^(1/Δ0))))
//	weighted/policy_laplace
//	                    λ = 1/ε,  ρ = max_{t≤Δ0} 1/t + λ·ln(1/(2(1−(1−δ)^(1/t))))
//	count_gaussian      σ = analytic Gaussian (ε, δ/2, Δ2 = √Δ0), ρ = 1 + σ·Φ⁻¹((1−δ/2)^(1/Δ0))
//	weighted/policy_gaussian_*
//	                    σ = analytic Gaussian (ε, δ/2, Δ2 = 1), ρ = max_{t≤Δ0} 1/√t + σ·Φ⁻¹((1−δ/2)^(1/t))
//	greedy_frequency/greedy_public
//	                    λ = 1/ε,  ρ = max(1, 1 + λ·ln((1 + (Δ0−1)·e^(−ε))/(2δ)))
//	greedy_*_unproven   λ = 1/ε,  ρ = 1 + λ·ln(1/(2δ))
//	policies, greedy    Γ = ρ + α·(λ or σ)
//	single_item         π(n) = min(e^ε π(n−1) + δ, 1 − e^(−ε)(1 − π(n−1) − δ), 1), π(0) = 0
//	dp_sips             f_r ∝ 0.2^(R−1−r), σ_r = σ*/√f_r, δ_r = f_r·δ_T (δ_T = 0.2δ), ρ_r as weighted Gaussian
//	                    at (σ_r, δ_r); one round when Δ0 = 1
//	max_items = 0       Gaussian mechanisms: Δ0 chosen privately with 2% of μ² = 1/σ*²,
//	                    σ = σ*/√0.98 for the release; the others: Δ0 = 100
func Calibrate(o Options) (Calibration, error) {
	if err := o.Validate(); err != nil {
		return Calibration{}, err
	}
	if o.MaxItems != AutoMaxItems {
		return calibrate(o, o.MaxItems, 1)
	}
	if !o.Mechanism.AutoCapable() {
		return calibrate(o, FixedMaxItems, 1)
	}
	c, err := calibrate(o, AutoMaxItemsCap, 1-AutoMaxItemsShare)
	if err != nil {
		return c, err
	}
	deltaG, _ := o.Mechanism.DeltaSplit(o.Delta)
	sigmaStar, err := noise.GaussianSigma(o.Epsilon, deltaG, 1)
	if err != nil {
		return Calibration{}, err
	}
	c.Auto = &AutoPlan{Share: AutoMaxItemsShare, Truncate: AutoMaxItemsTruncate, Cap: AutoMaxItemsCap,
		Tests: MaxItemsTests, TestSigma: sigmaStar * math.Sqrt(MaxItemsTests/AutoMaxItemsShare)}
	return c, nil
}

// calibrate computes the calibration of validated options o at Δ0 = d0,
// with the Gaussian part given the share gshare of the budget μ² = 1/σ*²
// (σ = σ*/√gshare; 1 unless Δ0 is chosen privately).
//
// δ is split between the noise (δ_G, Gaussian mechanisms only) and the
// thresholds (δ_T) by DeltaSplit. Every threshold is solved for the failure
// probability δ_T/(1 + δ_T) rather than δ_T: the direction "D ⊂ D′" of the
// proof (package documentation) costs p/(1 − p) for a failure probability p,
// and p = δ_T/(1 + δ_T) makes that exactly δ_T, so the release is (ε, δ)-DP
// as stated.
func calibrate(o Options, d0 int, gshare float64) (Calibration, error) {
	m := o.Mechanism
	c := Calibration{Mechanism: m, Epsilon: o.Epsilon, Delta: o.Delta, MaxItems: d0, Noise: m.Noise()}
	if m.HasCutoff() {
		c.Alpha = o.alpha()
	}
	deltaG, deltaT := m.DeltaSplit(o.Delta)
	c.ThresholdDelta = deltaT
	fail := deltaT / (1 + deltaT) // the thresholds' failure probability
	gauss := func(sens float64) (float64, error) {
		s, err := noise.GaussianSigma(o.Epsilon, deltaG, sens)
		return s / math.Sqrt(gshare), err
	}
	var err error
	switch m {
	case CountLaplace:
		c.Scale = float64(d0) / o.Epsilon
		c.Rho = noise.CountLaplaceThreshold(c.Scale, fail, d0)
	case WeightedLaplace, PolicyLaplace:
		c.Scale = 1 / o.Epsilon
		c.Rho = noise.LaplaceThresholdMax(c.Scale, fail, d0)
	case CountGaussian:
		c.Scale, err = gauss(math.Sqrt(float64(d0)))
		c.Rho = noise.CountGaussianThreshold(c.Scale, 2*fail, d0) // takes δ, fails with δ/2
	case WeightedGaussian, PolicyGaussianL2, PolicyGaussianL1:
		c.Scale, err = gauss(1)
		c.Rho = noise.GaussianThresholdMax(c.Scale, 2*fail, d0) // takes δ, fails with δ/2
	case GreedyFrequency, GreedyPublic:
		c.Scale = 1 / o.Epsilon
		c.Rho = noise.GreedyFloorThreshold(c.Scale, fail, d0)
	case GreedyFrequencyUnproven, GreedyPublicUnproven:
		c.MaxItems = 0
		c.ThresholdDelta = 0 // no proof splits its δ
		c.Scale = 1 / o.Epsilon
		c.Rho = noise.GreedyThreshold(c.Scale, o.Delta)
	case SingleItem:
		c.MaxItems = 1
		c.ThresholdDelta = 0 // π(n) is (ε, δ)-DP by construction, no threshold event
		c.pi, _ = singleItemTable(o.Epsilon, o.Delta)
		for n, p := range c.pi {
			if p >= 0.5 {
				c.Rho = float64(n)
				break
			}
		}
	case DPSIPS:
		c.Scale, err = gauss(1)
		rounds := o.Rounds
		if d0 == 1 {
			// A user with one item loses nothing when others' items are
			// released: later rounds cannot raise any weight.
			rounds = 1
		}
		c.Rounds = sipsRounds(c.Scale, deltaT, d0, rounds)
		c.Rho = c.Rounds[len(c.Rounds)-1].Rho
	}
	if err != nil {
		return Calibration{}, err
	}
	if m.HasCutoff() {
		c.Gamma = c.Rho + c.Alpha*c.Scale
	}
	return c, nil
}

// sipsRounds splits the Gaussian budget μ² = 1/σ*² and the threshold's δ_T
// over R rounds with fractions f_r ∝ SIPSRatio^(R−1−r), r = 0..R−1, so later
// rounds get more (Swanberg, Desfontaines & Haney 2023, who suggest 0.3;
// docs/privacy.md §5). Since
// Σ 1/σ_r² = Σ f_r/σ*² = 1/σ*², the rounds compose to one Gaussian mechanism
// of scale σ*, and the thresholds' failure probabilities δ_r sum to δ_T.
func sipsRounds(sigmaStar, deltaT float64, maxItems, rounds int) []Round {
	w := make([]float64, rounds)
	for r := range w {
		w[r] = math.Pow(SIPSRatio, float64(rounds-1-r))
	}
	plan := make([]RoundPlan, rounds)
	for r := range plan {
		plan[r] = RoundPlan{Weight: w[r], MaxItems: maxItems, Rule: WeightedGaussian}
	}
	return planRounds(sigmaStar, deltaT, plan)
}

// SIPSRounds calibrates R rounds of dp_sips whose Gaussian budget is that of
// one Gaussian mechanism of scale sigma, with thresholds failing with total
// probability deltaT/(1 + deltaT), at bound maxItems (the split of
// Calibrate). The n-gram extractor uses it for a dp_sips unigram level.
func SIPSRounds(sigma, deltaT float64, maxItems, rounds int) []Round {
	if maxItems == 1 {
		rounds = 1
	}
	return sipsRounds(sigma, deltaT, maxItems, rounds)
}

// RoundPlan describes one round of a multi-round release before calibration:
// its relative share of the budget, its bound Δ0_r and its update rule
// (weighted_gaussian or policy_gaussian_l2, with cutoff parameter Alpha).
type RoundPlan struct {
	Weight   float64
	MaxItems int
	Rule     Mechanism
	Alpha    float64
}

// planRounds calibrates rounds: f_r = Weight_r/Σ Weight, σ_r = σ*/√f_r,
// δ_r = f_r·δ_T, ρ_r = max_{t≤Δ0_r} 1/√t + σ_r·Φ⁻¹((1 − p_r)^(1/t)) with the
// failure probability p_r = δ_r/(1 + δ_T) (so that Σ p_r = δ_T/(1 + δ_T), see
// calibrate) and, for a policy round, Γ_r = ρ_r + α·σ_r.
func planRounds(sigmaStar, deltaT float64, plan []RoundPlan) []Round {
	total := 0.0
	for _, p := range plan {
		total += p.Weight
	}
	out := make([]Round, len(plan))
	for r, p := range plan {
		f := p.Weight / total
		s := sigmaStar / math.Sqrt(f)
		// GaussianThresholdMax(σ, δ, t) bounds the failure probability by
		// δ/2; pass twice round r's failure probability.
		rd := Round{Fraction: f, Sigma: s, Delta: f * deltaT, MaxItems: p.MaxItems, Rule: p.Rule,
			Rho: noise.GaussianThresholdMax(s, 2*f*deltaT/(1+deltaT), p.MaxItems)}
		if p.Rule == PolicyGaussianL2 {
			rd.Gamma = rd.Rho + p.Alpha*s
		}
		out[r] = rd
	}
	return out
}

// singleItemTable returns π(0), π(1), …, π(n*) where π(n*) = 1: the release
// probability of an item held by n users when every user contributes one item,
// which is optimal among (ε, δ)-DP mechanisms for Δ0 = 1 (Desfontaines,
// Voss, Gipson & Mandayam, PoPETs 2022):
//
//	π(0) = 0, π(n) = min(e^ε·π(n−1) + δ, 1 − e^(−ε)·(1 − π(n−1) − δ), 1).
//
// It also returns q(n) = 1 − π(n), tracked directly as
// q(n) = max(1 − e^ε·π(n−1) − δ, e^(−ε)·(q(n−1) − δ), 0) so that the upper
// branch keeps full relative precision near π = 1. 1 − π(n) shrinks at least
// geometrically once that branch binds, so the table is finite: about
// (1/ε)·ln(1/δ) entries.
func singleItemTable(eps, delta float64) (pi, q []float64) {
	pi, q = []float64{0}, []float64{1}
	ee, ie := math.Exp(eps), math.Exp(-eps)
	for pi[len(pi)-1] < 1 {
		p, qp := pi[len(pi)-1], q[len(q)-1]
		low := ee*p + delta      // π via the lower constraint
		upQ := ie * (qp - delta) // 1 − π via the upper constraint
		var np, nq float64
		switch {
		case upQ <= 0:
			np, nq = 1, 0
		case low <= 1-upQ:
			np, nq = low, 1-low
		default:
			np, nq = 1-upQ, upQ
		}
		if np <= p { // cannot happen for ε > 0, δ > 0; guards float stagnation
			np, nq = 1, 0
		}
		pi, q = append(pi, np), append(q, nq)
	}
	return pi, q
}

// ReleaseProbability returns P(w + Z > ρ), the probability that an item of
// histogram weight w is released:
//
//	Gaussian  Φ((w − ρ)/σ)
//	Laplace   ½·exp(−(ρ−w)/λ) if w ≤ ρ, else 1 − ½·exp(−(w−ρ)/λ)
//	Exact     π(w) for an item held by w users (single_item)
//
// For dp_sips it is the probability of the last round; use RoundProbability.
func (c Calibration) ReleaseProbability(w float64) float64 {
	switch c.Noise {
	case Gaussian:
		return noise.Phi((w - c.Rho) / c.Scale)
	case Laplace:
		return laplaceSurvival(c.Rho-w, c.Scale)
	default:
		n := int(w)
		if n >= len(c.pi) {
			return 1
		}
		if n < 0 {
			return 0
		}
		return c.pi[n]
	}
}

// RoundProbability is ReleaseProbability for DP-SIPS round r.
func (c Calibration) RoundProbability(r int, w float64) float64 {
	return noise.Phi((w - c.Rounds[r].Rho) / c.Rounds[r].Sigma)
}

// laplaceSurvival returns P(Z > x) for Z ~ Laplace(0, λ).
func laplaceSurvival(x, lambda float64) float64 {
	if x >= 0 {
		return 0.5 * math.Exp(-x/lambda)
	}
	return 1 - 0.5*math.Exp(x/lambda)
}

// tailBits is the k of securerand.BernoulliBelow in the release draws: for
// the weights of the tail (probability below 2^−k) the probability is
// evaluated once in 2^k draws.
const tailBits = 10

// draw is the release decision of one mechanism or dp_sips round: an exact
// Bernoulli draw with probability p(w), nondecreasing in the weight w. For
// w in (lo, hi] it is known that 0 < p(w) < 2^−tailBits, and the draw
// evaluates p only when the first random word does not decide
// (securerand.BernoulliBelow): the same draws and result as
// securerand.Bernoulli(rng, p(w)), for a fraction of the cost, since most
// items of a release lie far below the threshold.
type draw struct {
	p      func(w float64) float64
	lo, hi float64
}

// drawer returns the release decision of c, for dp_sips of round r.
func (c Calibration) drawer(r int) draw {
	var d draw
	center, scale := c.Rho, c.Scale
	switch {
	case c.Mechanism == DPSIPS:
		rd := c.Rounds[r]
		d.p = func(w float64) float64 { return c.RoundProbability(r, w) }
		center, scale = rd.Rho, rd.Sigma
	case c.Noise == Exact:
		d.p = c.ReleaseProbability
		d.lo, d.hi = 1, 0 // a table look-up: no tail
		return d
	default:
		d.p = c.ReleaseProbability
	}
	d.lo, d.hi = tailRange(d.p, center, scale)
	return d
}

// inTail reports whether p(w) is known to lie in (0, 2^−tailBits).
func (d draw) inTail(w float64) bool { return w > d.lo && w <= d.hi }

// draws is securerand.Bernoulli(rng, d.p(w)). In the tail it is
// securerand.BernoulliBelow(rng, tailBits, …) written out: its first word
// decides alone in all but 2^−tailBits of the draws, without a call.
func (d draw) draw(rng *rand.Rand, w float64) bool {
	if d.inTail(w) {
		x := rng.Uint64()
		if x>>(64-tailBits) != 0 {
			return false
		}
		return securerand.BernoulliBelowWord(rng, tailBits, x, d.p(w))
	}
	return securerand.Bernoulli(rng, d.p(w))
}

// tailRange returns lo < hi with 2^−1000 ≤ p(lo) and p(hi) ≤ 2^−(tailBits+1),
// found by bisection over [center − 2000·scale, center], or lo ≥ hi when
// there is no such range. Then every w in (lo, hi] has
// 0 < p(w) < 2^−tailBits: p is nondecreasing (Φ and the Laplace survival
// function of (w − ρ)/scale), and the factors 2 and 2^(1000−1074) between
// these bounds and those BernoulliBelow needs cover the few ulps by which a
// computed erfc or exp may fail to be monotone.
func tailRange(p func(float64) float64, center, scale float64) (lo, hi float64) {
	if !(scale > 0) || math.IsInf(center, 0) || math.IsNaN(center) {
		return 1, 0
	}
	// first returns the smallest-ish w in [a, b] with p(w) > target, given
	// p(a) ≤ target < p(b) (bisection until a and b are adjacent floats).
	bisect := func(a, b, target float64) (float64, float64) {
		for range 200 {
			m := a + (b-a)/2
			if m <= a || m >= b {
				break
			}
			if p(m) > target {
				b = m
			} else {
				a = m
			}
		}
		return a, b
	}
	a, b := center-2000*scale, center
	hiTarget, loTarget := math.Ldexp(1, -(tailBits+1)), math.Ldexp(1, -1000)
	if !(p(a) <= loTarget) || !(p(b) > hiTarget) {
		return 1, 0
	}
	hi, _ = bisect(a, b, hiTarget)  // p(hi) ≤ hiTarget
	_, lo = bisect(a, hi, loTarget) // p(lo) > loTarget
	if !(p(hi) <= hiTarget) || !(p(lo) >= loTarget) {
		return 1, 0
	}
	return lo, hi
}
