package accounting

import (
	"fmt"

	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// Aggregates returns the cost of a release of DP aggregates per key
// (package dpagg): its key selection (a set-union release at the selection's
// share, SetUnion) composed with the noisy statistics. A Laplace statistic
// of budget ε_s is pure ε_s-DP, hence ε_s²/2-zCDP (Bun & Steinke 2016,
// Proposition 1.4); a discrete Gaussian one is ρ_s-zCDP with the ρ_s of its
// plan (Canonne, Kamath & Steinke 2020, Theorem 14), which is kept out of
// GaussianRho because the discrete Gaussian is not exactly a Gaussian
// mechanism in the GDP sense. The statistics have no threshold: selection's
// failure probability covers the keys only the added user holds (dpagg's
// package documentation).
func Aggregates(p *dpagg.Plan) (Cost, error) {
	if p == nil {
		return Cost{}, fmt.Errorf("accounting: no aggregates plan")
	}
	c := Cost{Releases: 1, Epsilon: p.Epsilon, Delta: p.Delta}
	if !p.Global && !p.PublicKeys { // a global release, or one over public keys, selects no key: its statistics are all it costs
		sel, err := SetUnion(p.Selection)
		if err != nil {
			return Cost{}, err
		}
		if sel.BasicEpsilon > 0 || sel.BasicDelta > 0 {
			return Basic(p.Epsilon, p.Delta), nil
		}
		c.Rho, c.GaussianRho, c.ThresholdFail = sel.Rho, sel.GaussianRho, sel.ThresholdFail
	}
	if r := p.ChoiceRho(); r > 0 {
		// The noise family is chosen after the bounds (dpagg's
		// noisechoice.go): (ε_a, δ_a)-DP either way, and
		// ρ_t + max(ρ_s, ε_L²/2)-zCDP whatever is chosen.
		c.Rho += r
		return c, nil
	}
	if p.Bounds != nil {
		c.Rho += p.Bounds.Rho // the tests of the private choice of bounds
	}
	for _, a := range p.Aggregates {
		for _, s := range a.Stats {
			switch {
			case s.Rho > 0:
				c.Rho += s.Rho
			case s.Epsilon > 0:
				c.Rho += s.Epsilon * s.Epsilon / 2
			}
		}
	}
	return c, nil
}
