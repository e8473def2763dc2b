package dpagg

import "github.com/dpsql/dpsql/sqlext/explain"

// Noise auto with hand-set bounds under a zCDP ledger.
//
// Noise auto resolves to the family narrowest for the release's own
// (ε_a, δ_a): with every bound set and Δ0 = 1 (a global release, or one
// key per user) that is discrete Laplace at ε_a. A zCDP ledger charges a
// pure ε-DP statistic ε²/2 (Bun & Steinke 2016, Prop. 1.4), and at that
// same ρ a discrete Gaussian has half the Laplace's variance (1/(2ρ)
// against 2/ε² = 1/ρ per unit of sensitivity), while the Gaussian
// calibrated to (ε_a, δ_a) is charged far less (ρ 0.0244 against 0.5 for
// a global COUNT at ε = 1, δ = 1e-6): under a zCDP ledger the Laplace
// choice buys a narrower interval at a worse price than raising ε.
//
// With Options.GaussianAuto (dpvars sets it when dp_noise_after_bounds is
// OFF, the default under the zCDP ledger; a basic-composition deployment
// turns that variable ON for its tables and keeps today's choice), noise
// auto with every bound set resolves to the Gaussian at the release's own
// (ε_a, δ_a). Privacy: the choice is a function of the options, fixed
// before any row is read, and either family is calibrated to (ε_a, δ_a) as
// before (Calibrate); only the zCDP charge moves, down, to the Gaussian's
// ρ (TestGaussianAutoZCDP).

// gaussianAutoFacts tells DP_EXPLAIN that noise auto took the Gaussian for
// a zCDP ledger.
func (p *Plan) gaussianAutoFacts() []explain.Fact {
	if !p.GaussianAuto {
		return nil
	}
	return []explain.Fact{explain.F("aggregates_noise_choice", "gaussian (noise auto, dp_noise_after_bounds OFF: the zCDP ledger's default)",
		"at an equal zCDP charge the Gaussian is narrower than the Laplace, which a zCDP ledger charges ε²/2; SET dp_noise = 'laplace' (or dp_noise_after_bounds = ON) for the interval narrowest at this release's ε (docs/privacy.md §31)")}
}
