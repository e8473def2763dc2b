package dpagg

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpsql/dpsql/sqlext/checks"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Kind names an aggregate; its string is the user-facing identifier.
type Kind string

// The aggregates. Each is computed per released key over the rows kept by
// contribution bounding (see the package documentation).
const (
	// CountRows is COUNT(*): rows, at most max_rows_per_group per user and key.
	CountRows Kind = "count"
	// CountValues is COUNT(col): rows whose value is not NULL, at most
	// max_rows_per_group per user and key.
	CountValues Kind = "count_column"
	// CountUnits is COUNT(DISTINCT privacy_unit): users per key.
	CountUnits Kind = "count_distinct_unit"
	// Sum is SUM(x) of values clamped to [Lower, Upper]; NULL and NaN ignored.
	Sum Kind = "sum"
	// Avg is AVG(x) of values clamped to [Lower, Upper]; NULL and NaN ignored.
	Avg Kind = "avg"
)

// Kinds lists every aggregate kind.
func Kinds() []Kind {
	return []Kind{CountRows, CountValues, CountUnits, Sum, Avg, VarPop, VarSamp, StdDevPop, StdDevSamp, Quantile}
}

// ParseKind maps a name (case-insensitive) to a Kind, or explains which exist.
func ParseKind(name string) (Kind, error) {
	k := Kind(strings.ToLower(strings.TrimSpace(name)))
	if slices.Contains(Kinds(), k) {
		return k, nil
	}
	return "", fmt.Errorf("unknown aggregate %q: use one of count, count_column, count_distinct_unit, sum, avg, var_pop, var_samp, stddev_pop, stddev_samp, quantile", name)
}

// clamped reports whether the aggregate needs clamping bounds.
func (k Kind) clamped() bool { return k == Sum || k == Avg || k.spread() || k == Quantile }

// NeedsBounds reports whether the aggregate clamps its values to bounds
// (SUM, AVG, the variances and standard deviations).
func (k Kind) NeedsBounds() bool { return k.clamped() }

// Aggregate is one aggregate of the SELECT list.
type Aggregate struct {
	Kind Kind `json:"kind"`
	// Lower and Upper clamp every value of SUM and AVG (Lower < Upper, both
	// finite). Unless AutoBounds is set they are required and must not be
	// derived from the protected data (the noise scale reveals them); with
	// AutoBounds they are chosen privately (bounds.go).
	Lower float64 `json:"lower,omitempty"`
	Upper float64 `json:"upper,omitempty"`
	// Weight is the aggregate's relative share of the aggregates' budget;
	// 0 means 1 (equal shares).
	Weight float64 `json:"weight,omitempty"`
	// AutoBounds (SUM and AVG) has Lower and Upper chosen privately from
	// the data at release time (bounds.go); Lower and Upper are then
	// ignored.
	AutoBounds bool `json:"auto_bounds,omitempty"`
	// Quantile is the level p ∈ [0, 1] of a Quantile aggregate (½ for
	// MEDIAN), rounded to a multiple of 10^−6 (quantile.go).
	Quantile float64 `json:"quantile,omitempty"`
}

// Noise is the noise family of the aggregates.
type Noise string

// Noise families.
const (
	// NoiseAuto picks, from the options alone, the family with the smaller
	// noise for the same budget (see Calibrate).
	NoiseAuto Noise = ""
	// Laplace is the discrete Laplace mechanism: pure ε-DP per aggregate,
	// calibrated to the ℓ1 sensitivity Δ0·c.
	Laplace Noise = "laplace"
	// Gaussian is the discrete Gaussian mechanism: zCDP, calibrated to the ℓ2
	// sensitivity √Δ0·c, converted to (ε, δ).
	Gaussian Noise = "gaussian"
)

// ParseNoise maps "laplace", "gaussian" or "auto"/"" to a Noise.
func ParseNoise(name string) (Noise, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "auto":
		return NoiseAuto, nil
	case "laplace":
		return Laplace, nil
	case "gaussian":
		return Gaussian, nil
	}
	return "", fmt.Errorf("unknown noise %q: use laplace, gaussian or auto", name)
}

// Limits that keep every integer of the pipeline exact.
const (
	// MaxMaxRowsPerGroup bounds max_rows_per_group.
	MaxMaxRowsPerGroup = 1 << 20
	// MaxAggregates bounds the number of aggregates of one release.
	MaxAggregates = 64
)

// Options configures one release: the privacy budget, the contribution
// bounds, the noise, the budget split and the aggregates. Start from Defaults
// and override fields; Validate reports what is wrong before data is touched.
type Options struct {
	// Epsilon and Delta are the budget of the whole release (key selection
	// and every aggregate): ε > 0 finite, δ ∈ (0, 1).
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// MaxGroupsContributed is Δ0 (BigQuery's max_groups_contributed): the
	// keys kept per user, sampled uniformly without replacement; the key
	// selection sees the same sample.
	MaxGroupsContributed int `json:"max_groups_contributed"`
	// MaxRowsPerGroup is m (max_rows_per_group): a user's rows under one key
	// count as at most m rows in COUNT, COUNT(col), SUM and AVG.
	MaxRowsPerGroup int `json:"max_rows_per_group"`
	// Noise is the aggregates' noise family (NoiseAuto by default).
	Noise Noise `json:"noise"`
	// SelectionShare is the fraction of ε given to key selection, in (0, 1);
	// 0 means DefaultSelectionShare. The aggregates get the rest.
	SelectionShare float64 `json:"selection_share"`
	// SelectionDeltaShare is the fraction of δ given to key selection when
	// the aggregates are Gaussian, in (0, 1); 0 means
	// DefaultSelectionDeltaShare. With Laplace aggregates, which need no δ,
	// selection gets all of δ.
	SelectionDeltaShare float64 `json:"selection_delta_share"`
	// Mechanism is the key-selection mechanism (a setunion mechanism that
	// bounds users to Δ0 items sampled uniformly, run on the kept pairs);
	// "" means DefaultSelectionMechanism.
	Mechanism setunion.Mechanism `json:"mechanism"`
	// Alpha overrides the selection mechanism's cutoff parameter.
	Alpha *float64 `json:"alpha,omitempty"`
	// Aggregates are the aggregates released per key, in output order.
	Aggregates []Aggregate `json:"aggregates"`
	// Global releases one row over the whole input (SQL without GROUP BY):
	// every row has the same (empty) key, the key is public and always
	// released, so there is no key selection and the aggregates get all of
	// ε and δ; max_groups_contributed is 1 (see global.go).
	Global bool `json:"global,omitempty"`
	// PublicKeys releases one row per key of a public key set given to the
	// pipeline (Pipeline.SetPublicKeys) instead of selecting keys: the keys
	// are public, every one is released (noise around 0 for a key no user
	// has), rows of other keys are dropped, and the aggregates get all of ε
	// and δ; max_groups_contributed still bounds each user's keys (see
	// publickeys.go).
	PublicKeys bool `json:"public_keys,omitempty"`

	// NoiseAfterBounds lets a release that chooses its bounds privately,
	// with Noise auto, take Laplace noise instead of Gaussian once the
	// bounds are chosen, when that is narrower (noisechoice.go). Off in
	// Defaults: the same (ε, δ), but the Laplace branch is not ρ-zCDP at
	// the aggregates' ρ, so a zCDP ledger charges the release
	// ρ_t + max(ρ_s, Σ_i ε_L,i²/2) (about 5× a Gaussian release's ρ at
	// ε = 1, half of what the same release with hand-set bounds costs).
	NoiseAfterBounds bool `json:"noise_after_bounds,omitempty"`
	// GaussianAuto resolves noise auto to the Gaussian also when every
	// bound is set (noiseauto.go): at an equal zCDP charge the Gaussian is
	// the narrower, which is what a zCDP ledger spends. Off in Defaults
	// (the family narrowest for the release's own (ε, δ)); dpvars sets it
	// when dp_noise_after_bounds is OFF, the zCDP ledger's default.
	GaussianAuto bool `json:"gaussian_auto,omitempty"`
	// BasicLedger says the release will be charged by basic composition
	// (the deployment's ledger), so the key selection may take a
	// mechanism that only basic composition accounts: at Δ0 = 1, with the
	// mechanism left to the default and parts that compose by basic
	// composition anyway, single_item (selection.go, singleItemSelection).
	// A zCDP ledger refuses such a release, so it is off in Defaults.
	BasicLedger bool `json:"basic_ledger,omitempty"`

	chosen *Chosen // the privately chosen bounds, for the release's real plan
}

// Default values of Defaults.
const (
	DefaultEpsilon              = setunion.DefaultEpsilon
	DefaultDelta                = setunion.DefaultDelta
	DefaultMaxGroupsContributed = 100
	// DefaultSelectionMechanism is dp_sips, setunion's own default, run on
	// the kept (user, key) pairs: every user already holds at most Δ0 keys,
	// so its rounds never re-sample and the aggregates share the one sample
	// (selection.go). Unlike policy_gaussian_l2, whose cutoff caps a key's
	// weight so that even a key every user holds is dropped with
	// probability Φ(−α), no weight is capped: a key's miss probability
	// falls to 0 as its users grow.
	DefaultSelectionMechanism  = setunion.DPSIPS
	DefaultMaxRowsPerGroup     = 1
	DefaultSelectionShare      = 0.5
	DefaultSelectionDeltaShare = 0.5
)

// Defaults returns ε = 1, δ = 1e-6, Δ0 = 100 (as a private DISTINCT), m = 1,
// automatic noise (Gaussian after bounds chosen privately: NoiseAfterBounds
// off, the smaller zCDP charge; a basic-composition deployment turns it on,
// where it costs nothing),
// half of ε (and, with Gaussian aggregates, of δ) for key selection with
// DefaultSelectionMechanism, and no aggregates.
//
// Δ0 trades noise (∝ √Δ0 for Gaussian) against bounding bias. On the words of
// git_python_ecosystem at ε = 1 (TestCorpusWordCounts) Δ0 = 100 released 469
// of the 2001 words held by ≥ 100 users, with a median relative error of
// COUNT(DISTINCT user) against the raw truth of 0.30; Δ0 = 10 released 246
// with 0.80, its smaller noise swamped by the users' dropped words.
func Defaults() Options {
	return Options{
		Epsilon:              DefaultEpsilon,
		Delta:                DefaultDelta,
		MaxGroupsContributed: DefaultMaxGroupsContributed,
		MaxRowsPerGroup:      DefaultMaxRowsPerGroup,
	}
}

func (o Options) mechanism() setunion.Mechanism {
	if o.Mechanism == "" {
		return DefaultSelectionMechanism
	}
	return o.Mechanism
}

func (o Options) selectionShare() float64 {
	if o.SelectionShare == 0 {
		return DefaultSelectionShare
	}
	return o.SelectionShare
}

func (o Options) selectionDeltaShare() float64 {
	if o.SelectionDeltaShare == 0 {
		return DefaultSelectionDeltaShare
	}
	return o.SelectionDeltaShare
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate checks every parameter and returns an error naming the parameter,
// the value given and the values allowed.
func (o Options) Validate() error {
	if err := checks.Epsilon(o.Epsilon); err != nil {
		return err
	}
	if err := checks.Delta(o.Delta); err != nil {
		return err
	}
	if o.MaxGroupsContributed < 0 || o.MaxGroupsContributed > setunion.MaxMaxItems {
		return fmt.Errorf("max_groups_contributed must be an integer from 1 to %d, or 0 to choose it privately from the data, got %d", setunion.MaxMaxItems, o.MaxGroupsContributed)
	}
	if o.MaxRowsPerGroup < 0 || o.MaxRowsPerGroup > MaxMaxRowsPerGroup {
		return fmt.Errorf("max_rows_per_group must be an integer from 1 to %d, or 0 to choose it privately from the data, got %d", MaxMaxRowsPerGroup, o.MaxRowsPerGroup)
	}
	if o.autoBounds() != nil && o.Noise == Laplace {
		return fmt.Errorf("noise laplace needs every contribution bound given (max_groups_contributed, max_rows_per_group and the clamping bounds of SUM and AVG): the private choice of bounds spends a share of the Gaussian aggregates' zCDP budget; use noise gaussian or auto, or set the bounds")
	}
	if _, err := ParseNoise(string(o.Noise)); err != nil {
		return err
	}
	if s := o.SelectionShare; s != 0 && !(s > 0 && s < 1) {
		return fmt.Errorf("selection_share must be greater than 0 and less than 1, got %v", s)
	}
	if s := o.SelectionDeltaShare; s != 0 && !(s > 0 && s < 1) {
		return fmt.Errorf("selection_delta_share must be greater than 0 and less than 1, got %v", s)
	}
	if o.Global && o.PublicKeys {
		return fmt.Errorf("a release is either global (no GROUP BY) or over public keys, not both")
	}
	m := o.mechanism()
	if _, err := setunion.ParseMechanism(string(m)); err != nil {
		return err
	}
	if err := m.Disabled(); err != nil {
		return err
	}
	if err := m.Unproven(); err != nil {
		return err
	}
	switch {
	case m == setunion.GreedyFrequency || m == setunion.GreedyPublic:
		return fmt.Errorf("mechanism %s chooses a user's keys by priority while the aggregates need the keys sampled uniformly at random; use %s", m, DefaultSelectionMechanism)
	case !m.Bounded():
		return fmt.Errorf("mechanism %s does not bound users to max_groups_contributed keys, which the aggregates' sensitivity needs; use a bounded mechanism such as %s", m, DefaultSelectionMechanism)
	case m == setunion.SingleItem && o.MaxGroupsContributed != 1 && !o.Global && !o.PublicKeys:
		return fmt.Errorf("mechanism %s keeps one key per user; set max_groups_contributed=1 (got %d)", m, o.MaxGroupsContributed)
	}
	if o.Alpha != nil && (!(*o.Alpha >= 0) || math.IsInf(*o.Alpha, 0)) {
		return fmt.Errorf("alpha must be a finite number ≥ 0, got %v", *o.Alpha)
	}
	if len(o.Aggregates) > MaxAggregates {
		return fmt.Errorf("at most %d aggregates per release, got %d", MaxAggregates, len(o.Aggregates))
	}
	for i, a := range o.Aggregates {
		if _, err := ParseKind(string(a.Kind)); err != nil {
			return fmt.Errorf("aggregate %d: %w", i+1, err)
		}
		if !(a.Weight >= 0) || math.IsInf(a.Weight, 0) {
			return fmt.Errorf("aggregate %d (%s): weight must be a finite number ≥ 0 (0 means 1), got %v", i+1, a.Kind, a.Weight)
		}
		if a.Kind == Quantile && !(a.Quantile >= 0 && a.Quantile <= 1) {
			return fmt.Errorf("aggregate %d (%s): the level must be a number from 0 to 1 (0.5 for the median), got %v", i+1, a.Kind, a.Quantile)
		}
		if !a.Kind.clamped() || a.AutoBounds {
			continue
		}
		if !finite(a.Lower) || !finite(a.Upper) || !(a.Lower < a.Upper) {
			return fmt.Errorf("aggregate %d (%s) needs clamping bounds lower < upper, both finite, got lower=%v upper=%v: "+
				"choose them from public knowledge (the noise scale reveals them), or let the release choose them privately (AutoBounds)", i+1, a.Kind, a.Lower, a.Upper)
		}
		if a.Kind.spread() && max(math.Abs(a.Lower), math.Abs(a.Upper)) > 1e150 {
			return fmt.Errorf("aggregate %d (%s): clamping bounds must be below 1e150 in magnitude (their squares are summed), got lower=%v upper=%v", i+1, a.Kind, a.Lower, a.Upper)
		}
		if max(math.Abs(a.Lower), math.Abs(a.Upper)) > 1e300 {
			return fmt.Errorf("aggregate %d (%s): clamping bounds must be below 1e300 in magnitude, got lower=%v upper=%v", i+1, a.Kind, a.Lower, a.Upper)
		}
	}
	return nil
}
