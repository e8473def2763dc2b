package accounting

import (
	"math"

	"github.com/dpsql/dpsql/sqlext/noise"
)

// BunSteinkeEpsilon is the conversion of Bun & Steinke (2016, Proposition
// 1.3): a ρ-zCDP mechanism is (ρ + 2√(ρ·ln(1/δ)), δ)-DP for every δ > 0. It is
// given for comparison; EpsilonAt uses the tighter CKSEpsilon.
func BunSteinkeEpsilon(rho, delta float64) float64 {
	if rho == 0 {
		return 0
	}
	return rho + 2*math.Sqrt(rho*math.Log(1/delta))
}

// CKSEpsilon is the conversion of Canonne, Kamath & Steinke (2020,
// Proposition 12 / Corollary 13): a ρ-zCDP mechanism is (ε, δ)-DP with
//
//	ε = inf_{α>1} αρ + (ln(1/δ) + (α−1)·ln(1 − 1/α) − ln α)/(α − 1).
//
// Every α > 1 gives a valid ε, so the search for the best α needs no
// conservative rounding: the derivative of the bracket in α is
// ρ + ln(αδ)/(α−1)², increasing in α, and its root is found by bisection.
// It is never larger than BunSteinkeEpsilon.
func CKSEpsilon(rho, delta float64) float64 {
	switch {
	case rho == 0:
		return 0
	case !(delta > 0):
		return math.Inf(1)
	case delta >= 1:
		return 0
	}
	positive := func(a float64) bool { return rho > -math.Log(a*delta)/((a-1)*(a-1)) }
	lo, hi := 1.0+1e-9, 2.0
	for !positive(hi) {
		hi *= 2
	}
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := lo + (hi-lo)/2
		if positive(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	a := hi
	eps := a*rho + (math.Log(1/delta)+(a-1)*math.Log1p(-1/a)-math.Log(a))/(a-1)
	return math.Max(eps, 0)
}

// CKSDelta is the same conversion in the other direction: the smallest δ
// that Canonne, Kamath & Steinke's bound gives for ρ-zCDP at ε,
//
//	δ = inf_{α>1} exp((α−1)(αρ − ε)) / (α − 1) · (1 − 1/α)^α,
//
// whose logarithm has the increasing derivative (2α−1)ρ − ε + ln(1 − 1/α).
// It is what the published test values of the conversion are stated in.
func CKSDelta(rho, eps float64) float64 {
	if rho == 0 {
		return 0
	}
	deriv := func(a float64) float64 { return (2*a-1)*rho - eps + math.Log1p(-1/a) }
	lo, hi := 1.0+1e-12, 2.0
	for deriv(hi) < 0 {
		hi *= 2
	}
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		mid := lo + (hi-lo)/2
		if deriv(mid) > 0 {
			hi = mid
		} else {
			lo = mid
		}
	}
	logDelta := func(a float64) float64 {
		return (a-1)*(a*rho-eps) - math.Log(a-1) + a*math.Log1p(-1/a)
	}
	return math.Min(1, math.Exp(math.Min(logDelta(lo), logDelta(hi))))
}

// GaussianDelta is the exact privacy profile of μ-Gaussian differential
// privacy (Dong, Roth & Su 2019, Corollary 2.13; the analytic Gaussian
// mechanism of Balle & Wang 2018, Theorem 8, with μ = Δ/σ):
//
//	δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2),
//
// with e^ε·Φ(x) evaluated as exp(ε + log Φ(x)).
func GaussianDelta(mu, eps float64) float64 {
	if mu == 0 {
		return 0
	}
	return noise.Phi(-eps/mu+mu/2) - math.Exp(eps+noise.LogPhi(-eps/mu-mu/2))
}

// GaussianEpsilon is the smallest ε ≥ 0 with GaussianDelta(μ, ε) ≤ δ, found
// by bisection (δ(ε) decreases in ε) and returned from the upper,
// conservative end of the final bracket.
func GaussianEpsilon(mu, delta float64) float64 {
	switch {
	case mu == 0:
		return 0
	case !(delta > 0):
		return math.Inf(1)
	}
	if GaussianDelta(mu, 0) <= delta {
		return 0
	}
	lo, hi := 0.0, 1.0
	for GaussianDelta(mu, hi) > delta {
		lo, hi = hi, 2*hi
		if hi > 1e6 {
			return math.Inf(1)
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		mid := lo + (hi-lo)/2
		if GaussianDelta(mu, mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
