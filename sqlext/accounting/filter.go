package accounting

import (
	"fmt"
	"math"
)

// Filter decides, release by release, whether an adaptively chosen
// sequence of zCDP-accounted releases may go on within a budget (ε, δ): a
// privacy filter (Rogers, Roth, Ullman & Vadhan 2016) for approximate zCDP.
//
// The budget's δ is split once, before the sequence starts: a share
// ThresholdShare·δ pays for the thresholds' failures, the rest,
// δ_c = (1 − ThresholdShare)·δ, for converting the ρ of the sequence. The
// sequence may go on while
//
//	P/(1 − P) ≤ ThresholdShare·δ   and   CKSEpsilon(Σρ, δ_c) ≤ ε,
//
// with P = Σ p_i the thresholds' failure probabilities. Both conditions bound
// one scalar each against a constant fixed in advance, which is what makes
// the filter valid when every release's parameters are chosen after seeing
// the earlier outputs:
//
//   - ρ: Feldman & Zrnic (2021, "Individual privacy accounting via a Rényi
//     filter", Theorem 3.1) show that stopping an adaptive composition once
//     Σ_i ε_i(α) would exceed B is B-RDP at order α; zCDP releases have
//     ε_i(α) = αρ_i, so stopping at Σρ_i ≤ ρ_B gives RDP αρ_B at every α at
//     once, that is ρ_B-zCDP, and CKSEpsilon(ρ_B, δ_c) ≤ ε by the choice of
//     ρ_B (the conversion is increasing in ρ).
//   - thresholds: under the coupling of the package documentation each
//     release's failure event has probability at most p_i given the past, so
//     the union bound over a sequence whose Σp_i never exceeds P_B gives
//     P[∪E_i] ≤ P_B (optional stopping of the martingale Σ(1_{E_i} − p_i)).
//
// The two combine as in the package documentation into (ε, δ)-DP. Deciding by
// the smaller of two accountings (EpsilonAt takes the minimum of basic and
// zCDP), or moving δ between the thresholds and the conversion as the
// sequence goes, would make the stopping rule a union of regions, which
// filters do not cover: Filter does neither. It uses the CKS conversion for
// every sequence, also all-Gaussian ones, for the same reason.
//
// Releases accounted only by basic composition (BasicEpsilon, BasicDelta:
// single_item, the unproven mechanisms) have no ρ and are refused; an
// account that needs them is accounted by basic composition throughout.
type Filter struct {
	// Epsilon and Delta are the budget of the adaptive sequence.
	Epsilon, Delta float64
	// ThresholdShare is the share of Delta for the thresholds, in (0, 1);
	// 0 means DefaultThresholdShare.
	ThresholdShare float64
}

// DefaultThresholdShare gives 90% of a budget's δ to the thresholds: the
// default release (dp_sips at ε = 1, δ = 1e-6) sets 20% of its δ aside for
// its thresholds and needs little δ to convert its ρ, so with a budget of
// (10, 1e-5) the thresholds allow 44 releases and the ρ 62 (with 50% of δ,
// 24 and 69): the share trades one for the other, and 0.9 fits the default.
const DefaultThresholdShare = 0.9

// Share returns the share of Delta for the thresholds:
// DefaultThresholdShare when ThresholdShare is 0.
func (f Filter) Share() float64 { return f.share() }

func (f Filter) share() float64 {
	if f.ThresholdShare == 0 {
		return DefaultThresholdShare
	}
	return f.ThresholdShare
}

// Split returns the δ for the thresholds and the δ_c for the conversion.
func (f Filter) Split() (thresholds, conversion float64) {
	t := f.share() * f.Delta
	return t, f.Delta - t
}

// safety inflates accumulated floating-point sums before they are compared
// with the budget, so that rounding in Σρ or Σp can never admit a sequence
// that exact arithmetic would refuse (a sum of k float64 terms is within
// k·2⁻⁵³ of the exact sum; 1e-9 covers a million terms).
const safety = 1 + 1e-9

// Check returns nil when a sequence whose composed cost is total may go on,
// or an error saying which condition it breaks.
func (f Filter) Check(total Cost) error {
	if s := f.share(); !(s > 0 && s < 1) {
		return fmt.Errorf("accounting: the thresholds' share of δ must be in (0, 1), got %v", s)
	}
	if total.BasicEpsilon > 0 || total.BasicDelta > 0 {
		return fmt.Errorf("accounting: a release accounted only by basic composition (single_item or an unproven mechanism) cannot enter a zCDP budget")
	}
	thr, dc := f.Split()
	p := total.ThresholdFail * safety
	if p >= 1 || p/(1-p) > thr {
		return fmt.Errorf("accounting: the thresholds' failure probability would reach %.3g, more than the %.3g of δ set aside for them", p/(1-p), thr)
	}
	if eps := CKSEpsilon(total.Rho*safety, dc); eps > f.Epsilon {
		return fmt.Errorf("accounting: ρ = %.4g would convert to ε = %.4g at δ = %.3g, more than ε = %v", total.Rho, eps, dc, f.Epsilon)
	}
	return nil
}

// Spent returns what a sequence of composed cost total has used of the
// budget: the ε its ρ converts to at δ_c, and the δ its thresholds cost.
func (f Filter) Spent(total Cost) (eps, thresholdDelta float64) {
	_, dc := f.Split()
	if total.Rho > 0 {
		eps = CKSEpsilon(total.Rho*safety, dc)
	}
	return eps, total.ThresholdCharge()
}

// MaxReleases is how many releases of cost c the filter admits (at most
// limit).
func (f Filter) MaxReleases(c Cost, limit int) int {
	n := 0
	for k := 1; k <= limit && f.Check(Repeat(c, k)) == nil; k++ {
		n = k
	}
	return n
}

// Remaining is the budget left after total: ε minus the converted ε, and
// the thresholds' δ minus what they used (never below 0).
func (f Filter) Remaining(total Cost) (eps, thresholdDelta float64) {
	thr, _ := f.Split()
	e, d := f.Spent(total)
	return math.Max(f.Epsilon-e, 0), math.Max(thr-d, 0)
}
