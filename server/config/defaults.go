package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/dpsql/dpsql/sqlext/checks"
	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Options returns the defaults: section as set-union options: each option
// given, parsed by setunion.Options.Set, over setunion.Defaults. Load has
// validated them; an option that does not parse is left at its default.
func (d Defaults) Options() setunion.Options {
	o, _, _ := d.parse()
	return o
}

// parse applies the options in name order and returns the first error,
// with the option it is about ("" for none).
func (d Defaults) parse() (setunion.Options, string, error) {
	o := setunion.Defaults()
	for _, k := range slices.Sorted(maps.Keys(d)) {
		if err := o.Set(k, d[k]); err != nil {
			return o, k, err
		}
	}
	return o, "", nil
}

// validateDefaults checks the defaults: section: an error of one option
// is reported at its line.
func (v *validator) validateDefaults(d Defaults) {
	o, key, err := d.parse()
	if err != nil {
		if strings.HasPrefix(err.Error(), "unknown option") {
			v.errorf(at("defaults", key), "defaults: %v", err)
		} else {
			v.errorf(at("defaults", key), "defaults: %s: %v", key, err)
		}
		return
	}
	if _, err := setunion.ParseMechanism(string(o.Mechanism)); err != nil {
		v.errorf(at("defaults", "mechanism"), "defaults: %v", err)
		return
	}
	if err := o.Validate(); err != nil {
		v.errorf(at("defaults"), "defaults: %v", err)
	}
}

// TableDP are the DP options of a protected table's releases (a
// dataset's dp: section) when neither the statement (SET_VAR hints,
// BigQuery's OPTIONS) nor the analyst's session (SET) gives them: what a
// BI tool, which cannot send SET, gets. Omitted fields fall back to the
// server's defaults (the defaults: section, and for the contribution
// bounds a private choice from the data).
//
// They are public: the administrator chooses them, before and apart from
// any release, so a release that uses them is the same mechanism, with the
// same guarantee, as one whose analyst SET the same values. The analyst
// can read them (DP_EXPLAIN shows each option and where it came from).
type TableDP struct {
	Epsilon   *float64 `yaml:"epsilon"`
	Delta     *float64 `yaml:"delta"`
	Mechanism string   `yaml:"mechanism"`
	// Noise is the noise of DP aggregates: auto, laplace or gaussian.
	Noise string `yaml:"noise"`
	// MaxGroupsContributed is Δ0: the keys one user contributes to
	// (GROUP BY aggregates, and SELECT DISTINCT's max_items).
	MaxGroupsContributed *int `yaml:"max_groups_contributed"`
	// MaxRowsPerGroup is m: one user's rows counted under one key.
	MaxRowsPerGroup *int `yaml:"max_rows_per_group"`
	// NoiseAfterBounds is dp_noise_after_bounds: with noise auto and bounds
	// chosen privately, Laplace noise once the bounds are chosen when that
	// is narrower (true when omitted; false keeps such releases Gaussian,
	// at a smaller zCDP charge).
	NoiseAfterBounds *bool `yaml:"noise_after_bounds"`
}

// ColumnDP are a column's DP options (a column's dp: section).
type ColumnDP struct {
	// Bounds are the clamping bounds [lower, upper] of SUM, AVG and the
	// other bounded aggregates of exactly this column.
	Bounds []float64 `yaml:"bounds"`
	// MaxGroupsContributed and MaxRowsPerGroup apply to releases whose
	// keys are columns that all set them: for GROUP BY country, country's;
	// for several key columns the product of their Δ0 and the smallest m.
	MaxGroupsContributed *int `yaml:"max_groups_contributed"`
	MaxRowsPerGroup      *int `yaml:"max_rows_per_group"`
}

// validateDP checks a dataset's dp: sections, its own and its columns'.
func (v *validator) validateDP(p func(...any) []any, what string, d *Dataset) {
	for j, col := range d.Columns {
		if col.DP == nil {
			continue
		}
		cp := func(rest ...any) []any { return p(append([]any{"columns", j, "dp"}, rest...)...) }
		cwhat := fmt.Sprintf("%s, column %q", what, col.Name)
		if !d.Protected() {
			v.errorf(cp(), "%s: dp: applies to the columns of a protected table (privacy_unit); a public table has no private releases, remove it", cwhat)
			continue
		}
		if col.DP.Bounds != nil {
			v.validateBounds(cp("bounds"), cwhat, col, col.DP.Bounds)
		}
		v.positive(cp("max_groups_contributed"), cwhat, "max_groups_contributed", col.DP.MaxGroupsContributed, setunion.MaxMaxItems)
		v.positive(cp("max_rows_per_group"), cwhat, "max_rows_per_group", col.DP.MaxRowsPerGroup, dpagg.MaxMaxRowsPerGroup)
		if col.DP.Bounds == nil && col.DP.MaxGroupsContributed == nil && col.DP.MaxRowsPerGroup == nil {
			v.errorf(cp(), "%s: dp: is empty; give bounds: [lower, upper], max_groups_contributed or max_rows_per_group, or remove it", cwhat)
		}
	}
	t := d.DP
	if t == nil {
		return
	}
	tp := func(rest ...any) []any { return p(append([]any{"dp"}, rest...)...) }
	if !d.Protected() {
		v.errorf(tp(), "%s: dp: applies to protected tables (privacy_unit); a public table has no private releases, remove it", what)
		return
	}
	if t.Epsilon != nil {
		if err := checks.Epsilon(*t.Epsilon); err != nil {
			v.errorf(tp("epsilon"), "%s: dp: %v", what, err)
		}
	}
	if t.Delta != nil {
		if err := checks.Delta(*t.Delta); err != nil {
			v.errorf(tp("delta"), "%s: dp: %v", what, err)
		}
	}
	if t.Mechanism != "" {
		if _, err := setunion.ParseMechanism(t.Mechanism); err != nil {
			v.errorf(tp("mechanism"), "%s: dp: %v", what, err)
		}
	}
	if t.Noise != "" {
		if _, err := dpagg.ParseNoise(t.Noise); err != nil {
			v.errorf(tp("noise"), "%s: dp: %v", what, err)
		}
	}
	v.positive(tp("max_groups_contributed"), what, "max_groups_contributed", t.MaxGroupsContributed, setunion.MaxMaxItems)
	v.positive(tp("max_rows_per_group"), what, "max_rows_per_group", t.MaxRowsPerGroup, dpagg.MaxMaxRowsPerGroup)
}

// validateBounds checks a column's clamping bounds: two finite numbers,
// lower ≤ upper, on a numeric column.
func (v *validator) validateBounds(p []any, what string, col Column, b []float64) {
	if t, err := ParseColumnType(col.Type); err == nil && !t.Integer() && !t.Float() && !t.Decimal() {
		v.errorf(p, "%s: bounds clamp the numeric values of SUM, AVG, VARIANCE and STDDEV, and the column is %s; remove them (bound an expression such as LENGTH(%s) with SET_VAR(dp_contribution_bounds = '0,100'))", what, t, col.Name)
		return
	}
	switch {
	case len(b) != 2:
		v.errorf(p, "%s: bounds must be [lower, upper], two numbers such as [0, 100], got %d", what, len(b))
	case math.IsInf(b[0], 0) || math.IsInf(b[1], 0) || math.IsNaN(b[0]) || math.IsNaN(b[1]):
		v.errorf(p, "%s: bounds must be finite numbers, got %v", what, b)
	case b[0] > b[1]:
		v.errorf(p, "%s: bounds [%v, %v]: lower is above upper; swap them", what, b[0], b[1])
	}
}

// positive checks an optional integer option in [1, max].
func (v *validator) positive(p []any, what, name string, x *int, max int) {
	if x != nil && (*x < 1 || *x > max) {
		v.errorf(p, "%s: dp: %s must be an integer from 1 to %d, got %d (omit it to have it chosen privately from the data)", what, name, max, *x)
	}
}

// BoundsText returns the column's configured bounds as "lower,upper" (""
// when it has none).
func (c ColumnDP) BoundsText() string {
	if len(c.Bounds) != 2 {
		return ""
	}
	return strings.TrimSpace(fmt.Sprintf("%v,%v", c.Bounds[0], c.Bounds[1]))
}
