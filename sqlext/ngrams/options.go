package ngrams

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/sqlext/checks"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Limits and defaults of Options.
const (
	// DefaultMaxN is the default T, the longest n-grams extracted.
	DefaultMaxN = 3
	// MaxMaxN bounds T. Each level costs a pass over the tokens and splits
	// the budget further; beyond 10 nothing useful survives the split.
	MaxMaxN = 10
	// DefaultEta is the default η: at level k ≥ 2 about η·|S_{k−1}| of the
	// released k-grams are expected to be spurious (docs/privacy.md §8).
	DefaultEta = 0.01
	// DefaultMaxItems is the default Δ of every level. The set-union default
	// chooses Δ0 privately (setunion.AutoMaxItems); the n-gram levels keep a
	// fixed bound.
	DefaultMaxItems = 100
	// DefaultMechanism is the default DPSU mechanism of the unigram level:
	// dp_sips, as for set union. Measured at ε = 4, δ = 1e-6, T = 3 on
	// git_python_ecosystem and newsgroups20 (TestCorpusComparison), it
	// releases 18% and 35% more unigrams than policy_gaussian_l2 and 6% and
	// 8% more n-grams in total (slightly fewer bigrams).
	DefaultMechanism = setunion.DPSIPS
)

// Options configures one extraction. Start from Defaults and override fields;
// Validate (called by New) reports what is wrong before any data is read.
type Options struct {
	// MaxN is T, the longest n-grams extracted: 1 ≤ T ≤ MaxMaxN.
	MaxN int
	// Epsilon and Delta are the (ε, δ) of the whole extraction, all levels
	// together: ε > 0 finite, δ ∈ (0, 1).
	Epsilon float64
	Delta   float64
	// MaxItems is Δ, the most n-grams kept per user and level (sampled
	// uniformly without replacement after pruning), 1..setunion.MaxMaxItems;
	// 0 (setunion.AutoMaxItems, the set-union default, which SQL sessions
	// pass on) means DefaultMaxItems: the n-gram levels do not choose Δ
	// privately.
	MaxItems int
	// LevelMaxItems optionally sets Δ_k per level: LevelMaxItems[k−1] for
	// level k; a missing or zero entry means MaxItems.
	LevelMaxItems []int
	// Mechanism is the DPSU mechanism of the unigram level: a Gaussian one
	// (count_gaussian, weighted_gaussian, policy_gaussian_l2, dp_sips with
	// setunion.DefaultRounds rounds). Defaults sets DefaultMechanism.
	// policy_gaussian_l1 is refused (see setunion).
	Mechanism setunion.Mechanism
	// Update is the histogram update rule of the levels k ≥ 2: one of
	// weighted_gaussian, policy_gaussian_l2. Empty means weighted_gaussian,
	// Kim et al.'s choice, which on the shared corpora releases more at level
	// 2 than ℓ2-descent given the same S_1 (see the corpus comparison test).
	Update setunion.Mechanism
	// Alpha sets the cutoff Γ = ρ + α·σ of the policies at every level; nil
	// means each rule's default (setunion.Mechanism.DefaultAlpha). ≥ 0.
	Alpha *float64
	// Eta is η ∈ (0, 1), which sets the thresholds of the levels k ≥ 2:
	// ρ_k = σ_k·Φ⁻¹(1 − η·min(|S_{k−1}|/|V_k|, 1)).
	Eta float64
	// BudgetSplit shares the Gaussian budget between the levels; the zero
	// value is the uniform split.
	BudgetSplit Split
}

// Defaults returns the default options: T = 3, ε = 1, δ = 1e-6, Δ = 100,
// dp_sips (3 rounds) for unigrams and weighted_gaussian above, η = 0.01, a
// uniform budget split.
func Defaults() Options {
	return Options{
		MaxN:      DefaultMaxN,
		Epsilon:   setunion.DefaultEpsilon,
		Delta:     setunion.DefaultDelta,
		MaxItems:  DefaultMaxItems,
		Mechanism: DefaultMechanism,
		Eta:       DefaultEta,
	}
}

// unigramMechanisms are the DPSU mechanisms a level-1 release may use: the
// Gaussian ones, so that level 1 is one Gaussian mechanism of the
// composition (dp_sips splits the level's σ_1 over setunion.DefaultRounds
// rounds, Σ_r 1/σ_r² = 1/σ_1²).
var unigramMechanisms = []setunion.Mechanism{
	setunion.CountGaussian, setunion.WeightedGaussian, setunion.PolicyGaussianL2, setunion.DPSIPS,
}

// updateRules are the rules of the levels k ≥ 2: Gaussian rules whose user
// contribution has ℓ2 norm ≤ 1 (weighted) or that are ℓ2-contractive
// (policies), so that H_k has ℓ2 sensitivity 1.
var updateRules = []setunion.Mechanism{
	setunion.WeightedGaussian, setunion.PolicyGaussianL2,
}

// UpdateRule returns the rule of the levels k ≥ 2: Update, or
// weighted_gaussian when Update is empty.
func (o Options) UpdateRule() setunion.Mechanism {
	if o.Update != "" {
		return o.Update
	}
	return setunion.WeightedGaussian
}

// LevelMax returns Δ_k, the per-user bound of level k (1-based).
func (o Options) LevelMax(k int) int {
	if k-1 < len(o.LevelMaxItems) && o.LevelMaxItems[k-1] > 0 {
		return o.LevelMaxItems[k-1]
	}
	if o.MaxItems == setunion.AutoMaxItems {
		return DefaultMaxItems
	}
	return o.MaxItems
}

// alphaOf returns α for rule m.
func (o Options) alphaOf(m setunion.Mechanism) float64 {
	if o.Alpha != nil {
		return *o.Alpha
	}
	return m.DefaultAlpha()
}

// Validate checks every parameter and returns an error that names the
// parameter, the value given and the values allowed.
func (o Options) Validate() error {
	if o.MaxN < 1 || o.MaxN > MaxMaxN {
		return fmt.Errorf("max_n must be an integer from 1 to %d, got %d", MaxMaxN, o.MaxN)
	}
	if err := checks.Epsilon(o.Epsilon); err != nil {
		return err
	}
	if err := checks.Delta(o.Delta); err != nil {
		return err
	}
	if o.MaxItems < 0 || o.MaxItems > setunion.MaxMaxItems {
		return fmt.Errorf("max_items must be an integer from 1 to %d (0 for the default, %d), got %d", setunion.MaxMaxItems, DefaultMaxItems, o.MaxItems)
	}
	if len(o.LevelMaxItems) > o.MaxN {
		return fmt.Errorf("level max_items gives %d values but max_n is %d: give at most one per level", len(o.LevelMaxItems), o.MaxN)
	}
	for k, d := range o.LevelMaxItems {
		if d < 0 || d > setunion.MaxMaxItems {
			return fmt.Errorf("max_items of level %d must be an integer from 1 to %d (0 for the default), got %d", k+1, setunion.MaxMaxItems, d)
		}
	}
	if err := checkRule("mechanism", o.Mechanism, unigramMechanisms,
		"n-gram extraction composes one Gaussian mechanism per level"); err != nil {
		return err
	}
	if o.Update != "" {
		if err := checkRule("update", o.Update, updateRules,
			"levels k ≥ 2 need a Gaussian rule with ℓ2 sensitivity 1"); err != nil {
			return err
		}
	}
	if o.Alpha != nil && (!(*o.Alpha >= 0) || math.IsInf(*o.Alpha, 0)) {
		return fmt.Errorf("alpha must be a finite number ≥ 0, got %v", *o.Alpha)
	}
	if !(o.Eta > 0 && o.Eta < 1) {
		return fmt.Errorf("eta must be greater than 0 and less than 1, got %v", o.Eta)
	}
	return o.BudgetSplit.validate()
}

func checkRule(option string, m setunion.Mechanism, allowed []setunion.Mechanism, why string) error {
	for _, a := range allowed {
		if m == a {
			return nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	if _, err := setunion.ParseMechanism(string(m)); err != nil {
		return fmt.Errorf("%s: unknown name %q: use one of %s", option, m, strings.Join(names, ", "))
	}
	if err := m.Disabled(); err != nil {
		return fmt.Errorf("%s: %w", option, err)
	}
	return fmt.Errorf("%s %s cannot be used for n-grams (%s): use one of %s", option, m, why, strings.Join(names, ", "))
}

// SplitKind names a way of sharing the budget between levels.
type SplitKind string

// Budget splits.
const (
	// Uniform gives every level the same share: σ_k = σ*·√T.
	Uniform SplitKind = "uniform"
	// Geometric gives level k a share proportional to r^(k−1): r > 1 favours
	// longer n-grams, r < 1 shorter ones, r = 1 is Uniform.
	Geometric SplitKind = "geometric"
)

// Split shares the Gaussian budget μ² = 1/σ*² between levels: level k gets
// the fraction f_k (Σ f_k = 1), that is σ_k = σ*/√f_k, so that
// Σ_k 1/σ_k² = 1/σ*² and the levels compose to one Gaussian mechanism of
// scale σ*. The zero value is Uniform.
type Split struct {
	Kind SplitKind
	// Ratio is r of Geometric: finite and > 0.
	Ratio float64
}

// ParseBudgetSplit parses "uniform" or "geometric:r" (r > 0; for example
// "geometric:2" doubles the share of each longer level).
func ParseBudgetSplit(s string) (Split, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch {
	case t == "" || t == string(Uniform):
		return Split{Kind: Uniform}, nil
	case strings.HasPrefix(t, string(Geometric)+":"):
		r, err := strconv.ParseFloat(strings.TrimSpace(t[len(Geometric)+1:]), 64)
		if err != nil {
			return Split{}, fmt.Errorf("budget_split %q: the ratio after \"geometric:\" must be a number, for example geometric:2", s)
		}
		sp := Split{Kind: Geometric, Ratio: r}
		return sp, sp.validate()
	}
	return Split{}, fmt.Errorf("unknown budget_split %q: use uniform or geometric:r (r > 0; r > 1 gives longer n-grams more budget)", s)
}

// String returns the form ParseBudgetSplit accepts.
func (s Split) String() string {
	if s.Kind == Geometric {
		return fmt.Sprintf("geometric:%v", s.Ratio)
	}
	return string(Uniform)
}

func (s Split) validate() error {
	switch s.Kind {
	case "", Uniform:
		return nil
	case Geometric:
		if !(s.Ratio > 0) || math.IsInf(s.Ratio, 0) {
			return fmt.Errorf("budget_split geometric:r needs a finite ratio r > 0, got %v", s.Ratio)
		}
		return nil
	}
	return fmt.Errorf("unknown budget_split %q: use uniform or geometric:r", s.Kind)
}

// Fractions returns f_1..f_T (Σ f_k = 1).
func (s Split) Fractions(t int) []float64 {
	f := make([]float64, t)
	total := 0.0
	for k := range f {
		if s.Kind == Geometric {
			f[k] = math.Pow(s.Ratio, float64(k))
		} else {
			f[k] = 1
		}
		total += f[k]
	}
	for k := range f {
		f[k] /= total
	}
	return f
}

// Set sets the option called name (case-insensitive) from its text, with the
// names of the SQL options string: max_n, epsilon, delta, max_items,
// mechanism, update, alpha, eta, budget_split. The value is checked when the
// options are validated; Set reports only unknown names and values that do
// not parse.
func (o *Options) Set(name, value string) error {
	v := strings.TrimSpace(value)
	var err error
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "max_n":
		o.MaxN, err = setunion.ParseInt(v)
	case "epsilon":
		o.Epsilon, err = setunion.ParseFloat(v)
	case "delta":
		o.Delta, err = setunion.ParseFloat(v)
	case "max_items":
		o.MaxItems, err = setunion.ParseInt(v)
	case "mechanism":
		o.Mechanism, err = setunion.ParseMechanism(v)
	case "update":
		o.Update, err = setunion.ParseMechanism(v)
	case "alpha":
		var a float64
		if a, err = setunion.ParseFloat(v); err == nil {
			o.Alpha = &a
		}
	case "eta":
		o.Eta, err = setunion.ParseFloat(v)
	case "budget_split":
		o.BudgetSplit, err = ParseBudgetSplit(v)
	default:
		return fmt.Errorf("unknown n-gram option %q: use max_n, epsilon, delta, max_items, mechanism, update, alpha, eta or budget_split", name)
	}
	return err
}
