// Package setunion implements differentially private set union (DPSU): given
// (privacy unit, item) pairs, release as many items as possible under
// user-level (ε, δ)-differential privacy, where neighbouring databases differ
// in all rows of one user.
//
// Every mechanism follows the pipeline of ALGORITHMS.md §1 (Gopi et al. 2020,
// Algorithms 1–2; Carvalho et al. 2022, Algorithm 1): group pairs by user and
// deduplicate; order users by a keyed hash with a fresh key per release;
// bound each user to Δ0 items sampled uniformly without replacement; build a
// weighted histogram H with the mechanism's update rule; release each item u
// of supp(H) independently when H[u] plus noise exceeds a threshold ρ. The
// release decision is sampled exactly (securerand.Bernoulli on P(noise >
// ρ − H[u])), so no noisy weight ever exists. Only the released keys leave the
// package, sorted.
//
// The mechanisms, by user-facing name:
//
//	count_laplace       H[u] += 1, Laplace λ = Δ0/ε
//	count_gaussian      H[u] += 1, Gaussian σ(Δ2 = √Δ0)
//	weighted_laplace    H[u] += 1/|W|, Laplace λ = 1/ε
//	weighted_gaussian   H[u] += 1/√|W|, Gaussian σ(Δ2 = 1)
//	policy_laplace      ℓ1-descent with ℓ1 budget (Gopi et al. Alg. 3), Laplace
//	policy_gaussian_l2  ℓ2-descent with ℓ2 budget (journal Alg. 7), Gaussian (default)
//	policy_gaussian_l1  ℓ1-descent with ℓ2 budget (journal Alg. 8): disabled, see below
//	greedy_frequency    GW: greedy by the user's own item counts, no Δ0, Laplace
//	greedy_public       GW-KT: greedy by a public frequency table, no Δ0, Laplace
//	single_item         Δ0 = 1 with the optimal release probability π(n) (Desfontaines et al.)
//	dp_sips             R rounds of weighted Gaussian (Swanberg et al. 2023)
//
// # policy_gaussian_l1 is disabled
//
// The journal version of Gopi et al. (2021, Proposition 5.1) claims that the
// ℓ1-descent update with an ℓ2 budget (Algorithm 8) is ℓ2-contractive. It is
// not, and the neighbouring-database property test of this package finds
// counter-examples: with Γ = 2.819, users {1,2,0}, {2,1,0}, then the added
// user {2,0,1}, then {1,2} and {1,0} (all Δ0 ≤ 3), the two final histograms are
// 1.0141 apart in ℓ2; an adversarial search reaches 1.19 with four items. The
// proof's Jacobian [[0, 0], [B, I]] has a non-zero block B (the uncapped
// items' level λ depends on the capped items' gaps g), and its spectral norm
// is √(1 + ‖g‖²/(1 − ‖g‖²)) > 1, unbounded as ‖g‖₂ → 1. Noise calibrated to
// sensitivity 1 therefore does not give (ε, δ)-DP, so Validate refuses the
// mechanism; Policy Gaussian with ℓ2-descent (Lemma 5.2, whose geometric proof
// holds and whose property test passes) is the default instead. The update
// rule stays in Histogram so that the finding remains testable.
package setunion

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Mechanism names a DPSU mechanism; its string is the user-facing identifier.
type Mechanism string

// The mechanisms. See the package documentation for their definitions.
const (
	CountLaplace     Mechanism = "count_laplace"
	CountGaussian    Mechanism = "count_gaussian"
	WeightedLaplace  Mechanism = "weighted_laplace"
	WeightedGaussian Mechanism = "weighted_gaussian"
	PolicyLaplace    Mechanism = "policy_laplace"
	PolicyGaussianL2 Mechanism = "policy_gaussian_l2"
	PolicyGaussianL1 Mechanism = "policy_gaussian_l1"
	GreedyFrequency  Mechanism = "greedy_frequency"
	GreedyPublic     Mechanism = "greedy_public"
	SingleItem       Mechanism = "single_item"
	DPSIPS           Mechanism = "dp_sips"
)

// Mechanisms lists every mechanism in documentation order.
func Mechanisms() []Mechanism {
	return []Mechanism{CountLaplace, CountGaussian, WeightedLaplace, WeightedGaussian,
		PolicyLaplace, PolicyGaussianL2, PolicyGaussianL1, GreedyFrequency, GreedyPublic,
		SingleItem, DPSIPS}
}

// ParseMechanism maps a name (case-insensitive, surrounding space ignored) to
// a Mechanism, or explains which names exist.
func ParseMechanism(name string) (Mechanism, error) {
	m := Mechanism(strings.ToLower(strings.TrimSpace(name)))
	if slices.Contains(Mechanisms(), m) {
		return m, nil
	}
	names := make([]string, 0, len(Mechanisms()))
	for _, k := range Mechanisms() {
		names = append(names, string(k))
	}
	return "", fmt.Errorf("unknown mechanism %q: use one of %s", name, strings.Join(names, ", "))
}

// Noise is the kind of noise a mechanism's release decision is based on.
type Noise string

// Noise kinds.
const (
	Laplace  Noise = "laplace"
	Gaussian Noise = "gaussian"
	// Exact marks single_item, whose release probability π(n) is not the
	// survival function of an additive noise.
	Exact Noise = "exact"
)

// Noise returns the noise kind of m.
func (m Mechanism) Noise() Noise {
	switch m {
	case CountLaplace, WeightedLaplace, PolicyLaplace, GreedyFrequency, GreedyPublic:
		return Laplace
	case SingleItem:
		return Exact
	default:
		return Gaussian
	}
}

// Sequential reports whether m's update depends on the histogram built by
// earlier users (the policies and greedy updates), which makes the keyed-hash
// user order part of the mechanism. Parallel mechanisms ignore the order.
func (m Mechanism) Sequential() bool {
	switch m {
	case PolicyLaplace, PolicyGaussianL2, PolicyGaussianL1, GreedyFrequency, GreedyPublic:
		return true
	}
	return false
}

// Bounded reports whether m samples at most Δ0 items per user. The greedy
// mechanisms need no Δ0 (Carvalho et al. 2022, §3.3); single_item keeps one.
func (m Mechanism) Bounded() bool {
	return m != GreedyFrequency && m != GreedyPublic
}

// DefaultAlpha is the cutoff parameter α of the papers' best settings: 3 for
// the policies and the greedy mechanisms (5 for the disabled Policy Gaussian
// ℓ1), 0 (unused) for mechanisms without a cutoff.
func (m Mechanism) DefaultAlpha() float64 {
	switch m {
	case PolicyGaussianL1:
		return 5
	case PolicyLaplace, PolicyGaussianL2, GreedyFrequency, GreedyPublic:
		return 3
	}
	return 0
}

// HasCutoff reports whether m uses the cutoff Γ = ρ + α·scale.
func (m Mechanism) HasCutoff() bool { return m.Sequential() }

// Disabled returns why m must not be used for a private release, or nil.
func (m Mechanism) Disabled() error {
	if m == PolicyGaussianL1 {
		return fmt.Errorf("mechanism policy_gaussian_l1 is disabled: its ℓ2-contractivity claim (Gopi et al. 2021, Prop. 5.1) is false — " +
			"one user can move its histogram by more than 1 in ℓ2, so the calibrated noise does not give (ε, δ)-DP; use policy_gaussian_l2 (the default)")
	}
	return nil
}

// Limits on options that keep calibration cheap and arithmetic exact.
const (
	// MaxMaxItems bounds Δ0; calibration takes a maximum over t = 1..Δ0.
	MaxMaxItems = 1_000_000
	// MaxRounds bounds the number of DP-SIPS rounds.
	MaxRounds = 100
)

// Options configures one release. Start from Defaults and override fields;
// Validate reports what is wrong before any data is touched.
type Options struct {
	// Mechanism to run; Defaults sets DefaultMechanism.
	Mechanism Mechanism
	// Epsilon is the privacy parameter ε > 0 (finite).
	Epsilon float64
	// Delta is the privacy parameter δ ∈ (0, 1).
	Delta float64
	// MaxItems is Δ0 ≥ 1, the most items kept per user. Ignored by the greedy
	// mechanisms (no bound) and by single_item (always 1).
	MaxItems int
	// Alpha sets the cutoff Γ = ρ + α·(λ or σ) of the policies and greedy
	// mechanisms; nil means the mechanism's DefaultAlpha. Must be ≥ 0.
	Alpha *float64
	// Rounds is the number of DP-SIPS rounds R ≥ 1.
	Rounds int
	// Public is the public frequency table ordering greedy_public's updates
	// (item -> frequency; unseen items count 1). It must not be derived from
	// the protected data.
	Public map[string]float64

	// unsafeResearch lets this package's own tests run a disabled mechanism
	// to measure it; it cannot be set from outside.
	unsafeResearch bool
}

// Default values of Defaults.
const (
	DefaultMechanism = PolicyGaussianL2
	DefaultEpsilon   = 1.0
	DefaultDelta     = 1e-6
	DefaultMaxItems  = 100
	DefaultRounds    = 3
)

// Defaults returns the default options: policy_gaussian_l2, ε = 1, δ = 1e-6,
// Δ0 = 100, α = the mechanism's default, 3 DP-SIPS rounds.
func Defaults() Options {
	return Options{
		Mechanism: DefaultMechanism,
		Epsilon:   DefaultEpsilon,
		Delta:     DefaultDelta,
		MaxItems:  DefaultMaxItems,
		Rounds:    DefaultRounds,
	}
}

// Float returns a pointer to v, for Options.Alpha.
func Float(v float64) *float64 { return &v }

// alpha returns the effective α.
func (o Options) alpha() float64 {
	if o.Alpha == nil {
		return o.Mechanism.DefaultAlpha()
	}
	return *o.Alpha
}

// Validate checks every parameter and returns an error that names the
// parameter, the value given and the values allowed.
func (o Options) Validate() error {
	if _, err := ParseMechanism(string(o.Mechanism)); err != nil {
		return err
	}
	if err := o.Mechanism.Disabled(); err != nil && !o.unsafeResearch {
		return err
	}
	if !(o.Epsilon > 0) || math.IsInf(o.Epsilon, 0) {
		return fmt.Errorf("epsilon must be a finite number greater than 0, got %v", o.Epsilon)
	}
	if !(o.Delta > 0 && o.Delta < 1) {
		return fmt.Errorf("delta must be greater than 0 and less than 1, got %v", o.Delta)
	}
	if o.MaxItems < 1 || o.MaxItems > MaxMaxItems {
		return fmt.Errorf("max_items must be an integer from 1 to %d, got %d", MaxMaxItems, o.MaxItems)
	}
	if o.Alpha != nil && (!(*o.Alpha >= 0) || math.IsInf(*o.Alpha, 0)) {
		return fmt.Errorf("alpha must be a finite number ≥ 0, got %v", *o.Alpha)
	}
	if o.Rounds < 1 || o.Rounds > MaxRounds {
		return fmt.Errorf("rounds must be an integer from 1 to %d, got %d", MaxRounds, o.Rounds)
	}
	if err := o.checkCost(); err != nil {
		return err
	}
	if o.Mechanism == GreedyPublic && o.Public == nil {
		return fmt.Errorf("mechanism greedy_public needs a public frequency table (item -> count) that is not derived from the protected data")
	}
	for item, f := range o.Public {
		if !(f >= 0) || math.IsInf(f, 0) {
			return fmt.Errorf("public frequency of %q must be a finite number ≥ 0, got %v", item, f)
		}
	}
	return nil
}
