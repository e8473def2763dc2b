package ngrams

import (
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

func TestDefaultsValid(t *testing.T) {
	o := Defaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.MaxN != 3 || o.MaxItems != DefaultMaxItems || o.Eta != 0.01 || o.Mechanism != setunion.DPSIPS {
		t.Fatalf("unexpected defaults %+v", o)
	}
	if o.UpdateRule() != setunion.WeightedGaussian || o.LevelMax(2) != 100 {
		t.Fatalf("update rule %s, Δ_2 %d", o.UpdateRule(), o.LevelMax(2))
	}
}

func TestValidateErrors(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"max_n 0", func(o *Options) { o.MaxN = 0 }, "max_n must be an integer from 1 to 10, got 0"},
		{"max_n 11", func(o *Options) { o.MaxN = 11 }, "max_n must be an integer from 1 to 10, got 11"},
		{"epsilon 0", func(o *Options) { o.Epsilon = 0 }, "epsilon must be a finite number greater than 0"},
		{"epsilon inf", func(o *Options) { o.Epsilon = math.Inf(1) }, "epsilon must be a finite number"},
		{"epsilon nan", func(o *Options) { o.Epsilon = nan }, "epsilon must be"},
		{"delta 0", func(o *Options) { o.Delta = 0 }, "delta must be greater than 0 and less than 1"},
		{"delta 1", func(o *Options) { o.Delta = 1 }, "delta must be"},
		{"max_items -1", func(o *Options) { o.MaxItems = -1 }, "max_items must be an integer from 1"},
		{"level max too many", func(o *Options) { o.LevelMaxItems = []int{1, 2, 3, 4} }, "gives 4 values but max_n is 3"},
		{"level max negative", func(o *Options) { o.LevelMaxItems = []int{1, -2} }, "max_items of level 2"},
		{"laplace", func(o *Options) { o.Mechanism = setunion.PolicyLaplace }, "mechanism policy_laplace cannot be used for n-grams"},
		{"policy_laplace", func(o *Options) { o.Mechanism = setunion.PolicyLaplace }, "mechanism policy_laplace cannot be used"},
		{"unknown", func(o *Options) { o.Mechanism = "foo" }, `mechanism: unknown name "foo"`},
		{"update count", func(o *Options) { o.Update = setunion.CountGaussian }, "update count_gaussian cannot be used"},
		{"l1 unigrams", func(o *Options) { o.Mechanism = setunion.PolicyGaussianL1 }, "mechanism: mechanism policy_gaussian_l1 is disabled"},
		{"l1 update", func(o *Options) { o.Update = setunion.PolicyGaussianL1 }, "update: mechanism policy_gaussian_l1 is disabled"},
		{"alpha", func(o *Options) { o.Alpha = setunion.Float(-1) }, "alpha must be a finite number ≥ 0"},
		{"eta 0", func(o *Options) { o.Eta = 0 }, "eta must be greater than 0 and less than 1, got 0"},
		{"eta 1", func(o *Options) { o.Eta = 1 }, "eta must be"},
		{"split", func(o *Options) { o.BudgetSplit = Split{Kind: Geometric, Ratio: 0} }, "finite ratio r > 0"},
	}
	for _, tc := range cases {
		o := Defaults()
		tc.mod(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
		if _, err := New(o); err == nil {
			t.Errorf("%s: New accepted invalid options", tc.name)
		}
	}
}

func TestUpdateRuleFamily(t *testing.T) {
	for m, want := range map[setunion.Mechanism]setunion.Mechanism{
		setunion.PolicyGaussianL2: setunion.WeightedGaussian,
		setunion.WeightedGaussian: setunion.WeightedGaussian,
		setunion.CountGaussian:    setunion.WeightedGaussian,
	} {
		o := Defaults()
		o.Mechanism = m
		if got := o.UpdateRule(); got != want {
			t.Errorf("mechanism %s: update rule %s, want %s", m, got, want)
		}
		o.Update = setunion.PolicyGaussianL2
		if got := o.UpdateRule(); got != setunion.PolicyGaussianL2 {
			t.Errorf("explicit update ignored: %s", got)
		}
	}
	o := Defaults()
	o.LevelMaxItems = []int{0, 7}
	if o.LevelMax(1) != 100 || o.LevelMax(2) != 7 || o.LevelMax(3) != 100 {
		t.Errorf("LevelMax = %d %d %d", o.LevelMax(1), o.LevelMax(2), o.LevelMax(3))
	}
}

func TestParseBudgetSplit(t *testing.T) {
	for in, want := range map[string]Split{
		"":              {Kind: Uniform},
		"uniform":       {Kind: Uniform},
		" Uniform ":     {Kind: Uniform},
		"geometric:2":   {Kind: Geometric, Ratio: 2},
		"GEOMETRIC:0.5": {Kind: Geometric, Ratio: 0.5},
	} {
		got, err := ParseBudgetSplit(in)
		if err != nil || got != want {
			t.Errorf("ParseBudgetSplit(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"geometric", "geometric:", "geometric:x", "geometric:0", "geometric:-1", "geometric:inf", "linear"} {
		if _, err := ParseBudgetSplit(in); err == nil {
			t.Errorf("ParseBudgetSplit(%q) accepted", in)
		}
	}
	if s := (Split{Kind: Geometric, Ratio: 2}).String(); s != "geometric:2" {
		t.Errorf("String = %q", s)
	}
}

func TestSet(t *testing.T) {
	o := Defaults()
	for name, v := range map[string]string{
		"max_n": "4", "EPSILON": "2.5", "delta": "1e-8", "max_items": "50", "mechanism": "weighted_gaussian",
		"update": "policy_gaussian_l2", "alpha": "2", "eta": "0.05", "budget_split": "geometric:3",
	} {
		if err := o.Set(name, v); err != nil {
			t.Fatalf("Set(%s, %s): %v", name, v, err)
		}
	}
	want := Options{MaxN: 4, Epsilon: 2.5, Delta: 1e-8, MaxItems: 50, Mechanism: setunion.WeightedGaussian,
		Update: setunion.PolicyGaussianL2, Eta: 0.05, BudgetSplit: Split{Kind: Geometric, Ratio: 3}}
	if o.Alpha == nil || *o.Alpha != 2 {
		t.Fatalf("alpha not set")
	}
	o.Alpha = nil
	if o.MaxN != want.MaxN || o.Epsilon != want.Epsilon || o.Delta != want.Delta || o.MaxItems != want.MaxItems ||
		o.Mechanism != want.Mechanism || o.Update != want.Update || o.Eta != want.Eta || o.BudgetSplit != want.BudgetSplit {
		t.Fatalf("Set gave %+v", o)
	}
	for _, bad := range [][2]string{{"max_n", "x"}, {"epsilon", "1,5"}, {"mechanism", "nope"}, {"colour", "red"}, {"budget_split", "half"}} {
		if err := o.Set(bad[0], bad[1]); err == nil {
			t.Errorf("Set(%s, %s) accepted", bad[0], bad[1])
		}
	}
}

// TestSigmaSplit: the levels' Gaussian budgets add up to the whole,
// Σ_k 1/σ_k² = 1/σ*², with σ* the analytic Gaussian scale at (ε, δ/2); the
// uniform split gives σ_k = σ*·√T and the geometric one shares ∝ r^(k−1).
func TestSigmaSplit(t *testing.T) {
	for _, split := range []Split{{}, {Kind: Geometric, Ratio: 2}, {Kind: Geometric, Ratio: 0.3}, {Kind: Geometric, Ratio: 1}} {
		for _, T := range []int{1, 2, 3, 7, 10} {
			for _, eps := range []float64{0.1, 1, 4, 20} {
				o := Defaults()
				o.MaxN, o.Epsilon, o.BudgetSplit = T, eps, split
				p, err := NewPlan(o)
				if err != nil {
					t.Fatal(err)
				}
				star, err := noise.GaussianSigma(eps, o.Delta/2, 1)
				if err != nil {
					t.Fatal(err)
				}
				if p.SigmaStar != star {
					t.Fatalf("σ* = %v, want %v", p.SigmaStar, star)
				}
				sum := 0.0
				for k, l := range p.Levels {
					sum += 1 / (l.Sigma * l.Sigma)
					if split.Kind != Geometric && math.Abs(l.Sigma-star*math.Sqrt(float64(T))) > 1e-12*l.Sigma {
						t.Fatalf("uniform σ_%d = %v, want σ*√T = %v", k+1, l.Sigma, star*math.Sqrt(float64(T)))
					}
					if split.Kind == Geometric && k > 0 {
						ratio := p.Levels[k-1].Sigma * p.Levels[k-1].Sigma / (l.Sigma * l.Sigma)
						if math.Abs(ratio-split.Ratio) > 1e-12*split.Ratio {
							t.Fatalf("%v: share ratio of levels %d/%d = %v", split, k+1, k, ratio)
						}
					}
				}
				if math.Abs(sum*star*star-1) > 1e-12 {
					t.Fatalf("%v T=%d ε=%v: Σ 1/σ_k² · σ*² = %v, want 1", split, T, eps, sum*star*star)
				}
			}
		}
	}
}

// TestLevel1MatchesSetUnion: with T = 1 the whole budget goes to unigrams,
// so level 1 must be calibrated exactly as the DPSU mechanism alone.
func TestLevel1MatchesSetUnion(t *testing.T) {
	for _, m := range unigramMechanisms {
		if m == setunion.DPSIPS {
			continue // its own δ split in setunion; checked by TestLevel1SIPS
		}
		o := Defaults()
		o.MaxN, o.Mechanism, o.Epsilon, o.MaxItems = 1, m, 2, 30
		p, err := NewPlan(o)
		if err != nil {
			t.Fatal(err)
		}
		want, err := setunion.Calibrate(setunion.Options{Mechanism: m, Epsilon: 2, Delta: o.Delta, MaxItems: 30, Rounds: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := p.Level1()
		close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
		if !close(got.Scale, want.Scale) || !close(got.Rho, want.Rho) || !close(got.Gamma, want.Gamma) ||
			got.MaxItems != want.MaxItems || got.Noise != want.Noise {
			t.Errorf("%s: level 1 %+v, setunion %+v", m, got, want)
		}
	}
}

// TestLevelRho checks ρ_k = σ_k·Φ⁻¹(1 − η·min(|S_{k−1}|/|V_k|, 1)) through
// the release probability of a zero-weight k-gram, Φ(−ρ_k/σ_k).
func TestLevelRho(t *testing.T) {
	for _, tc := range []struct {
		prev  int
		valid uint64
		eta   float64
		want  float64
	}{
		{100, 10000, 0.01, 0.01 * 100 / 10000.0},
		{100, 50, 0.01, 0.01},
		{5, 0, 0.2, 0.2},
		{1_000_000, 1e12, 0.01, 1e-8},
	} {
		rho := levelRho(3, tc.eta, tc.prev, tc.valid)
		if got := noise.Phi(-rho / 3); math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("prev %d valid %d η %g: Φ(−ρ/σ) = %g, want %g", tc.prev, tc.valid, tc.eta, got, tc.want)
		}
	}
}

// TestLevel1SIPS: a dp_sips unigram level splits the level's σ_1 over
// setunion.DefaultRounds rounds whose Gaussian budgets add up to 1/σ_1², with
// thresholds failing with total probability δ_T/(1+δ_T), δ_T = δ/2.
func TestLevel1SIPS(t *testing.T) {
	o := Defaults()
	o.Mechanism, o.Epsilon, o.MaxItems = setunion.DPSIPS, 2, 30
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	cal := p.Level1()
	if len(cal.Rounds) != setunion.DefaultRounds || cal.ThresholdDelta != o.Delta/2 {
		t.Fatalf("level 1 %+v", cal)
	}
	inv, dsum := 0.0, 0.0
	for _, r := range cal.Rounds {
		inv += 1 / (r.Sigma * r.Sigma)
		dsum += r.Delta
	}
	s1 := p.Levels[0].Sigma
	if math.Abs(inv*s1*s1-1) > 1e-12 || math.Abs(dsum-o.Delta/2) > 1e-18 || cal.Rho != cal.Rounds[len(cal.Rounds)-1].Rho {
		t.Errorf("rounds do not compose to σ_1 = %v: Σ1/σ_r²·σ_1² = %v, Σδ_r = %v", s1, inv*s1*s1, dsum)
	}
}

// TestMaxItemsZeroIsDefault: max_items 0 (the set-union default, passed on
// by SQL sessions) means DefaultMaxItems at every level.
func TestMaxItemsZeroIsDefault(t *testing.T) {
	o := Defaults()
	o.MaxItems = setunion.AutoMaxItems
	p, err := NewPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Levels {
		if l.MaxItems != DefaultMaxItems {
			t.Errorf("level %d: Δ = %d, want %d", l.N, l.MaxItems, DefaultMaxItems)
		}
	}
}
