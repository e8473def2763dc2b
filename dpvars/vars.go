package dpvars

import (
	"math"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Names of the session variables that give DP functions their default
// options. Every one can be SET for the session or globally; values out of
// range are refused with MySQL error 1231 and a message saying what is
// allowed.
const (
	VarEpsilon   = "dp_epsilon"
	VarDelta     = "dp_delta"
	VarMaxItems  = "dp_max_items"
	VarMechanism = "dp_mechanism"
	VarAlpha     = "dp_alpha"
	VarRounds    = "dp_rounds"
)

// SystemVariables returns the definitions of the dp_* variables, with the
// defaults of setunion.Defaults (alpha: setunion.CutoffAlpha) and a NotifyChanged hook
// that refuses out-of-range values. Register them with RegisterSystemVariables
// before any session is created.
func SystemVariables() []sql.SystemVariable {
	d := DefaultSetUnion()
	both := sql.GetMysqlScope(sql.SystemVariableScope_Both)
	// The type bounds are wide on purpose: a value outside a type's bounds
	// gets go-mysql-server's terse "can't be set" message, so the checks
	// live in NotifyChanged, which explains the allowed range.
	return append([]sql.SystemVariable{
		&sql.MysqlSystemVariable{
			Name: VarEpsilon, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemDoubleType(VarEpsilon, -math.MaxFloat64, math.MaxFloat64),
			Default:       d.Epsilon,
			NotifyChanged: check(VarEpsilon, func(o *setunion.Options, v any) { o.Epsilon = asFloat(v) }),
		},
		&sql.MysqlSystemVariable{
			Name: VarDelta, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemDoubleType(VarDelta, -math.MaxFloat64, math.MaxFloat64),
			Default:       d.Delta,
			NotifyChanged: check(VarDelta, func(o *setunion.Options, v any) { o.Delta = asFloat(v) }),
		},
		&sql.MysqlSystemVariable{
			Name: VarMaxItems, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemIntType(VarMaxItems, math.MinInt64, math.MaxInt64, false),
			Default:       int64(d.MaxItems),
			NotifyChanged: check(VarMaxItems, func(o *setunion.Options, v any) { o.MaxItems = asInt(v) }),
		},
		&sql.MysqlSystemVariable{
			Name: VarMechanism, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemStringType(VarMechanism),
			Default:       string(d.Mechanism),
			NotifyChanged: check(VarMechanism, setMechanism),
		},
		&sql.MysqlSystemVariable{
			Name: VarAlpha, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemDoubleType(VarAlpha, -math.MaxFloat64, math.MaxFloat64),
			Default:       *d.Alpha,
			NotifyChanged: check(VarAlpha, func(o *setunion.Options, v any) { o.Alpha = setunion.Float(asFloat(v)) }),
		},
		&sql.MysqlSystemVariable{
			Name: VarRounds, Scope: both, Dynamic: true, SetVarHintApplies: true,
			Type:          types.NewSystemIntType(VarRounds, math.MinInt64, math.MaxInt64, false),
			Default:       int64(d.Rounds),
			NotifyChanged: check(VarRounds, func(o *setunion.Options, v any) { o.Rounds = asInt(v) }),
		},
	}, append(append(aggregateVariables(), reuseVariables()...), unitVariables()...)...)
}

var registerOnce sync.Once

// RegisterSystemVariables adds the dp_* variables to go-mysql-server's global
// registry (sql.SystemVariables), once per process: registering again would
// reset values set with SET GLOBAL. Sessions snapshot the registry when they
// are created, so call it before creating any session.
func RegisterSystemVariables() {
	registerOnce.Do(func() {
		if sql.SystemVariables == nil {
			panic("functions: sql.SystemVariables is nil; import github.com/dolthub/go-mysql-server/sql/variables")
		}
		sql.SystemVariables.AddSystemVariables(SystemVariables())
	})
}

// AssignGlobals makes o the global values of the set-union variables
// (dp_mechanism, dp_epsilon, dp_delta, dp_max_items, dp_alpha, dp_rounds),
// which every new session starts from: the governed server's
// configured defaults. α nil (the mechanism's own) is
// setunion.CutoffAlpha, the default of dp_alpha. Each value is checked as
// SET GLOBAL would check it.
func AssignGlobals(o setunion.Options) error {
	alpha := setunion.CutoffAlpha
	if o.Alpha != nil {
		alpha = *o.Alpha
	}
	return sql.SystemVariables.AssignValues(map[string]any{
		VarMechanism: string(o.Mechanism),
		VarEpsilon:   o.Epsilon,
		VarDelta:     o.Delta,
		VarMaxItems:  int64(o.MaxItems),
		VarAlpha:     alpha,
		VarRounds:    int64(o.Rounds),
	})
}

// check returns a NotifyChanged hook that validates a new value of one
// variable on its own: the value is put into the defaults and the result
// checked as DP_SET_UNION checks it, so a value is refused exactly when it
// could never be used.
func check(name string, set func(*setunion.Options, any)) func(*sql.Context, sql.SystemVariableScope, sql.SystemVarValue) error {
	return func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
		o := DefaultSetUnion()
		set(&o, v.Val)
		if _, err := CheckSetUnion(o); err != nil {
			return wrongValue(name, v.Val, err)
		}
		return nil
	}
}

// wrongValue is MySQL error 1231 for a value a dp_* variable cannot take.
func wrongValue(name string, v any, err error) error {
	return mysql.NewSQLError(mysql.ERWrongValueForVar, mysql.SSClientError,
		"Variable '%s' can't be set to the value of '%v': %s", name, v, strings.TrimPrefix(err.Error(), name+": "))
}

// setMechanism sets the mechanism from a dp_mechanism value (a name,
// normalised by setunion.Options.Set; Validate reports an unknown one).
func setMechanism(o *setunion.Options, v any) {
	if s, ok := v.(string); ok {
		_ = o.Set("mechanism", s) // never fails: the name is checked by Validate
	}
}

func asFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	return math.NaN()
}

func asInt(v any) int {
	switch x := v.(type) {
	case int64:
		if x > math.MaxInt32 || x < math.MinInt32 {
			return math.MinInt32 // out of every range
		}
		return int(x)
	case int:
		return x
	case uint64:
		if x > math.MaxInt32 {
			return math.MinInt32
		}
		return int(x)
	}
	return math.MinInt32
}

// SessionParams reads the dp_* variables of ctx's session, overridden by
// the statement's SET_VAR hints (/*+ SET_VAR(dp_epsilon = 0.5) */). A
// variable the session does not know (the session was created before
// RegisterSystemVariables ran) falls back to its global value, and without
// a session everything falls back to the defaults. A hint that cannot be
// applied leaves the variable as it is; SessionHintsError reports it.
func SessionParams(ctx *sql.Context) setunion.Options {
	p := DefaultSetUnion()
	get, _ := sessionVars(ctx)
	if get == nil {
		return p
	}
	if v, ok := get(VarEpsilon); ok {
		p.Epsilon = asFloat(v)
	}
	if v, ok := get(VarDelta); ok {
		p.Delta = asFloat(v)
	}
	if v, ok := get(VarMaxItems); ok {
		p.MaxItems = asInt(v)
	}
	if v, ok := get(VarMechanism); ok {
		setMechanism(&p, v)
	}
	if v, ok := get(VarAlpha); ok {
		p.Alpha = setunion.Float(asFloat(v))
	}
	if v, ok := get(VarRounds); ok {
		p.Rounds = asInt(v)
	}
	return p
}

// SessionHintsError returns the error of the statement's SET_VAR hints of
// dp_* variables, if one cannot be applied (unknown variable, bad value):
// callers refuse the release instead of ignoring the hint.
func SessionHintsError(ctx *sql.Context) error {
	_, err := sessionVars(ctx)
	return err
}

// sessionVars returns a lookup of the dp_* variables for ctx: the
// statement's SET_VAR hints, then the values the session's client SET,
// then the configured defaults of the table a release is being planned
// over (WithReleaseDefaults), then the session's values (its snapshot of
// the globals), then the globals. Each lookup records where the value
// came from (Origin).
func sessionVars(ctx *sql.Context) (func(name string) (any, bool), error) {
	if ctx == nil || ctx.Session == nil {
		return nil, nil
	}
	hints, err := dpHints(ctx)
	return func(name string) (any, bool) {
		if v, ok := hints[name]; ok {
			noteOrigin(ctx, name, OriginStatement)
			return v, true
		}
		v, err := ctx.GetSessionVariable(ctx, name)
		if err == nil && v != nil && explicitlySet(ctx, name, v) {
			noteOrigin(ctx, name, OriginSession)
			return v, true
		}
		if cv, origin, ok := lookupConfigured(ctx, name); ok {
			noteOrigin(ctx, name, origin)
			return cv, true
		}
		noteOrigin(ctx, name, OriginServer)
		if err == nil && v != nil {
			return v, true
		}
		if sql.SystemVariables != nil {
			if _, gv, ok := sql.SystemVariables.GetGlobal(name); ok && gv != nil {
				return gv, true
			}
		}
		return nil, false
	}, err
}
