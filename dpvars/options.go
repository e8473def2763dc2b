package dpvars

import (
	"fmt"
	"sync/atomic"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// SetUnionParams are the DP set union options as SQL sees them: the core's
// options plus the alpha sentinel. Mechanism is kept as typed so that errors
// can quote it.
type SetUnionParams struct {
	Mechanism string
	Epsilon   float64
	Delta     float64
	MaxItems  int
	// Alpha is the cutoff parameter α ≥ 0; nil (the option alpha=default)
	// takes the mechanism's default (setunion.Mechanism.DefaultAlpha). The
	// dp_alpha variable always has a value (setunion.CutoffAlpha unless
	// set).
	Alpha  *float64
	Rounds int
}

// DefaultSetUnionParams are the defaults of the session variables: those of
// setunion.Defaults, with alpha left to the mechanism.
func DefaultSetUnionParams() SetUnionParams {
	d := setunion.Defaults()
	return SetUnionParams{
		Mechanism: string(d.Mechanism),
		Epsilon:   d.Epsilon,
		Delta:     d.Delta,
		MaxItems:  d.MaxItems,
		Alpha:     setunion.Float(setunion.CutoffAlpha),
		Rounds:    d.Rounds,
	}
}

// allowUnproven is AllowUnprovenMechanisms's setting.
var allowUnproven atomic.Bool

// AllowUnprovenMechanisms lets the SQL functions of this process run the
// mechanisms without a privacy proof (setunion.Mechanism.Unproven:
// greedy_frequency_unproven, greedy_public_unproven), which they refuse by
// default. The governed server sets it from its configuration
// (allow_unproven_mechanisms); nothing else should.
func AllowUnprovenMechanisms(allow bool) { allowUnproven.Store(allow) }

// Options validates p and converts it to the core's options. Errors name the
// parameter, the value and the allowed range (see setunion.Options.Validate).
// greedy_public is refused: it needs a public frequency table, which SQL
// callers cannot pass.
func (p SetUnionParams) Options() (setunion.Options, error) {
	m, err := setunion.ParseMechanism(p.Mechanism)
	if err != nil {
		return setunion.Options{}, err
	}
	if m == setunion.GreedyPublic || m == setunion.GreedyPublicUnproven {
		return setunion.Options{}, fmt.Errorf("mechanism %s needs a public frequency table, which SQL functions cannot take: choose another mechanism (greedy_frequency is the closest)", m)
	}
	o := setunion.Options{Mechanism: m, Epsilon: p.Epsilon, Delta: p.Delta, MaxItems: p.MaxItems, Rounds: p.Rounds, AllowUnproven: allowUnproven.Load()}
	if p.Alpha != nil {
		o.Alpha = setunion.Float(*p.Alpha)
	}
	return o, o.Validate()
}
