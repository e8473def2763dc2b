// Package noise holds the noise of the privacy core: its calibration and its
// exact samplers, side by side (as in Google DP's noise package).
//
// Calibration: the standard normal distribution functions evaluated stably in
// their tails, the analytic Gaussian mechanism of Balle & Wang (2018), and the
// release thresholds of the differentially private set union mechanisms of
// Gopi et al. (ICML 2020, journal version 2021) and Carvalho et al. (AAAI
// 2022). These functions are pure: no randomness and no data. The formulas are
// those of docs/privacy.md §2, including its numerical prescriptions: small tail
// probabilities are formed with expm1/log1p and never as 1 − (something close
// to 1), and e^ε·Φ(x) is evaluated as exp(ε + log Φ(x)).
package noise

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Phi is the standard normal cumulative distribution function
// Φ(x) = P(N(0,1) ≤ x), computed as erfc(−x/√2)/2, which keeps full relative
// accuracy in the lower tail (down to x ≈ −38, below which it underflows to 0).
func Phi(x float64) float64 {
	return 0.5 * math.Erfc(-x/math.Sqrt2)
}

// LogPhi returns log Φ(x) without underflow for very negative x.
//
// For x ≥ −30 it is log(erfc(−x/√2)/2). Below, it uses the asymptotic (Mills
// ratio) series Φ(x) = φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸ − …), whose
// truncation error at |x| ≥ 30 is below 1e-12 relative.
func LogPhi(x float64) float64 {
	if x >= -30 {
		return math.Log(Phi(x))
	}
	x2 := x * x
	inv := 1 / x2
	series := 1 - inv*(1-3*inv*(1-5*inv*(1-7*inv)))
	return -0.5*x2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(series)
}

// PhiInvUpper returns z with P(N(0,1) > z) = q, that is Φ⁻¹(1 − q), for a
// small upper-tail probability q ∈ (0, 1). Passing the tail q rather than
// p = 1 − q keeps the digits that matter when q is 1e-12: Φ⁻¹(p) evaluated on
// p itself would see p rounded to 1 − 2⁻⁵³·k.
func PhiInvUpper(q float64) float64 {
	return -distuv.UnitNormal.Quantile(q)
}

// OneMinusRoot returns 1 − (1 − d)^(1/t) for d ∈ (0, 1) and t ≥ 1, computed as
// −expm1(log1p(−d)/t) so that it stays accurate when d is tiny (docs/privacy.md
// §2, "Numerics"). For d = 1e-10 and t = 1000 the naive form loses all digits.
func OneMinusRoot(d, t float64) float64 {
	return -math.Expm1(math.Log1p(-d) / t)
}
