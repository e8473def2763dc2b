package dpvars

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Names of the session variables of DP aggregates per key (a private
// SELECT k, COUNT(*), SUM(x), … GROUP BY k). They are named after
// BigQuery's differential-privacy options.
const (
	VarMaxGroups      = "dp_max_groups_contributed"
	VarMaxRows        = "dp_max_rows_per_group"
	VarBounds         = "dp_contribution_bounds"
	VarNoise          = "dp_noise"
	VarSelectionShare = "dp_selection_share"
	// VarNoiseAfterBounds (OFF by default; a deployment whose ledger adds
	// up by basic composition makes it ON for its tables, where it costs
	// nothing) lets a release with dp_noise auto whose bounds are chosen
	// privately take Laplace noise once they are chosen, when that is
	// narrower (dpagg.Options.NoiseAfterBounds); OFF also makes dp_noise
	// auto the Gaussian when every bound is set, the smaller zCDP charge
	// (dpagg.Options.GaussianAuto).
	VarNoiseAfterBounds = "dp_noise_after_bounds"
)

// AggregateParams are the options of DP aggregates as SQL sees them.
type AggregateParams struct {
	// MaxGroups is Δ0, the keys one person contributes to (chosen
	// uniformly at random per person); 0 chooses it privately.
	MaxGroups int
	// MaxRows bounds one person's rows in one key for COUNT and SUM; 0
	// chooses it privately.
	MaxRows int
	// Bounds is "lower,upper", the clamping bounds of SUM and AVG, or ""
	// when not set: each SUM and AVG then has its bounds chosen privately
	// from the data.
	Bounds string
	// Noise is auto, laplace or gaussian.
	Noise string
	// SelectionShare is the share of ε (and, with Gaussian noise, of δ)
	// for choosing the keys.
	SelectionShare float64
	// NoiseAfterBounds is dpagg.Options.NoiseAfterBounds.
	NoiseAfterBounds bool
}

// DefaultAggregateParams are the session variables' defaults: Δ0, m and
// the clamping bounds unset (0, 0 and ”), so that each release chooses
// them privately from the data (dpagg's bounds.go) unless the session or a
// SET_VAR hint gives them.
func DefaultAggregateParams() AggregateParams {
	return AggregateParams{Noise: "auto", SelectionShare: dpagg.DefaultSelectionShare, NoiseAfterBounds: dpagg.Defaults().NoiseAfterBounds}
}

// ParseBounds parses "lower,upper" (also with parentheses, as BigQuery
// writes contribution_bounds_per_group => (0, 100)).
func ParseBounds(s string) (lower, upper float64, err error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimPrefix(t, "("), ")")
	lo, hi, ok := strings.Cut(t, ",")
	if !ok {
		return 0, 0, fmt.Errorf("contribution bounds must be 'lower,upper', such as '0,100', got %q", s)
	}
	lower, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
	upper, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if err1 != nil || err2 != nil || math.IsNaN(lower) || math.IsNaN(upper) || math.IsInf(lower, 0) || math.IsInf(upper, 0) {
		return 0, 0, fmt.Errorf("contribution bounds must be two finite numbers 'lower,upper', such as '0,100', got %q", s)
	}
	if lower > upper {
		return 0, 0, fmt.Errorf("contribution bounds %q: lower is above upper", s)
	}
	return lower, upper, nil
}

// AggregateOptions builds the options of a release of aggregates of the
// given kinds: ε and δ from the set-union parameters, the key-selection
// mechanism from dp_mechanism (dp_sips, the default, is
// dpagg.DefaultSelectionMechanism: on the kept keys its rounds never
// re-sample), the rest from a. It reports a value it cannot parse, but
// does not validate the options as a whole: the caller completes them
// first (a global release, the columns' configured bounds) and
// dpagg.Calibrate validates the result, so that a rule between options
// (noise laplace needs every bound) sees all of them, wherever each was
// set.
func AggregateOptions(p setunion.Options, a AggregateParams, kinds []dpagg.Kind) (dpagg.Options, error) {
	o := dpagg.Defaults()
	o.Epsilon, o.Delta = p.Epsilon, p.Delta
	o.MaxGroupsContributed, o.MaxRowsPerGroup = a.MaxGroups, a.MaxRows
	o.SelectionShare = a.SelectionShare
	o.NoiseAfterBounds = a.NoiseAfterBounds
	// OFF (the zCDP ledger's default) also means noise auto is the
	// Gaussian with hand-set bounds: at an equal zCDP charge it is the
	// narrower (dpagg.Options.GaussianAuto).
	o.GaussianAuto = !a.NoiseAfterBounds
	noise := strings.ToLower(strings.TrimSpace(a.Noise))
	if noise != "auto" && noise != "" {
		n, err := dpagg.ParseNoise(noise)
		if err != nil {
			return dpagg.Options{}, err
		}
		o.Noise = n
	}
	if m, err := setunion.ParseMechanism(string(p.Mechanism)); err == nil && m != setunion.DPSIPS {
		o.Mechanism = m
		if p.Alpha != nil {
			o.Alpha = setunion.Float(*p.Alpha)
		}
	}
	var lower, upper float64
	var bounded bool
	for _, k := range kinds {
		agg := dpagg.Aggregate{Kind: k}
		if k.NeedsBounds() {
			if strings.TrimSpace(a.Bounds) == "" {
				agg.AutoBounds = true // chosen privately at release time
				o.Aggregates = append(o.Aggregates, agg)
				continue
			}
			if !bounded {
				var err error
				if lower, upper, err = ParseBounds(a.Bounds); err != nil {
					return dpagg.Options{}, err
				}
				bounded = true
			}
			agg.Lower, agg.Upper = lower, upper
		}
		o.Aggregates = append(o.Aggregates, agg)
	}
	return o, nil
}

// aggregateVariables are the definitions of the aggregates' variables.
func aggregateVariables() []sql.SystemVariable {
	d := DefaultAggregateParams()
	both := sql.GetMysqlScope(sql.SystemVariableScope_Both)
	// checkAgg checks one variable's value on its own. It starts from the
	// defaults with every contribution bound given, so that a rule between
	// variables (noise laplace needs every bound) does not refuse a value
	// whose companions the same statement's SET_VAR hints, or a later SET,
	// give: the hints are applied one by one, in the order written, and
	// each check sees only its own. The release validates the variables
	// together (AggregateOptions, with the aggregates' kinds).
	checkAgg := func(name string, set func(*AggregateParams, any)) func(*sql.Context, sql.SystemVariableScope, sql.SystemVarValue) error {
		return func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
			a := DefaultAggregateParams()
			a.MaxGroups, a.MaxRows = 1, 1
			set(&a, v.Val)
			if a.Bounds != "" {
				if _, _, err := ParseBounds(a.Bounds); err != nil {
					return wrongValue(name, v.Val, err)
				}
			}
			o, err := AggregateOptions(DefaultSetUnion(), a, []dpagg.Kind{dpagg.CountRows})
			if err == nil {
				err = o.Validate()
			}
			if err != nil {
				return wrongValue(name, v.Val, err)
			}
			return nil
		}
	}
	return []sql.SystemVariable{
		&sql.MysqlSystemVariable{
			Name: VarMaxGroups, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemIntType(VarMaxGroups, math.MinInt64, math.MaxInt64, false),
			Default:       int64(d.MaxGroups),
			NotifyChanged: checkAgg(VarMaxGroups, func(a *AggregateParams, v any) { a.MaxGroups = asInt(v) }),
		},
		&sql.MysqlSystemVariable{
			Name: VarMaxRows, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemIntType(VarMaxRows, math.MinInt64, math.MaxInt64, false),
			Default:       int64(d.MaxRows),
			NotifyChanged: checkAgg(VarMaxRows, func(a *AggregateParams, v any) { a.MaxRows = asInt(v) }),
		},
		&sql.MysqlSystemVariable{
			Name: VarBounds, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemStringType(VarBounds),
			Default:       d.Bounds,
			NotifyChanged: checkAgg(VarBounds, func(a *AggregateParams, v any) { a.Bounds, _ = v.(string) }),
		},
		&sql.MysqlSystemVariable{
			Name: VarNoise, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemStringType(VarNoise),
			Default:       d.Noise,
			NotifyChanged: checkAgg(VarNoise, func(a *AggregateParams, v any) { a.Noise, _ = v.(string) }),
		},
		&sql.MysqlSystemVariable{
			Name: VarSelectionShare, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemDoubleType(VarSelectionShare, -math.MaxFloat64, math.MaxFloat64),
			Default:       d.SelectionShare,
			NotifyChanged: checkAgg(VarSelectionShare, func(a *AggregateParams, v any) { a.SelectionShare = asFloat(v) }),
		},
		&sql.MysqlSystemVariable{
			Name: VarNoiseAfterBounds, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:    types.NewSystemBoolType(VarNoiseAfterBounds),
			Default: boolInt8(d.NoiseAfterBounds),
		},
	}
}

// SessionAggregateParams reads the aggregates' variables of ctx's session
// (and its statement's SET_VAR hints), as SessionParams does.
func SessionAggregateParams(ctx *sql.Context) (AggregateParams, error) {
	a := DefaultAggregateParams()
	vars, err := sessionVars(ctx)
	if err != nil {
		return a, err
	}
	if v, ok := vars(VarMaxGroups); ok {
		a.MaxGroups = asInt(v)
	}
	if v, ok := vars(VarMaxRows); ok {
		a.MaxRows = asInt(v)
	}
	if v, ok := vars(VarBounds); ok {
		a.Bounds = fmt.Sprint(v)
	}
	if v, ok := vars(VarNoise); ok {
		a.Noise = fmt.Sprint(v)
	}
	if v, ok := vars(VarSelectionShare); ok {
		a.SelectionShare = asFloat(v)
	}
	if v, ok := vars(VarNoiseAfterBounds); ok {
		a.NoiseAfterBounds = asBool(v, a.NoiseAfterBounds)
	}
	return a, nil
}

// boolInt8 is a boolean variable's value (1 for ON, 0 for OFF).
func boolInt8(b bool) int8 {
	if b {
		return 1
	}
	return 0
}

// asBool reads a boolean variable's value (int8 from go-mysql-server, or
// ON/OFF, 1/0, true/false as text); def when it is none of these.
func asBool(v any, def bool) bool {
	switch x := v.(type) {
	case int8:
		return x != 0
	case int64:
		return x != 0
	case int:
		return x != 0
	case bool:
		return x
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "on", "true":
			return true
		case "0", "off", "false":
			return false
		}
	}
	return def
}
