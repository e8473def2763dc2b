package dpvars

import (
	"fmt"
	"sync/atomic"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// DefaultSetUnion returns the set-union options of the session variables'
// defaults: setunion.Defaults with α = setunion.CutoffAlpha (the dp_alpha
// variable always has a value; the option alpha=default of an options
// string leaves α to the mechanism).
func DefaultSetUnion() setunion.Options {
	o := setunion.Defaults()
	o.Alpha = setunion.Float(setunion.CutoffAlpha)
	return o
}

// allowUnproven is AllowUnprovenMechanisms's setting.
var allowUnproven atomic.Bool

// AllowUnprovenMechanisms lets the SQL functions of this process run the
// mechanisms without a privacy proof (setunion.Mechanism.Unproven:
// greedy_frequency_unproven, greedy_public_unproven), which they refuse by
// default. The governed server sets it from its configuration
// (allow_unproven_mechanisms); nothing else should.
func AllowUnprovenMechanisms(allow bool) { allowUnproven.Store(allow) }

// CheckSetUnion returns o as a SQL release runs it: AllowUnproven from
// the process's setting (AllowUnprovenMechanisms), validated by
// setunion.Options.Validate, whose errors name the parameter, the value
// and the allowed range. greedy_public is refused first: it needs a public
// frequency table, which SQL callers cannot pass.
func CheckSetUnion(o setunion.Options) (setunion.Options, error) {
	m, err := setunion.ParseMechanism(string(o.Mechanism))
	if err != nil {
		return setunion.Options{}, err
	}
	if m == setunion.GreedyPublic || m == setunion.GreedyPublicUnproven {
		return setunion.Options{}, fmt.Errorf("mechanism %s needs a public frequency table, which SQL functions cannot take: choose another mechanism (greedy_frequency is the closest)", m)
	}
	o.Mechanism, o.Public, o.AllowUnproven = m, nil, allowUnproven.Load()
	return o, o.Validate()
}
