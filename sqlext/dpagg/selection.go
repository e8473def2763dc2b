package dpagg

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// GROUP BY key selection: dp_sips on the kept pairs, so that no key vanishes.
//
// Why. The former default, policy_gaussian_l2 (Gopi et al.), raises no
// key's weight above the cutoff Γ = ρ + α·σ (α = 3), so a key that any
// number of users hold is released with probability Φ(α) only: a
// dashboard's biggest row was missing once in about 740 releases
// (Φ(−3) = 1.35e-3 per key; 14 of 2,000 releases of five countries missed
// one). A key that many users hold must be released except with negligible
// probability.
//
// What. Key selection runs dp_sips (setunion's own default: R = 3 rounds of
// weighted Gaussian thresholding, budget fractions f_r ∝ 0.2^(R−1−r), one
// round when Δ0 = 1) on exactly the pairs the aggregates keep. Every user
// already holds at most Δ0 keys, so the rounds never re-sample: round r
// sees each user's kept keys not yet released, W_r ⊆ W_0, adds
// 1/√|W_r| to each and releases the keys whose weight plus N(0, σ_r²)
// passes ρ_r. Nothing is capped. A key whose first-round weight is w
// (w = n for n users who hold only it; w ≥ n/√Δ0 in general) has weight at
// least w in every later round (|W_r| only shrinks), so
//
//	P(key not released) ≤ Π_r Φ((ρ_r − w)/σ_r)      (setunion MissProbability)
//
// which falls to 0 as w grows. At ε = 1, δ = 1e-6 with the default split
// (selection ε_s = 0.5, δ_s = 5e-7) and Δ0 = 1: σ = 8.44, ρ = 44.9, a key of
// n users is missed with probability Φ((44.9 − n)/8.44): ≤ 1e-9 from
// n = 96 users (DP_EXPLAIN's users_for_miss_1e-9), and at 10× the users
// of the 50 % point (450 users) Φ(−48) < 1e-300. The policy's miss
// stays 1.35e-3 at every n ≥ Γ = 70.3.
//
// Cost, measured (TestSelectionKeysTable; docs/privacy.md, "GROUP BY key
// selection"): nothing at Δ0 = 1 (the policy's weight min(n, Γ) and the
// weighted Gaussian's n agree below Γ, and the δ split of dp_sips moves
// the threshold by half a user), and more keys for Δ0 > 1, since later
// rounds drop the keys already released from every user's set and spend
// the user's weight on the rest, as the policy meant to.
//
// Privacy. The selection is setunion's dp_sips on the database of kept
// pairs, whose proof (setunion's package documentation, docs/privacy.md
// §5) needs only that each round's histogram moves by at most 1 in ℓ2
// when one user is added, given the earlier rounds' (public) output, and
// that keys outside the support on D are the added user's own: round r's
// rule is a per-user function of the user's kept keys and of the released
// set, so adding a user adds the vector (1/√|W_r|)_{k∈W_r} of norm ≤ 1 and
// changes nothing else (TestSelectionRoundsSensitivity on random
// neighbouring databases). The rounds are Gaussian mechanisms composed
// adaptively, Σ_r 1/σ_r² = 1/σ*² with σ* the analytic Gaussian σ at
// (ε_s, δ_G = 0.8·δ_s), and their thresholds fail with total probability
// δ_T/(1 + δ_T), δ_T = 0.2·δ_s: the selection is (ε_s, δ_s)-DP, and the
// rest of the argument (package documentation) is unchanged.

// selectionLine is Lines' sentence for the key selection of a keyed
// release.
func selectionLine(sel setunion.Calibration) string {
	s := fmt.Sprintf("key selection: %s with epsilon=%g delta=%g; ", sel.Mechanism, sel.Epsilon, sel.Delta)
	if len(sel.Rounds) > 0 {
		sig, rho := make([]string, len(sel.Rounds)), make([]string, len(sel.Rounds))
		for r, rd := range sel.Rounds {
			sig[r], rho[r] = fmt.Sprintf("%.4g", rd.Sigma), fmt.Sprintf("%.4g", rd.Rho)
		}
		s += fmt.Sprintf("%d round(s) on the kept keys: a key is released in the first round its weight plus %s noise (sigma %s) exceeds that round's threshold (%s)",
			len(sel.Rounds), sel.Noise, strings.Join(sig, ", "), strings.Join(rho, ", "))
	} else {
		s += fmt.Sprintf("a key is released when its weight plus %s noise (scale %.4g) exceeds %.4g", sel.Noise, sel.Scale, sel.Rho)
		if sel.Gamma > 0 {
			s += fmt.Sprintf(", no weight above the cutoff %.4g", sel.Gamma)
		}
	}
	if n, ok := sel.UsersForMiss(setunion.MissTarget); ok {
		return s + fmt.Sprintf("; a key of %d or more users is dropped with probability at most 1e-9", n)
	}
	return s + fmt.Sprintf("; a key is dropped with probability at least %.3g however many users hold it (the cutoff)", sel.MissProbability(sel.Gamma))
}

// singleItemSelection reports whether the key selection takes single_item
// instead of the default mechanism: only when the release is charged by
// basic composition (BasicLedger: a zCDP account refuses single_item), the
// analyst left the mechanism to the default, Δ0 is 1, and the release's
// parts compose by basic composition anyway (the aggregates are not
// Gaussian statistics composed with dp_sips in zCDP, jointRho).
//
// With one key per user, a key's release depends only on its user count n,
// and single_item's π(n) (π(0) = 0, π(n) = min(e^ε_s·π(n−1) + δ_s,
// 1 − e^(−ε_s)·(1 − π(n−1) − δ_s), 1)) is the largest release probability
// any (ε_s, δ_s)-DP selection of one key can give at every n (Desfontaines,
// Voss, Gipson & Mandayam, PoPETs 2022): it is Google DP's truncated
// geometric partition selection. dp_sips at Δ0 = 1 is one Gaussian
// threshold, which releases a key with probability 1/2 at 42 users where π
// does at 26 (ε_s = 0.5, δ_s = 1e-6).
//
// Privacy: the selection gets the same (ε_s, δ_s) whichever mechanism it
// is, and the release is (ε_s + ε_a, δ_s + δ_a)-DP by the basic composition
// of the package documentation. When Δ0 is chosen privately, the choice of
// mechanism follows the chosen Δ0, an output of the bounds' tests; basic
// composition holds for adaptively chosen mechanisms, each (ε_s, δ_s)-DP.
// The plan charged before any row holds the placeholder Δ0 = 1, so its
// charge is the basic one, valid whichever mechanism the choice leads to
// (docs/privacy.md §42).
func (o Options) singleItemSelection(p *Plan) bool {
	if !o.BasicLedger || o.Mechanism != "" || o.MaxGroupsContributed != 1 {
		return false
	}
	zcdp := p.Noise == Gaussian && (p.Bounds == nil || !p.Bounds.NoiseChoice)
	return !zcdp
}

// SelectionMechanism names the key selection's mechanism for DP_EXPLAIN and
// the ledger's audit. Before a private choice of Δ0 on a basic ledger the
// plan holds the placeholder Δ0 = 1 and so single_item, but the mechanism
// depends on the choice (singleItemSelection).
func (p *Plan) SelectionMechanism() string {
	if p.Selection.Mechanism == setunion.SingleItem && p.Bounds != nil && p.Bounds.Groups && p.Bounds.Chosen == nil {
		return "single_item if the chosen Δ0 is 1, else " + string(DefaultSelectionMechanism)
	}
	return string(p.Selection.Mechanism)
}
