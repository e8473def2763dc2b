package dpagg

import "github.com/dpsql/dpsql/sqlext/setunion"

// Composition names how a plan's parts add up to its (ε, δ).
const (
	// CompositionBasic: key selection is (ε_s, δ_s)-DP, the aggregates
	// (ε_a, δ_a)-DP, each converted from its own zCDP budget, and the
	// release (ε_s + ε_a, δ_s + δ_a)-DP by basic composition.
	CompositionBasic = "basic"
	// CompositionZCDP: key selection and the Gaussian aggregates are
	// composed in zCDP and converted to (ε, δ) once (jointRho).
	CompositionZCDP = "zcdp"
)

// jointRho returns the aggregates' ρ when the release's parts are composed
// in zCDP rather than by basic composition, and whether that applies.
//
// The selection (dp_sips) is ρ_sel-zCDP outside a failure event of
// probability p = δ_T/(1 + δ_T) under the coupling of docs/privacy.md §4,
// which costs p/(1 − p) = δ_T of δ; the aggregates' bound tests and
// statistics are ρ_a-zCDP for every outcome of the selection and of the
// tests (adaptive composition). So the release is (ρ_sel + ρ_a)-zCDP
// outside that event, and (ε, δ)-DP when CKS20's conversion (Corollary 13,
// ZCDPDelta) gives (ρ_sel + ρ_a, ε) a δ of at most δ − δ_T. jointRho takes
// the largest such ρ_a: ρ_a = ρ*(ε, δ − δ_T) − ρ_sel. This is what the
// zCDP ledger already does when it adds the release's parts
// (sqlext/accounting); basic composition converts each part separately,
// and each conversion pays its own √(ln(1/δ)) term, so at ε = 1, δ = 1e-6
// the split release spends only ρ 0.0132 of the 0.0241 that (1, 1e-6)
// allow (its parts composed in zCDP are (0.73, 1e-6)-DP).
//
// It applies to Gaussian statistics after a dp_sips key selection (the
// default), without the noise family chosen after the bounds (whose
// Laplace branch is argued by basic composition, noisechoice.go); the
// selection's calibration and so the released keys are unchanged. It
// depends on the options only (the selection's ρ does not depend on Δ0).
func (p *Plan) jointRho() (float64, bool) {
	if p.Noise != Gaussian || p.Global || p.PublicKeys {
		return 0, false
	}
	if p.Bounds != nil && p.Bounds.NoiseChoice {
		return 0, false
	}
	cal := p.Selection
	if cal.Mechanism != setunion.DPSIPS || len(cal.Rounds) == 0 {
		return 0, false
	}
	var sel float64
	for _, r := range cal.Rounds {
		sel += 1 / (2 * r.Sigma * r.Sigma)
	}
	if a := cal.Auto; a != nil {
		sel += float64(a.Tests) / (2 * a.TestSigma * a.TestSigma)
	}
	conv := p.Delta - cal.ThresholdDelta
	if !(conv > 0) {
		return 0, false
	}
	total, err := maxRho(p.Epsilon, conv)
	if err != nil {
		return 0, false
	}
	rho := total - sel*(1+1e-9) // float sums: err on the low side
	if !(rho > 0) {
		return 0, false
	}
	return rho, true
}
