package noise

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/sqlext/checks"
)

// GaussianSigma returns the noise scale σ of the analytic Gaussian mechanism
// (Balle & Wang 2018, Theorem 8) for a query of ℓ2 sensitivity sens that must
// be (eps, deltaG)-differentially private: the smallest σ with
//
//	Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ) ≤ deltaG.
//
// The left side decreases in σ, so σ is found by bisection to a relative
// precision of 1e-13 and the upper end of the final bracket is returned (the
// conservative side). e^ε·Φ(x) is evaluated as exp(ε + log Φ(x)) so that large
// ε (say 50) stays finite. The DPSU mechanisms call it with deltaG = δ/2: the
// other half of δ pays for the release threshold (docs/privacy.md §2).
func GaussianSigma(eps, deltaG, sens float64) (float64, error) {
	if err := checks.Epsilon(eps); err != nil {
		return 0, fmt.Errorf("noise: %w", err)
	}
	if err := checks.Delta(deltaG); err != nil {
		return 0, fmt.Errorf("noise: %w", err)
	}
	if !(sens > 0) || math.IsInf(sens, 0) {
		return 0, fmt.Errorf("noise: sensitivity must be a finite number > 0, got %v", sens)
	}
	excess := func(sigma float64) float64 {
		a := sens / (2 * sigma)
		b := eps * sigma / sens
		return Phi(a-b) - math.Exp(eps+LogPhi(-a-b))
	}
	lo, hi := sens, sens
	for excess(hi) > deltaG {
		hi *= 2
		if hi > 1e300 {
			return 0, fmt.Errorf("noise: no Gaussian scale satisfies epsilon=%v delta=%v", eps, deltaG)
		}
	}
	for excess(lo) <= deltaG {
		lo /= 2
		if lo < 1e-300 {
			return lo, nil
		}
	}
	for i := 0; i < 2000 && (hi-lo) > 1e-13*hi; i++ {
		mid := lo + (hi-lo)/2
		if excess(mid) <= deltaG {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// LaplaceThresholdMax returns max over t = 1..maxT of
//
//	1/t + λ·ln(1 / (2·(1 − (1−δ)^(1/t))))
//
// the release threshold of Weighted and Policy Laplace (Gopi et al. 2020,
// Theorem 3.1; docs/privacy.md §2): a user who contributes t items it alone holds
// gives each weight at most 1/t, and the union bound over the t items needs
// (1−δ)^(1/t) per item.
func LaplaceThresholdMax(lambda, delta float64, maxT int) float64 {
	best := math.Inf(-1)
	for t := 1; t <= maxT; t++ {
		ft := float64(t)
		r := 1/ft + lambda*math.Log(1/(2*OneMinusRoot(delta, ft)))
		best = math.Max(best, r)
	}
	return best
}

// GaussianThresholdMax returns max over t = 1..maxT of
//
//	1/√t + σ·Φ⁻¹((1 − δ/2)^(1/t))
//
// the release threshold of Weighted and Policy Gaussian (Gopi et al. 2020,
// Theorem 4.1; journal version, Theorem 5.1; docs/privacy.md §2), with Φ⁻¹ of
// a probability near 1 evaluated from its small tail 1 − (1 − δ/2)^(1/t).
//
// It returns exactly the maximum of those maxT numbers as computed, but
// evaluates few of them (each costs a Φ⁻¹; a release calibrates at
// maxT = AutoMaxItemsCap, 1,000, per round). The quantile term q(t) =
// σ·Φ⁻¹(·) grows with t and 1/√t falls, so on a block of t in [a, b]
// every term is at most 1/√a + q(b); a block whose bound is below the
// best term found (by a margin far above the few ulps by which a
// computed Φ⁻¹ may fail to be monotone) cannot hold the maximum and is
// skipped. The maximum does not depend on the order in which the terms
// are compared, and skipped terms are below it, so the result is the
// full loop's, bit for bit (TestGaussianThresholdMaxAsLoop).
func GaussianThresholdMax(sigma, delta float64, maxT int) float64 {
	q := func(t int) float64 { return sigma * PhiInvUpper(OneMinusRoot(delta/2, float64(t))) }
	if !(sigma > 0) || math.IsInf(sigma, 0) || !(delta > 0 && delta < 1) || maxT < 2*thresholdBlock {
		return gaussianThresholdLoop(sigma, delta, maxT)
	}
	best := 1/math.Sqrt(float64(maxT)) + q(maxT)
	if math.IsNaN(best) || math.IsInf(best, 0) {
		return gaussianThresholdLoop(sigma, delta, maxT)
	}
	for a := 1; a <= maxT; a += thresholdBlock {
		b := min(a+thresholdBlock-1, maxT)
		qb := q(b)
		if 1/math.Sqrt(float64(a))+qb+1e-9*(math.Abs(qb)+1) < best {
			continue // no term of the block reaches best
		}
		for t := a; t <= b; t++ {
			best = math.Max(best, 1/math.Sqrt(float64(t))+q(t))
		}
	}
	return best
}

// thresholdBlock is the block of t that GaussianThresholdMax bounds at
// once.
const thresholdBlock = 32

// gaussianThresholdLoop is GaussianThresholdMax term by term.
func gaussianThresholdLoop(sigma, delta float64, maxT int) float64 {
	best := math.Inf(-1)
	for t := 1; t <= maxT; t++ {
		ft := float64(t)
		r := 1/math.Sqrt(ft) + sigma*PhiInvUpper(OneMinusRoot(delta/2, ft))
		best = math.Max(best, r)
	}
	return best
}

// CountLaplaceThreshold is 1 + λ·ln(1 / (2(1 − (1−δ)^(1/Δ0)))), the threshold of
// Count Laplace with λ = Δ0/ε: a lone user's items each have count exactly 1.
func CountLaplaceThreshold(lambda, delta float64, maxItems int) float64 {
	return 1 + lambda*math.Log(1/(2*OneMinusRoot(delta, float64(maxItems))))
}

// CountGaussianThreshold is 1 + σ·Φ⁻¹((1 − δ/2)^(1/Δ0)), the threshold of
// Count Gaussian with σ calibrated to ℓ2 sensitivity √Δ0.
func CountGaussianThreshold(sigma, delta float64, maxItems int) float64 {
	return 1 + sigma*PhiInvUpper(OneMinusRoot(delta/2, float64(maxItems)))
}

// GreedyThreshold is 1 + λ·ln(1/(2δ)) (Carvalho et al. 2022, eq. 1), the
// threshold of the unproven greedy mechanisms as published. Its premise, that
// only one item of weight at most 1 can be new in a neighbouring database, is
// false for the greedy update (see package setunion); the proven greedy rule
// uses GreedyFloorThreshold.
func GreedyThreshold(lambda, delta float64) float64 {
	return 1 + lambda*math.Log(1/(2*delta))
}

// GreedyFloorThreshold is the threshold of the proven greedy rule (package
// setunion: bounded to Δ0 items, each with a positive floor share):
//
//	ρ = max(1, 1 + λ·ln((1 + (Δ0 − 1)·e^(−1/λ)) / (2δ))).
//
// The items that are new in a neighbouring database are t ≤ Δ0 items of the
// added user alone, with weights w_i ≥ 0, Σ w_i ≤ 1. Each is released with
// p(w) = ½·e^(−(ρ−w)/λ) (w ≤ 1 ≤ ρ), a convex function, so the union bound
// Σ p(w_i) is largest at a vertex of the simplex, one weight 1 and the others
// 0: p(1) + (Δ0 − 1)·p(0) = ½·e^((1−ρ)/λ)·(1 + (Δ0 − 1)·e^(−1/λ)), which this ρ
// makes equal to δ. (If the formula gives ρ < 1, then already
// ½·(1 + (Δ0 − 1)·e^(−1/λ)) < δ and ρ = 1 keeps the bound.)
func GreedyFloorThreshold(lambda, delta float64, maxItems int) float64 {
	r := 1 + lambda*(math.Log1p(float64(maxItems-1)*math.Exp(-1/lambda))-math.Log(2*delta))
	return math.Max(1, r)
}
