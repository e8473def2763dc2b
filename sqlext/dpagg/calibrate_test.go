package dpagg

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// continuousDelta is the exact (ε, δ) profile of the continuous Gaussian
// mechanism with sensitivity 1 and scale σ (Balle & Wang 2018, Theorem 8).
func continuousDelta(sigma, eps float64) float64 {
	a, b := 1/(2*sigma), eps*sigma
	return noise.Phi(a-b) - math.Exp(eps+noise.LogPhi(-a-b))
}

// discreteDelta is the exact (ε, δ) profile of the discrete Gaussian
// mechanism N_Z(0, σ²) for an integer query of sensitivity 1 (CKS20
// Theorem 7): P[Y > εσ² − 1/2] − e^ε·P[Y > εσ² + 1/2], the tails summed
// directly.
func discreteDelta(sigma, eps float64) float64 {
	s2 := sigma * sigma
	weight := func(y float64) float64 { return math.Exp(-y * y / (2 * s2)) }
	norm := 1.0
	for y := 1.0; y < 60*sigma+10; y++ {
		norm += 2 * weight(y)
	}
	tail := func(x float64) float64 { // P[Y > x]
		t := 0.0
		for y := math.Floor(x) + 1; y < 60*sigma+10; y++ {
			if y < -60*sigma-10 {
				continue
			}
			t += weight(y)
		}
		return t / norm
	}
	return tail(eps*s2-0.5) - math.Exp(eps)*tail(eps*s2+0.5)
}

// TestZCDPDeltaBoundsTheExactProfiles: ZCDPDelta(1/(2σ²), ε) is a valid δ
// for both Gaussian mechanisms (it is at least their exact δ), at most the
// Bun–Steinke bound, and not absurdly loose.
func TestZCDPDeltaBoundsTheExactProfiles(t *testing.T) {
	for _, sigma := range []float64{0.5, 1, 2, 5, 20} {
		for _, eps := range []float64{0.1, 0.5, 1, 3} {
			rho := 1 / (2 * sigma * sigma)
			d := ZCDPDelta(rho, eps)
			cd := continuousDelta(sigma, eps)
			dd := discreteDelta(sigma, eps)
			if cd > d*(1+1e-9) || dd > d*(1+1e-9) {
				t.Errorf("σ=%v ε=%v: zCDP bound %.6g below exact δ (continuous %.6g, discrete %.6g)", sigma, eps, d, cd, dd)
			}
			if eps > rho {
				if bs := math.Exp(-(eps - rho) * (eps - rho) / (4 * rho)); d > bs*(1+1e-12) {
					t.Errorf("σ=%v ε=%v: %.6g above Bun–Steinke %.6g", sigma, eps, d, bs)
				}
			}
			t.Logf("σ=%v ε=%v: δ zCDP %.4g, exact continuous %.4g, exact discrete %.4g", sigma, eps, d, cd, dd)
			if cd > 1e-12 && d > 20*cd {
				t.Errorf("σ=%v ε=%v: zCDP bound %.6g more than 20× the exact %.6g", sigma, eps, d, cd)
			}
		}
	}
}

// TestMaxRho: maxRho is the largest ρ meeting δ, to 1e-9.
func TestMaxRho(t *testing.T) {
	for _, eps := range []float64{0.01, 0.5, 1, 5} {
		for _, delta := range []float64{1e-12, 5e-7, 1e-3} {
			rho, err := maxRho(eps, delta)
			if err != nil {
				t.Fatal(err)
			}
			if d := ZCDPDelta(rho, eps); d > delta {
				t.Errorf("ε=%v δ=%v: ρ=%v gives δ=%v", eps, delta, rho, d)
			}
			if d := ZCDPDelta(rho*(1+1e-6), eps); d <= delta*(1-1e-9) {
				t.Errorf("ε=%v δ=%v: ρ=%v is not the largest (ρ(1+1e-6) gives %v)", eps, delta, rho, d)
			}
		}
	}
}

func aggs(k ...Kind) []Aggregate {
	var out []Aggregate
	for _, kind := range k {
		a := Aggregate{Kind: kind}
		if kind.clamped() {
			a.Lower, a.Upper = -3, 50
		}
		out = append(out, a)
	}
	return out
}

// TestBudgetAddsUp: the selection's (ε, δ) plus the aggregates' (exact
// remainders) never exceed the options', and the statistics' shares add up
// to the aggregates' budget: Σε_i ≤ ε_a (Laplace), Σρ_i ≤ ρ (Gaussian).
func TestBudgetAddsUp(t *testing.T) {
	for _, n := range []Noise{Laplace, Gaussian, NoiseAuto} {
		for _, share := range []float64{0, 0.1, 0.77} {
			o := Defaults()
			o.Epsilon, o.Delta = 0.3, 1e-8
			o.Noise = n
			o.SelectionShare = share
			o.Aggregates = aggs(CountRows, CountUnits, CountValues, Sum, Avg)
			o.Aggregates[2].Weight = 3
			p, err := Calibrate(o)
			if err != nil {
				t.Fatal(err)
			}
			eps := new(big.Rat).Add(exactRat(p.Selection.Epsilon), exactRat(p.AggregatesEpsilon))
			del := new(big.Rat).Add(exactRat(p.Selection.Delta), exactRat(p.AggregatesDelta))
			if eps.Cmp(exactRat(o.Epsilon)) > 0 || del.Cmp(exactRat(o.Delta)) > 0 {
				t.Errorf("%s share %v: selection (%v, %v) + aggregates (%v, %v) exceed (%v, %v)", n, share,
					p.Selection.Epsilon, p.Selection.Delta, p.AggregatesEpsilon, p.AggregatesDelta, o.Epsilon, o.Delta)
			}
			sumEps, sumRho, shares := 0.0, 0.0, 0.0
			for _, a := range p.Aggregates {
				shares += a.Share
				for _, s := range a.Stats {
					sumEps += s.Epsilon
					sumRho += s.Rho
					// The noise is calibrated to the stated sensitivity.
					switch p.Noise {
					case Laplace:
						if want := s.L1 / s.Epsilon; s.Scale < want*(1-1e-12) {
							t.Errorf("%s %s: Laplace scale %v below Δ1/ε = %v", a.Kind, s.Name, s.Scale, want)
						}
					case Gaussian:
						if want := s.L2 / math.Sqrt(2*s.Rho); s.Scale < want*(1-1e-12) {
							t.Errorf("%s %s: σ %v below Δ2/√(2ρ) = %v", a.Kind, s.Name, s.Scale, want)
						}
					}
				}
			}
			if math.Abs(shares-1) > 1e-12 {
				t.Errorf("shares sum to %v", shares)
			}
			switch p.Noise {
			case Laplace:
				if sumEps > p.AggregatesEpsilon*(1+1e-12) || p.AggregatesDelta != 0 || p.Selection.Delta != o.Delta {
					t.Errorf("Laplace: Σε_i = %v for ε_a = %v; δ_a = %v", sumEps, p.AggregatesEpsilon, p.AggregatesDelta)
				}
			case Gaussian:
				if sumRho > p.Rho {
					t.Errorf("Gaussian: Σρ_i = %v for ρ = %v", sumRho, p.Rho)
				}
				if p.Composition == CompositionZCDP {
					// The release's parts composed in zCDP (jointrho.go).
					sel := selectionRho(p)
					if d := ZCDPDelta(sel+p.Rho, o.Epsilon); d > o.Delta-p.Selection.ThresholdDelta {
						t.Errorf("Gaussian, zCDP composition: ρ_sel %v + ρ %v gives δ %v > δ − δ_T = %v", sel, p.Rho, d, o.Delta-p.Selection.ThresholdDelta)
					}
				} else if ZCDPDelta(p.Rho, p.AggregatesEpsilon) > p.AggregatesDelta {
					t.Errorf("Gaussian: ρ = %v gives δ %v for %v", p.Rho, ZCDPDelta(p.Rho, p.AggregatesEpsilon), p.AggregatesDelta)
				}
			}
		}
	}
}

// TestSensitivities: the per-key contributions and sensitivities follow
// the contribution bounds.
func TestSensitivities(t *testing.T) {
	o := Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 4, 3
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountValues}, {Kind: CountUnits},
		{Kind: Sum, Lower: -7, Upper: 2}, {Kind: Avg, Lower: 10, Upper: 20}}
	p, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{3}, {3}, {1}, {21}, {3, 15}} // contribution per stat
	for i, a := range p.Aggregates {
		for j, s := range a.Stats {
			if s.Contribution != want[i][j] {
				t.Errorf("%s stat %d: contribution %v, want %v", a.Kind, j, s.Contribution, want[i][j])
			}
			ratio := s.Contribution / s.Granularity
			if s.Name != "count" && !(ratio > 1<<29 && ratio <= 1<<30) {
				t.Errorf("%s: c/g = %v outside (2^29, 2^30]", a.Kind, ratio)
			}
			if got := float64(s.Units) * s.Granularity; got < s.Contribution || got > s.Contribution+s.Granularity {
				t.Errorf("%s: Units·g = %v for c = %v", a.Kind, got, s.Contribution)
			}
			if s.L1 != 4*float64(s.Units)*s.Granularity || s.L2 != 2*float64(s.Units)*s.Granularity {
				t.Errorf("%s: L1 %v L2 %v", a.Kind, s.L1, s.L2)
			}
		}
	}
}

// TestGridCoarsensForHugeNoise: when the finest grid would put the noise
// scale above 2^49 units, the grid coarsens (never below c·2^−10) and the
// scale fits.
func TestGridCoarsensForHugeNoise(t *testing.T) {
	o := Defaults()
	o.Epsilon = 0.01
	o.MaxGroupsContributed = 100_000
	o.Noise = Laplace
	o.Aggregates = []Aggregate{{Kind: Sum, Lower: 0, Upper: 1}}
	p, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Aggregates[0].Stats[0]
	units := s.Scale / s.Granularity
	ratio := s.Contribution / s.Granularity
	t.Logf("c/g = 2^%.1f, scale %.3g units", math.Log2(ratio), units)
	if units > 1<<50 || ratio >= 1<<30 || ratio < 1<<9 {
		t.Errorf("c/g = %v, scale %v units", ratio, units)
	}
}

// TestAutoNoise: automatic noise picks Laplace for one count with Δ0 = 1
// and Gaussian for several aggregates with Δ0 = 100.
func TestAutoNoise(t *testing.T) {
	o := Defaults()
	o.MaxGroupsContributed = 1
	o.Aggregates = aggs(CountRows)
	if p, _ := Calibrate(o); p.Noise != Laplace {
		t.Errorf("Δ0=1, one count: %s", p.Noise)
	}
	o.MaxGroupsContributed = 100
	o.Aggregates = aggs(CountRows, Sum, Avg)
	if p, _ := Calibrate(o); p.Noise != Gaussian {
		t.Errorf("Δ0=100, three aggregates: %s", p.Noise)
	}
}

// TestExplainWithoutAggregates: with no aggregates the selection gets the
// whole budget and matches setunion's calibration of a DISTINCT.
func TestExplainWithoutAggregates(t *testing.T) {
	o := Defaults()
	p, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := setunion.Calibrate(setunion.Options{Mechanism: DefaultSelectionMechanism, Epsilon: o.Epsilon,
		Delta: o.Delta, MaxItems: o.MaxGroupsContributed, Rounds: setunion.DefaultRounds})
	if p.Selection.Rho != want.Rho || p.Selection.Scale != want.Scale {
		t.Errorf("selection %+v, want %+v", p.Selection, want)
	}
}

func TestValidateRejects(t *testing.T) {
	mut := func(f func(*Options)) Options {
		o := Defaults()
		o.Aggregates = aggs(CountRows, Sum)
		f(&o)
		return o
	}
	cases := []struct {
		o    Options
		want string
	}{
		{mut(func(o *Options) { o.Epsilon = 0 }), "epsilon"},
		{mut(func(o *Options) { o.Delta = 1 }), "delta"},
		{mut(func(o *Options) { o.MaxGroupsContributed = -1 }), "max_groups_contributed"},
		{mut(func(o *Options) { o.MaxRowsPerGroup = -1 }), "max_rows_per_group"},
		{mut(func(o *Options) { o.Noise = "uniform" }), "noise"},
		{mut(func(o *Options) { o.SelectionShare = 1 }), "selection_share"},
		{mut(func(o *Options) { o.SelectionDeltaShare = -0.5 }), "selection_delta_share"},
		{mut(func(o *Options) { o.Mechanism = setunion.GreedyFrequency }), "by priority"},
		{mut(func(o *Options) { o.Mechanism = setunion.GreedyFrequencyUnproven }), "unproven"},
		{mut(func(o *Options) { o.Mechanism = setunion.PolicyGaussianL1 }), "disabled"},
		{mut(func(o *Options) { o.Mechanism = setunion.SingleItem }), "max_groups_contributed=1"},
		{mut(func(o *Options) { o.Aggregates[1].Lower, o.Aggregates[1].Upper = 0, 0 }), "clamping bounds"},
		{mut(func(o *Options) { o.Aggregates[1].Upper = math.Inf(1) }), "clamping bounds"},
		{mut(func(o *Options) { o.Aggregates[0].Kind = "median" }), "unknown aggregate"},
		{mut(func(o *Options) { o.Aggregates[0].Weight = -1 }), "weight"},
		{mut(func(o *Options) {
			o.Epsilon, o.MaxGroupsContributed, o.MaxRowsPerGroup, o.Noise = 1e-6, 1_000_000, 1<<20, Laplace
		}), "above 2^50"},
		{mut(func(o *Options) {
			o.Epsilon, o.MaxGroupsContributed, o.MaxRowsPerGroup, o.Noise = 1e-3, 1_000_000, 1<<20, Laplace
		}), "above 2^50"},
	}
	for _, c := range cases {
		_, err := Calibrate(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("options %+v: error %v, want one mentioning %q", c.o, err, c.want)
		}
	}
	o := mut(func(o *Options) { o.Mechanism = setunion.SingleItem; o.MaxGroupsContributed = 1 })
	if _, err := Calibrate(o); err != nil {
		t.Errorf("single_item with Δ0 = 1: %v", err)
	}
}

// TestLines: the rendering names the threshold and every aggregate's scale
// and interval.
func TestLines(t *testing.T) {
	o := Defaults()
	o.Aggregates = aggs(CountRows, Avg)
	p, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	lines := p.Lines()
	for _, l := range lines {
		t.Log(l)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"exceeds", "count: share", "avg [-3, 50] normalized_sum", "95% interval", "/ count"} {
		if !strings.Contains(text, want) {
			t.Errorf("rendering lacks %q", want)
		}
	}
}

// TestConservativeGaussian reports the price of the zCDP conversion at the
// default split: the discrete Gaussian σ per unit sensitivity against the
// analytic continuous Gaussian σ.
func TestConservativeGaussian(t *testing.T) {
	o := Defaults()
	o.Noise = Gaussian
	o.Aggregates = aggs(CountRows)
	p, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	rho, err := maxRho(p.AggregatesEpsilon, p.AggregatesDelta)
	if err != nil {
		t.Fatal(err)
	}
	split := 1 / math.Sqrt(2*rho)
	ratio := split / p.AnalyticUnitSigma
	t.Logf("ε_a=%v δ_a=%v: zCDP unit σ of the aggregates' own share %.4f, analytic %.4f (×%.3f); composed with the selection in zCDP (%s) %.4f", p.AggregatesEpsilon, p.AggregatesDelta, split, p.AnalyticUnitSigma, ratio, p.Composition, p.UnitSigma)
	if ratio < 1 || ratio > 1.2 {
		t.Errorf("zCDP σ / analytic σ = %v, expected in [1, 1.2]", ratio)
	}
	if p.Composition != CompositionZCDP || p.UnitSigma > 0.65*split {
		t.Errorf("the default release's aggregates are not composed in zCDP (%s, σ %v against %v)", p.Composition, p.UnitSigma, split)
	}
}

// selectionRho is the zCDP ρ of a plan's dp_sips key selection: its rounds
// and its tests of Δ0 (as sqlext/accounting charges it).
func selectionRho(p *Plan) float64 {
	var r float64
	for _, x := range p.Selection.Rounds {
		r += 1 / (2 * x.Sigma * x.Sigma)
	}
	if a := p.Selection.Auto; a != nil {
		r += float64(a.Tests) / (2 * a.TestSigma * a.TestSigma)
	}
	return r
}
