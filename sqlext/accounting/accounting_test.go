package accounting

import (
	"math"
	"testing"

	"github.com/dpsql/dpsql/sqlext/ngrams"
	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

func near(t *testing.T, name string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %.16g, want %.16g (relative tolerance %g)", name, got, want, rel)
	}
}

// TestCKSPublishedValues checks the conversion of Canonne, Kamath & Steinke
// (2020) against the values published with OpenDP's implementation of it
// (rust/src/combinators/measure_cast/zCDP_to_approxDP, test.rs and
// cdp_delta/test.rs): a Gaussian of scale 4 at sensitivity 1 (ρ = 1/32) is
// (0.6880024554878086, 1e-3)-DP and (0, 0.1508457845622862)-DP;
// cdp_delta(0.05, 0.25) = 0.0817727531036956; cdp_delta(0.5, 0) =
// 0.5588356393474351.
func TestCKSPublishedValues(t *testing.T) {
	near(t, "CKSEpsilon(1/32, 1e-3)", CKSEpsilon(1.0/32, 1e-3), 0.6880024554878086, 1e-9)
	near(t, "CKSDelta(1/32, 0)", CKSDelta(1.0/32, 0), 0.1508457845622862, 1e-9)
	near(t, "CKSDelta(0.05, 0.25)", CKSDelta(0.05, 0.25), 8.17727531036956e-2, 1e-9)
	near(t, "CKSDelta(0.5, 0)", CKSDelta(0.5, 0), 0.5588356393474351, 1e-9)
	// The two directions agree.
	for _, c := range []struct{ rho, delta float64 }{{0.01, 1e-6}, {0.5, 1e-5}, {3, 1e-10}, {1.0 / 32, 1e-3}} {
		eps := CKSEpsilon(c.rho, c.delta)
		near(t, "CKSDelta(ρ, CKSEpsilon(ρ, δ))", CKSDelta(c.rho, eps), c.delta, 1e-6)
	}
}

// TestConversionsOrdered: for a Gaussian composition (ρ = μ²/2) the exact
// GDP profile is the tightest, then CKS, then Bun & Steinke; and each is a
// valid bound, so none is below the exact one.
func TestConversionsOrdered(t *testing.T) {
	for _, mu := range []float64{0.05, 0.3, 1, 2.5} {
		for _, d := range []float64{1e-3, 1e-6, 1e-10} {
			rho := mu * mu / 2
			g, c, b := GaussianEpsilon(mu, d), CKSEpsilon(rho, d), BunSteinkeEpsilon(rho, d)
			if !(g <= c*(1+1e-12) && c <= b*(1+1e-12)) {
				t.Errorf("μ=%v δ=%v: GDP %v, CKS %v, Bun–Steinke %v not ordered", mu, d, g, c, b)
			}
			if got := GaussianDelta(mu, g); got > d*(1+1e-9) {
				t.Errorf("μ=%v: δ(GaussianEpsilon) = %v > δ = %v", mu, got, d)
			}
		}
	}
}

// TestGaussianMatchesAnalyticSigma: the exact GDP profile inverts the
// analytic Gaussian calibration of package noise (Balle & Wang 2018): a
// Gaussian of scale GaussianSigma(ε, δ, 1) is (ε, δ)-DP and no better.
func TestGaussianMatchesAnalyticSigma(t *testing.T) {
	for _, c := range []struct{ eps, delta float64 }{{1, 1e-5}, {0.1, 1e-6}, {3, 4.54e-5}, {8, 1e-10}} {
		s, err := noise.GaussianSigma(c.eps, c.delta, 1)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "GaussianEpsilon(1/σ(ε, δ), δ)", GaussianEpsilon(1/s, c.delta), c.eps, 1e-6)
	}
}

// TestOneReleaseCostsItsStatedEpsilon: accounted alone, a Gaussian release
// (dp_sips with a private Δ0, weighted_gaussian, count_gaussian, an n-gram
// extraction) costs exactly its stated (ε, δ) under the zCDP accounting too:
// δ_T pays for the thresholds and the exact GDP profile at δ − δ_T gives ε.
func TestOneReleaseCostsItsStatedEpsilon(t *testing.T) {
	for _, m := range []setunion.Mechanism{setunion.DPSIPS, setunion.WeightedGaussian, setunion.CountGaussian, setunion.PolicyGaussianL2} {
		for _, d0 := range []int{setunion.AutoMaxItems, 7} {
			o := setunion.Defaults()
			o.Mechanism, o.Epsilon, o.Delta, o.MaxItems = m, 1.5, 1e-6, d0
			c, err := SetUnionOptions(o)
			if err != nil {
				t.Fatal(err)
			}
			near(t, string(m)+": threshold charge", c.ThresholdCharge(), mustCal(t, o).ThresholdDelta, 1e-9)
			near(t, string(m)+": ε under zCDP accounting", c.ConcentratedEpsilon(o.Delta), o.Epsilon, 1e-6)
			if c.EpsilonAt(o.Delta) > o.Epsilon {
				t.Errorf("%s: EpsilonAt(δ) = %v > stated ε", m, c.EpsilonAt(o.Delta))
			}
		}
	}
	no := ngrams.Defaults()
	c, err := Ngrams(no)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "n-grams: ε under zCDP accounting", c.ConcentratedEpsilon(no.Delta), no.Epsilon, 1e-6)
}

func mustCal(t *testing.T, o setunion.Options) setunion.Calibration {
	t.Helper()
	cal, err := setunion.Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	return cal
}

// TestLaplaceAndBasicCosts: a Laplace release costs ρ = ε²/2 with all of δ
// for its threshold; single_item, unproven mechanisms and legacy charges are
// basic only; composition adds every field.
func TestLaplaceAndBasicCosts(t *testing.T) {
	o := setunion.Defaults()
	o.Mechanism, o.Epsilon, o.Delta, o.MaxItems = setunion.PolicyLaplace, 0.5, 1e-6, 10
	c, err := SetUnionOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rho != 0.125 || c.GaussianRho != 0 || math.Abs(c.ThresholdCharge()-1e-6) > 1e-18 {
		t.Errorf("policy_laplace cost %+v", c)
	}
	o.Mechanism = setunion.SingleItem
	s, _ := SetUnionOptions(o)
	if s != Basic(0.5, 1e-6) {
		t.Errorf("single_item cost %+v, want basic", s)
	}
	o.Mechanism, o.AllowUnproven = setunion.GreedyFrequencyUnproven, true
	u, _ := SetUnionOptions(o)
	if u != Basic(0.5, 1e-6) {
		t.Errorf("unproven cost %+v, want basic", u)
	}
	all := Compose(c, s, u, Basic(2, 1e-7))
	if all.Releases != 4 || all.BasicEpsilon != 3 || math.Abs(all.Epsilon-3.5) > 1e-12 || all.Rho != 0.125 {
		t.Errorf("composition %+v", all)
	}
	// Mixed Laplace: CKS conversion, plus the basic parts.
	want := 3 + CKSEpsilon(0.125, 1e-3-all.BasicDelta-all.ThresholdCharge())
	near(t, "mixed composition ε", all.ConcentratedEpsilon(1e-3), want, 1e-12)
	if !math.IsInf(all.ConcentratedEpsilon(all.BasicDelta), 1) {
		t.Errorf("no δ left for the conversion must give ε = +Inf")
	}
}

// TestDefaultReleasesInBudget is the comparison of issue 16: how many default
// releases at ε = 1 (δ = 1e-6) fit in a budget of ε = 10, δ = 1e-5, under
// basic composition and under the zCDP accounting. The thresholds' δ_T
// (0.2·δ for dp_sips) stays additive, so δ alone caps the count at
// 1e-5/2e-7 = 50.
func TestDefaultReleasesInBudget(t *testing.T) {
	o := setunion.Defaults()
	c, err := SetUnionOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	conc, basic := MaxRepeats(c, 10, 1e-5, 1000)
	t.Logf("default releases (%s, ε = %v, δ = %v) in a budget of ε = 10, δ = 1e-5: %d by basic composition, %d under zCDP accounting (ε spent by %d: %.3f)",
		o.Mechanism, o.Epsilon, o.Delta, basic, conc, conc, Repeat(c, conc).EpsilonAt(1e-5))
	if basic < 9 || basic > 10 {
		t.Errorf("basic composition fits %d releases, want 10 (9 if float rounding of 10·1e-6 exceeds 1e-5)", basic)
	}
	if conc < 3*basic {
		t.Errorf("zCDP accounting fits %d releases, want at least 3× basic (%d)", conc, basic)
	}
	if Repeat(c, conc+1).Fits(10, 1e-5) {
		t.Errorf("MaxRepeats is not the largest count")
	}
	// The former default (policy_gaussian_l2, Δ0 = 100, δ split ½/½).
	old := setunion.Options{Mechanism: setunion.PolicyGaussianL2, Epsilon: 1, Delta: 1e-6, MaxItems: 100, Rounds: 1}
	oc, err := SetUnionOptions(old)
	if err != nil {
		t.Fatal(err)
	}
	oconc, obasic := MaxRepeats(oc, 10, 1e-5, 1000)
	t.Logf("former default (policy_gaussian_l2, δ_T = δ/2): %d by basic composition, %d under zCDP accounting", obasic, oconc)
}
