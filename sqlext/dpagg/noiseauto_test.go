package dpagg

import (
	"strings"
	"testing"
)

// zcdpCharge is what a zCDP account charges a plan's statistics
// (accounting.Aggregates: ρ_s, or ε_s²/2 for a Laplace statistic).
func zcdpCharge(p *Plan) float64 {
	var rho float64
	for _, a := range p.Aggregates {
		for _, s := range a.Stats {
			rho += s.Rho + s.Epsilon*s.Epsilon/2*boolF(s.Rho == 0)
		}
	}
	return rho
}

func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestGaussianAutoZCDP: with every bound set and Δ0 = 1, noise auto is
// Laplace, which a zCDP ledger charges ε²/2; with GaussianAuto (a zCDP
// ledger's default) it is the Gaussian at the same (ε_a, δ_a), charged
// its far smaller ρ, and a Gaussian given the Laplace's charge would be
// narrower than the Laplace. Explicit noise, bounds left to choose and
// DP_EXPLAIN.
func TestGaussianAutoZCDP(t *testing.T) {
	o := Defaults()
	o.Global, o.MaxRowsPerGroup = true, 1
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Sum, Lower: 0, Upper: 10}}
	lap, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	o.GaussianAuto = true
	gau, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	if lap.Noise != Laplace || lap.GaussianAuto || gau.Noise != Gaussian || !gau.GaussianAuto {
		t.Fatalf("noise %s / %s, gaussian_auto %v / %v", lap.Noise, gau.Noise, lap.GaussianAuto, gau.GaussianAuto)
	}
	rl, rg := zcdpCharge(lap), zcdpCharge(gau)
	if !(rg < rl/10) || gau.AggregatesEpsilon != lap.AggregatesEpsilon {
		t.Errorf("zCDP charge Laplace %v, Gaussian %v (ε_a %v / %v)", rl, rg, lap.AggregatesEpsilon, gau.AggregatesEpsilon)
	}
	// At the Laplace's own charge ε_i²/2 the Gaussian's variance per unit of
	// sensitivity, 1/(2ρ_i) = 1/ε_i², is half the Laplace's 2/ε_i².
	for i, a := range lap.Aggregates {
		s := a.Stats[0]
		unitVar := (s.StdDev / s.Granularity / float64(s.Units)) * (s.StdDev / s.Granularity / float64(s.Units))
		if gauVar := 1 / (s.Epsilon * s.Epsilon); !(gauVar < 0.55*unitVar) {
			t.Errorf("aggregate %d: Laplace variance %v per unit, Gaussian at its charge %v", i, unitVar, gauVar)
		}
	}
	t.Logf("global COUNT and SUM[0, 10], Δ0 = m = 1: zCDP charge %.4g with Laplace (noise auto), %.4g with the Gaussian; COUNT's 95%% half-width %.3g / %.3g",
		rl, rg, lap.Aggregates[0].Stats[0].HalfWidth95, gau.Aggregates[0].Stats[0].HalfWidth95)
	var shown bool
	for _, f := range gau.Facts() {
		shown = shown || (f.Name == "aggregates_noise_choice" && strings.HasPrefix(f.Value, "gaussian"))
	}
	if !shown {
		t.Error("DP_EXPLAIN does not show the choice")
	}
	for _, f := range lap.Facts() {
		if f.Name == "aggregates_noise_choice" {
			t.Error("the choice shown without GaussianAuto")
		}
	}
	// Explicit Laplace stays Laplace; bounds left to choose are unchanged.
	o.Noise = Laplace
	if p, err := Calibrate(o); err != nil || p.Noise != Laplace || p.GaussianAuto {
		t.Errorf("explicit laplace: %v %v", p, err)
	}
	o.Noise, o.MaxRowsPerGroup = NoiseAuto, 0
	a, err1 := Calibrate(o)
	o.GaussianAuto = false
	b, err2 := Calibrate(o)
	if err1 != nil || err2 != nil || a.Noise != b.Noise || a.GaussianAuto || zcdpCharge(a) != zcdpCharge(b) {
		t.Errorf("bounds left to choose: %v %v, noise %s / %s", err1, err2, a.Noise, b.Noise)
	}
}
