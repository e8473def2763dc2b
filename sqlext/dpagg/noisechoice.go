package dpagg

import (
	"math"
	"math/big"
)

// The noise family chosen after the bounds.
//
// Why. A release that chooses its bounds spends a share of the aggregates'
// zCDP budget ρ on the tests, so it used to be Gaussian whatever it chose.
// At Δ0 = 1 the discrete Gaussian at the aggregates' (ε_a, δ_a) is about 3×
// wider than the Laplace mechanism a release with hand-set bounds uses
// (one row per user and key: ±19 against ±6 at ε = 1, δ = 1e-6).
//
// What. With noise left to auto, the statistics take, once Δ0, m and the
// clamping bounds are chosen (DP outputs), whichever family has the smaller
// total variance Σ_i Var_i/c_i² (as autoNoise) between
//
//	G: discrete Gaussian, ρ_s = ρ − ρ_t, ρ = maxRho(ε_a, g·δ_a), ρ_t = BoundsShare·ρ
//	L: discrete Laplace at ε_L = ε_a − ε_t, ε_t the least ε with
//	   ZCDPDelta(ρ_t, ε) ≤ (1−g)·δ_a (ρ_t-zCDP tests are (ε_t, (1−g)·δ_a)-DP, CKS20 Cor. 13),
//	   g = GaussianBranchDelta
//
// split between the statistics by weight as usual. Every quantity here is
// a function of the options and of the chosen bounds, so the choice is
// post-processing of the tests. It is made once every bound is chosen
// (finishChoice): the searches before it (errchoice.go's thresholds τ ∝ the
// plan's σ) all see the Gaussian plan, as without the option. Letting them
// see the Laplace branch's smaller σ made them keep larger bounds, which
// measured worse (searches, AVG, 6 seeds: 0.430 against 0.251 without the
// option; 0.171 once the family is chosen last).
//
// Privacy. Let T be the tests and A_G = (T, Gaussian statistics at the
// bounds T chose), A_L = (T, Laplace statistics at them), each defined for
// every outcome of T. A_G is (ε_a, g·δ_a)-DP: T and the statistics are
// ρ_t- and ρ_s-zCDP, adaptively composed ρ-zCDP, and ρ converts to
// (ε_a, g·δ_a). A_L is (ε_a, (1−g)·δ_a)-DP by basic adaptive composition of
// T's (ε_t, (1−g)·δ_a) and the statistics' pure ε_L, for every outcome of T. The
// release outputs (t, y) with y from A_G's mechanism when the rule picks G
// for t and from A_L's otherwise; for any event S, splitting S by the family
// the rule picks for t,
//
//	P_D[S] = P[A_G(D) ∈ S_G] + P[A_L(D) ∈ S_L]
//	       ≤ e^ε_a·P[A_G(D') ∈ S_G] + g·δ_a + e^ε_a·P[A_L(D') ∈ S_L] + (1−g)·δ_a
//	       = e^ε_a·P_D'[S] + δ_a,
//
// so the aggregates are (ε_a, δ_a)-DP whatever family is picked, and the
// release (ε, δ)-DP with key selection as before: a basic-composition
// ledger charges it (ε, δ) as any release. In zCDP, the L branch is
// ρ_t + Σ_i ε_L,i²/2 (each Laplace statistic i is pure ε_L,i-DP, ε_L,i =
// w_i/W·ε_L, hence ε_L,i²/2-zCDP, Bun & Steinke 2016 Prop. 1.4, and zCDP
// composes additively) and the G branch ρ_t + ρ_s; the statistics are
// chosen after T's output t, so by adaptive composition of Rényi
// divergences, at every order α, D_α ≤ α·ρ_t + sup_t D_α(statistics | t)
// ≤ α·(ρ_t + max(ρ_s, Σ_i ε_L,i²/2)) whatever is picked (ChoiceRho): the
// charge of a zCDP ledger (accounting.Aggregates), fixed by the options
// before any row is read (the weights w_i are the options').
//
// Default. The option is on by default (Defaults, dp_noise_after_bounds):
//
//   - basic composition: the release is charged its (ε, δ) either way, so
//     the Laplace branch costs nothing more;
//   - zCDP: the release is charged ρ_t + max(ρ_s, Σ_i ε_L,i²/2): for one
//     COUNT at ε = 1 with key selection ρ = 0.062 with the selection's
//     (0.013 without the option), less than the 0.132 of the
//     same release with its bounds set by hand at the Δ0 = m = 1 the
//     choice finds, which noise auto gives Laplace noise at ε_a; 0.22 for a
//     global COUNT, against 0.5 hand-set (a global release's Δ0 is 1, so
//     noise auto always picks Laplace there and the branch is always
//     taken). Noise auto means the family that is narrowest for the
//     release's (ε, δ); the option extends that meaning to bounds chosen
//     privately. A deployment whose analysts run many releases and prefer
//     the Gaussian's ρ sets it off (dp: noise_after_bounds, or SET).
//
// At an equal zCDP charge no Laplace release is narrower than the
// Gaussian one (Laplace at ε²/2 = ρ has twice the Gaussian's variance),
// and no mechanism at all meets issue 21's one-row-per-user interval
// target at the Gaussian release's ρ (docs/privacy.md).

// GaussianBranchDelta is the share of δ_a of the Gaussian branch; the
// Laplace branch gets the rest. Most of it: the Gaussian branch's σ grows by
// only 0.23 % against a release that cannot switch, and the tests cost the
// Laplace branch ε_t = 0.170 of ε_a = 0.5 at ε = 1, δ = 1e-6, so a COUNT's
// 95 % interval at Δ0 = m = 1 is ±9 at ε_L = 0.330, 1.5× the ±6 of Laplace
// at ε_a (issue 21's target at a basic ledger's defaults, met exactly;
// TestOneKeyPerUserInterval). An even split would give ±8
// (ε_L = 0.352) but a Gaussian σ 3.1 % larger, which takes the same target
// on a table of 1 to 5 keys per user (Gaussian at Δ0 = 6) from ±45 to ±47
// against ±30 hand-set (TestChosenBoundsOneRowPerKey). A test share
// BoundsShare = 0.07 gives ±8 and ±45, at 20 % more noise in every test.
const GaussianBranchDelta = 0.95

// setBranchBudgets sets the tests' budget and both branches' budgets from
// the aggregates' (ε_a, δ_a) and returns ε_L (0 if the tests alone use up
// ε_a at (1−g)·δ_a).
func (b *BoundsPlan) setBranchBudgets(ea, da float64) (float64, error) {
	rho, err := maxRho(ea, GaussianBranchDelta*da)
	if err != nil {
		return 0, err
	}
	b.statRho = b.setBoundsBudget(rho)
	b.LaplaceEpsilon = 0
	if lap := math.Nextafter(ea-zcdpEpsilon(b.Rho, (1-GaussianBranchDelta)*da), 0); lap > 0 {
		b.LaplaceEpsilon = lap
	}
	return b.LaplaceEpsilon, nil
}

// zcdpEpsilon returns an ε (to 1e-12 relative, on the high side) with
// ZCDPDelta(rho, ε) ≤ delta·(1 − 1e-9): the ε at which ρ-zCDP is
// (ε, δ)-DP. ZCDPDelta decreases in ε.
func zcdpEpsilon(rho, delta float64) float64 {
	target := delta * (1 - 1e-9)
	lo, hi := 0.0, rho+2*math.Sqrt(rho*math.Log(1/delta))+1
	for range 400 {
		mid := (lo + hi) / 2
		if ZCDPDelta(rho, mid) <= target {
			hi = mid
		} else {
			lo = mid
		}
		if hi-lo <= 1e-12*hi {
			break
		}
	}
	return hi
}

// laplaceWins reports whether Laplace noise at ε_L = lap has a smaller
// total variance per unit of contribution than Gaussian noise at ρ_s =
// rhoS for statistics of weights w_i and the aggregates' Δ0 d0 (continuous
// approximations: 2(Δ0/ε_L)²·Σ 1/w_i² against Δ0/(2ρ_s)·Σ 1/w_i).
func laplaceWins(stats []*StatPlan, totalW *big.Rat, d0, rhoS, lap float64) bool {
	if !(lap > 0) || !(rhoS > 0) {
		return false
	}
	tw, _ := totalW.Float64()
	var inv, inv2 float64
	for _, s := range stats {
		w := s.weight / tw
		inv += 1 / w
		inv2 += 1 / (w * w)
	}
	return 2*(d0/lap)*(d0/lap)*inv2 < d0/(2*rhoS)*inv
}

// finishChoice marks the choice of the bounds complete and recalibrates,
// so that the statistics may take Laplace noise (calibrateNoise).
func (p *Pipeline) finishChoice() error {
	b := p.plan.Bounds
	if b == nil || !b.NoiseChoice || p.chosen == nil {
		return nil
	}
	p.chosen.final = true
	return p.replan(p.chosen)
}

// ChoiceRho is the zCDP ρ of the aggregates of a release whose noise family
// is chosen after the bounds: ρ_t + max(ρ_s, Σ_i ε_L,i²/2), ε_L,i = w_i/W·ε_L
// (see above); 0 when the plan makes no such choice.
func (p *Plan) ChoiceRho() float64 {
	b := p.Bounds
	if b == nil || !b.NoiseChoice {
		return 0
	}
	var tw, sq float64
	for _, a := range p.Aggregates {
		for _, s := range a.Stats {
			tw += s.weight
		}
	}
	for _, a := range p.Aggregates {
		for _, s := range a.Stats {
			e := s.weight / tw * b.LaplaceEpsilon
			sq += e * e / 2
		}
	}
	// calibrateLaplace gives statistic i at most w_i/W·ε_L (exact
	// rationals, floored); the relative 1e-12 covers this float sum.
	return b.Rho + max(b.statRho, sq*(1+1e-12))
}
