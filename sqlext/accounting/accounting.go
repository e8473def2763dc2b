// Package accounting gives the privacy cost of the core's releases and of
// compositions of many releases, in two accountings:
//
//   - basic: a release costs its stated (ε, δ), and k releases cost (Σε, Σδ)
//     (basic composition; Dwork & Roth 2014, Theorem 3.16). This is what a
//     ledger charged before, and what it keeps charging for past entries.
//   - approximate zCDP: a release costs ρ (zero-concentrated DP; Bun &
//     Steinke 2016) for the part of its proof that is a Gaussian or Laplace
//     mechanism, plus the failure probability of its thresholds, kept apart.
//     k releases cost Σρ and Σ of the thresholds' failure probabilities, and
//     the total converts to (ε, δ) for a budget check (EpsilonAt).
//
// A Cost holds both; EpsilonAt returns the smaller ε of the two at the δ of
// the budget, both being valid statements about the same composition.
//
// # Which releases are accounted in zCDP
//
// Every DPSU release of package setunion (except single_item and the
// unproven mechanisms) and every n-gram extraction of package ngrams has the
// proof structure of setunion's package documentation: for neighbouring D and
// D′ = D + one user, let M̃(D′) be the release on D′ with every item outside
// supp(H_D) forced to "not released" (the items that only the added user
// holds). Then
//
//  1. M(D) and M̃(D′) are the same post-processing of noisy histograms whose
//     difference has sensitivity ≤ 1: ℓ2 with Gaussian noise of scale σ_r per
//     round (count_gaussian: ℓ2 sensitivity √Δ0 with σ·√Δ0), ℓ1 with Laplace
//     noise of scale 1/ε. A Gaussian round is ρ_r = 1/(2σ_r²)-zCDP (Bun &
//     Steinke, Prop. 1.6), and exactly (1/σ_r)-GDP (Dong, Roth & Su 2019);
//     ε-DP Laplace noise is ε²/2-zCDP (Bun & Steinke, Prop. 1.4). The private
//     choice of Δ0 adds its tests, each a Gaussian mechanism of sensitivity
//     ≤ 1. Mixing over the shared randomness (user order, Δ0 sampling) keeps
//     both bounds: Rényi divergence is jointly quasi-convex and Gaussian
//     trade-off functions are convex.
//  2. Under the coupling that runs both with the same randomness, M(D′) and
//     M̃(D′) differ only on the event E that an added user's item is
//     released, and given any output of M̃(D′), E has probability at most the
//     thresholds' failure probability p (setunion calibrates p = δ_T/(1+δ_T)).
//
// This is not ρ-zCDP of M itself: an item held by the added user alone is
// released with probability up to p from D′ and never from D, an infinite
// privacy loss. The δ of the thresholds therefore stays additive, and is not
// part of ρ. For k adaptively composed releases, (1) composes to
// D_α(M(D)‖M̃(D′)) ≤ αΣρ_i (and symmetrically), and (2) gives
// P[E | M̃(D′)] ≤ P := Σ p_i by the union bound. If Σρ_i-zCDP implies
// (ε, δ_c)-DP, then for every set S of outputs:
//
//	P[M(D′) ∈ S] ≤ P[M̃(D′) ∈ S] + P ≤ e^ε·P[M(D) ∈ S] + δ_c + P,
//	P[M(D) ∈ S] ≤ e^ε·P[M̃(D′) ∈ S] + δ_c ≤ e^ε·P[M(D′) ∈ S]/(1 − P) + δ_c
//	           ≤ e^ε·P[M(D′) ∈ S] + δ_c + P/(1 − P),
//
// the last step because e^ε·P[M(D′) ∈ S] ≤ 1 or the bound is trivial. The
// composition is (ε, δ_c + P/(1 − P))-DP. For one release, P/(1−P) = δ_T,
// the share of δ the mechanism set aside for its thresholds.
//
// Conversion: when every ρ comes from Gaussian mechanisms, the composition
// of the old-coordinate parts is exactly μ-GDP with μ² = 2Σρ, and EpsilonAt
// uses its exact privacy profile (GaussianEpsilon); otherwise (Laplace or
// greedy releases in the mix) it uses the conversion of Canonne, Kamath &
// Steinke (2020), CKSEpsilon, which is valid for any ρ-zCDP mechanism and
// tighter than Bun & Steinke's ρ + 2√(ρ·ln(1/δ)). Both are exact or
// conservative: EpsilonAt never returns less than the composition's true ε.
//
// single_item (the optimal π(n) table; its (ε, δ) has no Gaussian or Laplace
// part), the unproven mechanisms and any charge recorded only as (ε, δ) are
// accounted by basic composition inside the total (Basic).
package accounting

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/sqlext/ngrams"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Cost is the privacy cost of one release or of a composition of releases.
// The zero value is the cost of nothing. Compose adds costs.
type Cost struct {
	// Releases is the number of releases composed.
	Releases int `json:"releases"`
	// Epsilon and Delta are the basic-composition cost: Σε and Σδ of the
	// releases' stated parameters.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Rho is the zCDP ρ of the parts accounted in zCDP; GaussianRho is the
	// share of Rho that comes from Gaussian mechanisms (exactly μ-GDP with
	// μ² = 2·GaussianRho). Rho − GaussianRho comes from Laplace (pure ε-DP)
	// parts, ε²/2 each.
	Rho         float64 `json:"rho"`
	GaussianRho float64 `json:"gaussian_rho"`
	// ThresholdFail is P, the sum of the thresholds' failure probabilities
	// of the zCDP-accounted releases; it costs P/(1 − P) of δ.
	ThresholdFail float64 `json:"threshold_fail"`
	// BasicEpsilon and BasicDelta are the releases accounted only by basic
	// composition (single_item, unproven mechanisms, legacy charges).
	BasicEpsilon float64 `json:"basic_epsilon"`
	BasicDelta   float64 `json:"basic_delta"`
}

// Basic is the cost of a release known only by its (ε, δ): a legacy ledger
// entry, or a mechanism without a zCDP proof. It is charged as it was.
func Basic(eps, delta float64) Cost {
	return Cost{Releases: 1, Epsilon: eps, Delta: delta, BasicEpsilon: eps, BasicDelta: delta}
}

// Compose returns the cost of all of costs together (adaptive composition):
// every field adds.
func Compose(costs ...Cost) Cost {
	var t Cost
	for _, c := range costs {
		t.Releases += c.Releases
		t.Epsilon += c.Epsilon
		t.Delta += c.Delta
		t.Rho += c.Rho
		t.GaussianRho += c.GaussianRho
		t.ThresholdFail += c.ThresholdFail
		t.BasicEpsilon += c.BasicEpsilon
		t.BasicDelta += c.BasicDelta
	}
	return t
}

// Repeat is the cost of k releases of cost c.
func Repeat(c Cost, k int) Cost {
	f := float64(k)
	return Cost{Releases: k * c.Releases, Epsilon: f * c.Epsilon, Delta: f * c.Delta, Rho: f * c.Rho,
		GaussianRho: f * c.GaussianRho, ThresholdFail: f * c.ThresholdFail,
		BasicEpsilon: f * c.BasicEpsilon, BasicDelta: f * c.BasicDelta}
}

// SetUnion returns the cost of a DPSU release with calibration cal
// (setunion.Calibrate, or Builder.Calibration). The cost does not depend on
// the data: with Δ0 chosen privately it is the same before and after the
// choice.
func SetUnion(cal setunion.Calibration) (Cost, error) {
	m := cal.Mechanism
	if !m.Proven() {
		return Basic(cal.Epsilon, cal.Delta), nil
	}
	c := Cost{Releases: 1, Epsilon: cal.Epsilon, Delta: cal.Delta}
	fail := cal.ThresholdDelta / (1 + cal.ThresholdDelta)
	switch {
	case m == setunion.SingleItem:
		return Basic(cal.Epsilon, cal.Delta), nil
	case m == setunion.DPSIPS:
		if len(cal.Rounds) == 0 {
			return Cost{}, fmt.Errorf("accounting: dp_sips calibration without rounds")
		}
		for _, r := range cal.Rounds {
			c.GaussianRho += 1 / (2 * r.Sigma * r.Sigma)
		}
	case m == setunion.CountGaussian:
		c.GaussianRho = float64(cal.MaxItems) / (2 * cal.Scale * cal.Scale)
	case m.Noise() == setunion.Gaussian:
		c.GaussianRho = 1 / (2 * cal.Scale * cal.Scale)
	case m.Noise() == setunion.Laplace:
		c.Rho = cal.Epsilon * cal.Epsilon / 2
	default:
		return Cost{}, fmt.Errorf("accounting: no cost for mechanism %s", m)
	}
	if a := cal.Auto; a != nil {
		c.GaussianRho += float64(a.Tests) / (2 * a.TestSigma * a.TestSigma)
	}
	c.Rho += c.GaussianRho
	c.ThresholdFail = fail
	return c, nil
}

// SetUnionOptions is SetUnion for options (it calibrates them first).
func SetUnionOptions(o setunion.Options) (Cost, error) {
	cal, err := setunion.Calibrate(o)
	if err != nil {
		return Cost{}, err
	}
	return SetUnion(cal)
}

// Ngrams returns the cost of an n-gram extraction with options o: the levels
// form one Gaussian mechanism of scale σ* (ρ = Σ_k 1/(2σ_k²) = 1/(2σ*²)) and
// the unigram threshold fails with probability δ_T/(1 + δ_T), δ_T = δ/2; the
// levels k ≥ 2 simulate their zero-weight k-grams exactly and have no
// threshold event (ngrams.NewPlan).
func Ngrams(o ngrams.Options) (Cost, error) {
	p, err := ngrams.NewPlan(o)
	if err != nil {
		return Cost{}, err
	}
	c := Cost{Releases: 1, Epsilon: o.Epsilon, Delta: o.Delta}
	for _, l := range p.Levels {
		c.GaussianRho += 1 / (2 * l.Sigma * l.Sigma)
	}
	c.Rho = c.GaussianRho
	dT := p.Level1().ThresholdDelta
	c.ThresholdFail = dT / (1 + dT)
	return c, nil
}

// ThresholdCharge is P/(1 − P), the share of δ that the thresholds of the
// zCDP-accounted releases cost together (+Inf when P ≥ 1).
func (c Cost) ThresholdCharge() float64 {
	if c.ThresholdFail >= 1 {
		return math.Inf(1)
	}
	return c.ThresholdFail / (1 - c.ThresholdFail)
}

// ConcentratedEpsilon is the ε of the composition at total δ under the zCDP
// accounting: δ pays first for the basic-only releases and the thresholds,
// the rest, δ_c, converts ρ (GaussianEpsilon when all of ρ is Gaussian, else
// CKSEpsilon). +Inf when nothing is left for δ_c and ρ > 0.
func (c Cost) ConcentratedEpsilon(delta float64) float64 {
	dc := delta - c.BasicDelta - c.ThresholdCharge()
	if dc < 0 || (dc == 0 && c.Rho > 0) {
		return math.Inf(1)
	}
	eps := c.BasicEpsilon
	switch {
	case c.Rho == 0:
	case c.Rho-c.GaussianRho <= 1e-15*c.Rho:
		eps += math.Min(GaussianEpsilon(math.Sqrt(2*c.GaussianRho), dc), CKSEpsilon(c.Rho, dc))
	default:
		eps += CKSEpsilon(c.Rho, dc)
	}
	return eps
}

// BasicEpsilonAt is the ε of the composition at total δ under basic
// composition: Σε if δ ≥ Σδ, else +Inf.
func (c Cost) BasicEpsilonAt(delta float64) float64 {
	if delta < c.Delta {
		return math.Inf(1)
	}
	return c.Epsilon
}

// EpsilonAt is the ε of the composition at total δ: the smaller of the
// basic and the zCDP accounting (both are valid bounds).
func (c Cost) EpsilonAt(delta float64) float64 {
	return math.Min(c.BasicEpsilonAt(delta), c.ConcentratedEpsilon(delta))
}

// Fits reports whether the composition stays within the budget (ε, δ) under
// the tighter accounting.
func (c Cost) Fits(eps, delta float64) bool { return c.EpsilonAt(delta) <= eps }

// FitsBasic reports whether it stays within the budget under basic
// composition alone.
func (c Cost) FitsBasic(eps, delta float64) bool { return c.BasicEpsilonAt(delta) <= eps }

// MaxRepeats returns how many releases of cost c fit in the budget (ε, δ),
// under the tighter accounting and under basic composition alone (at most
// limit each).
func MaxRepeats(c Cost, eps, delta float64, limit int) (concentrated, basic int) {
	for k := 1; k <= limit; k++ {
		r := Repeat(c, k)
		if r.Fits(eps, delta) {
			concentrated = k
		}
		if r.FitsBasic(eps, delta) {
			basic = k
		}
	}
	return concentrated, basic
}
