package setunion

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpsql/dpsql/sqlext/checks"
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
	// GreedyFrequencyUnproven and GreedyPublicUnproven are Carvalho et al.'s
	// GW and GW-KT as published (no Δ0, no floor share). Their privacy proof
	// is false (see the package documentation); they run only with
	// Options.AllowUnproven.
	GreedyFrequencyUnproven Mechanism = "greedy_frequency_unproven"
	GreedyPublicUnproven    Mechanism = "greedy_public_unproven"
)

// Mechanisms lists every mechanism in documentation order.
func Mechanisms() []Mechanism {
	return []Mechanism{CountLaplace, CountGaussian, WeightedLaplace, WeightedGaussian,
		PolicyLaplace, PolicyGaussianL2, PolicyGaussianL1, GreedyFrequency, GreedyPublic,
		SingleItem, DPSIPS, GreedyFrequencyUnproven, GreedyPublicUnproven}
}

// greedy reports whether m uses the greedy update (GU) in any form.
func (m Mechanism) greedy() bool {
	switch m {
	case GreedyFrequency, GreedyPublic, GreedyFrequencyUnproven, GreedyPublicUnproven:
		return true
	}
	return false
}

// publicPriority reports whether m orders a user's items by the public
// frequency table.
func (m Mechanism) publicPriority() bool {
	return m == GreedyPublic || m == GreedyPublicUnproven
}

// ParseMechanism maps a name (case-insensitive, surrounding space ignored) to
// a Mechanism, or explains which names exist.
func ParseMechanism(name string) (Mechanism, error) {
	m := Mechanism(strings.ToLower(strings.TrimSpace(name)))
	if slices.Contains(Mechanisms(), m) {
		return m, nil
	}
	var proven, unproven []string
	for _, k := range Mechanisms() {
		switch {
		case k.Disabled() != nil:
		case k.Unproven() != nil:
			unproven = append(unproven, string(k))
		default:
			proven = append(proven, string(k))
		}
	}
	return "", fmt.Errorf("unknown mechanism %q: use one of %s (without a privacy proof, where an operator allows it: %s)",
		name, strings.Join(proven, ", "), strings.Join(unproven, ", "))
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
	case CountLaplace, WeightedLaplace, PolicyLaplace:
		return Laplace
	case SingleItem:
		return Exact
	}
	if m.greedy() {
		return Laplace
	}
	return Gaussian
}

// Sequential reports whether m's update depends on the histogram built by
// earlier users (the policies and greedy updates), which makes the keyed-hash
// user order part of the mechanism. Parallel mechanisms ignore the order.
func (m Mechanism) Sequential() bool {
	switch m {
	case PolicyLaplace, PolicyGaussianL2, PolicyGaussianL1:
		return true
	}
	return m.greedy()
}

// Bounded reports whether m keeps at most Δ0 items per user: sampled
// uniformly, or for the greedy mechanisms the Δ0 items of highest priority.
// Only the unproven greedy rules as published skip the bound (Carvalho et al.
// 2022, §3.3); single_item keeps one.
func (m Mechanism) Bounded() bool {
	return m != GreedyFrequencyUnproven && m != GreedyPublicUnproven
}

// CutoffAlpha is the cutoff parameter α of the papers' best settings for
// every usable mechanism with a cutoff (the policies and the greedy
// mechanisms): the default of the dp_alpha variable and of --alpha.
const CutoffAlpha = 3.0

// DefaultAlpha is the cutoff parameter α of the papers' best settings:
// CutoffAlpha for the policies and the greedy mechanisms (5 for the
// disabled Policy Gaussian ℓ1), 0 (unused) for mechanisms without a cutoff.
func (m Mechanism) DefaultAlpha() float64 {
	switch m {
	case PolicyGaussianL1:
		return 5
	case PolicyLaplace, PolicyGaussianL2:
		return CutoffAlpha
	}
	if m.greedy() {
		return CutoffAlpha
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

// Unproven returns why m has no privacy proof that dpsql stands behind, or
// nil when it has one (every mechanism whose proof sketch is in the package
// documentation). A disabled mechanism is unproven too (its proof is known to
// be false). Validate refuses an unproven mechanism unless
// Options.AllowUnproven is set; a server should set it only when its
// configuration explicitly enables unproven mechanisms, and a batch command
// should warn.
func (m Mechanism) Unproven() error {
	if err := m.Disabled(); err != nil {
		return err
	}
	switch m {
	case GreedyFrequencyUnproven, GreedyPublicUnproven:
		return fmt.Errorf("mechanism %s is unproven: Carvalho et al.'s Lemma 2 (only the added user's items can newly get positive weight) is false for the greedy update — "+
			"a later user whose budget ran out in D spends leftover budget on zero-weight items in D′ (1.21·δ at ε = 1, δ = 1e-6 for a fixed user order), "+
			"and no proof covers the random user order; use %s, the proven variant", m, strings.TrimSuffix(string(m), "_unproven"))
	}
	return nil
}

// Proven reports whether m has a privacy proof (Unproven returns nil).
func (m Mechanism) Proven() bool { return m.Unproven() == nil }

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
	// MaxItems is Δ0 ≥ 1, the most items kept per user, or AutoMaxItems (0)
	// to choose it privately from the data. Ignored by the unproven greedy
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
	// AllowUnproven lets Validate accept a mechanism without a privacy proof
	// (Mechanism.Unproven). Leave it false unless the operator explicitly
	// enabled unproven mechanisms; disabled mechanisms stay refused.
	AllowUnproven bool

	// unsafeResearch lets this package's own tests run a disabled mechanism
	// to measure it; it cannot be set from outside.
	unsafeResearch bool
}

// Default values of Defaults, chosen by measurement (issue 16; the table is
// in docs/batch.md and TestReferenceTable): dp_sips with Δ0 chosen privately
// beats or matches the best tuned reference configuration on every shared
// corpus, and on few-items-per-user data matches or beats the former default
// policy_gaussian_l2 with Δ0 = 100.
const (
	DefaultMechanism = DPSIPS
	DefaultEpsilon   = 1.0
	DefaultDelta     = 1e-6
	DefaultMaxItems  = AutoMaxItems
	DefaultRounds    = 3
)

// AutoMaxItems as Options.MaxItems asks the release to choose Δ0 privately
// from the data (see the package documentation, "Choosing Δ0 privately"):
// AutoMaxItemsShare of the Gaussian budget pays for MaxItemsTests noisy
// tests that find the smallest value of MaxItemsGrid that truncates about
// AutoMaxItemsTruncate of the users, capped at AutoMaxItemsCap. Only the
// Gaussian mechanisms (count_gaussian, weighted_gaussian, policy_gaussian_l2,
// dp_sips) can pay for it; the others use FixedMaxItems instead.
const AutoMaxItems = 0

// Parameters of the private choice of Δ0.
const (
	// AutoMaxItemsShare is the share of the Gaussian budget μ² = 1/σ*² spent
	// on choosing Δ0.
	AutoMaxItemsShare = 0.02
	// AutoMaxItemsTruncate is the target share of users with more than Δ0
	// distinct items.
	AutoMaxItemsTruncate = 0.03
	// AutoMaxItemsCap bounds the chosen Δ0 (and is the Δ0 at which `dpsql
	// params` reports thresholds before any data is seen).
	AutoMaxItemsCap = 1000
	// FixedMaxItems is the Δ0 of the mechanisms that cannot choose it
	// privately (the Laplace ones, greedy, single_item) when MaxItems is
	// AutoMaxItems.
	FixedMaxItems = 100
)

// SIPSRatio is the geometric ratio of the DP-SIPS budget fractions,
// f_r ∝ SIPSRatio^(R−1−r): later rounds get more. Measured best on the shared
// corpora among 0.05–1 (Swanberg et al. suggest 0.3).
const SIPSRatio = 0.2

// Defaults returns the default options: dp_sips, ε = 1, δ = 1e-6, Δ0 chosen
// privately (AutoMaxItems), 3 rounds, α = the mechanism's default.
func Defaults() Options {
	return Options{
		Mechanism: DefaultMechanism,
		Epsilon:   DefaultEpsilon,
		Delta:     DefaultDelta,
		MaxItems:  DefaultMaxItems,
		Rounds:    DefaultRounds,
	}
}

// SIPSGaussianShare is the share of δ that dp_sips gives its Gaussian part;
// the thresholds get the rest. A small threshold share matters when many
// releases are accounted together: under zCDP the Gaussian parts compose
// sub-linearly, the thresholds' δ_T add up (package accounting). Measured on
// the shared corpora, 0.8 releases as many keys as the papers' ½ (TestSweepRounds).
const SIPSGaussianShare = 0.8

// DeltaSplit returns how m splits δ between its noise, δ_G, and its
// thresholds, δ_T (δ_G + δ_T = δ): ½/½ for the Gaussian mechanisms of the
// papers, SIPSGaussianShare for dp_sips, all to the thresholds for the
// Laplace and greedy mechanisms (their noise is pure ε-DP), and all to the
// mechanism for single_item (no threshold event).
func (m Mechanism) DeltaSplit(delta float64) (deltaG, deltaT float64) {
	switch {
	case m == DPSIPS:
		return SIPSGaussianShare * delta, (1 - SIPSGaussianShare) * delta
	case m == SingleItem:
		return delta, 0
	case m.Noise() == Gaussian:
		return delta / 2, delta / 2
	}
	return 0, delta
}

// AutoCapable reports whether m can choose Δ0 privately (AutoMaxItems): its
// noise is Gaussian, so the choice is paid from the same Gaussian budget.
func (m Mechanism) AutoCapable() bool {
	switch m {
	case CountGaussian, WeightedGaussian, PolicyGaussianL2, DPSIPS:
		return true
	}
	return false
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
	if err := o.Mechanism.Unproven(); err != nil && !o.AllowUnproven && !o.unsafeResearch {
		return fmt.Errorf("%w (to run it anyway, without a privacy guarantee, an operator must enable unproven mechanisms explicitly, e.g. dpsql union --allow-unproven)", err)
	}
	if err := checks.Epsilon(o.Epsilon); err != nil {
		return err
	}
	if err := checks.Delta(o.Delta); err != nil {
		return err
	}
	if o.MaxItems < 0 || o.MaxItems > MaxMaxItems {
		return fmt.Errorf("max_items must be an integer from 1 to %d, or 0 to choose it privately from the data, got %d", MaxMaxItems, o.MaxItems)
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
	if o.Mechanism.publicPriority() && o.Public == nil {
		return fmt.Errorf("mechanism %s needs a public frequency table (item -> count) that is not derived from the protected data", o.Mechanism)
	}
	for item, f := range o.Public {
		if !(f >= 0) || math.IsInf(f, 0) {
			return fmt.Errorf("public frequency of %q must be a finite number ≥ 0, got %v", item, f)
		}
	}
	return nil
}
