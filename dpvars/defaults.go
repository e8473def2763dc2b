package dpvars

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/sqlext/explain"
)

// Where a release's option comes from, in the order of precedence: the
// statement (a SET_VAR hint, or BigQuery's WITH DIFFERENTIAL_PRIVACY
// OPTIONS(…) rewritten into hints), a value the analyst SET in the
// session, the configuration of the column, that of the table, and last
// the server's default (the global value of the variable: the
// configuration's defaults: section, or dpsql's own). A contribution
// bound left at its server default of 0 or ” is chosen privately from the
// data at release time (sqlext/dpagg's bounds.go).
const (
	OriginStatement = "statement"
	OriginSession   = "session"
	OriginColumn    = "column configuration"
	OriginTable     = "table configuration"
	OriginServer    = "server default"
)

// TableDefaults are the DP options a protected table's configuration
// gives its releases when the statement and the analyst's session do
// not: Vars by dp_* variable name (as SET would take them), and Columns
// by lower-cased column name.
//
// They are the administrator's choice, fixed before any release and
// independent of the data, so using them costs no privacy: a release with
// a configured max_groups_contributed is the same mechanism as one whose
// analyst SET it. (A value derived from the data, such as the true
// largest per-user count written into the configuration, is a choice the
// administrator makes outside dpsql's accounting: docs/deployment.md
// says so.)
type TableDefaults struct {
	Vars    map[string]any
	Columns map[string]ColumnDefaults
	// BasicLedger says the deployment's ledger charges releases by basic
	// composition (accounting.method: basic), so a release may take a
	// mechanism that only basic composition accounts: a private GROUP BY
	// at Δ0 = 1 then selects its keys with single_item
	// (dpagg.Options.BasicLedger). Not a dp_* variable: a zCDP account
	// refuses such a release, so only the deployment can say it.
	BasicLedger bool
}

// ColumnDefaults are a column's options: the clamping bounds of SUM, AVG
// and the other bounded aggregates of exactly this column ("lower,upper",
// as dp_contribution_bounds), and max_groups_contributed and
// max_rows_per_group of releases whose keys are columns that all set
// them (0: unset). For keys (a, b) the configured Δ0 is Δ0(a)·Δ0(b) (a
// user with at most Δ0(a) values of a and Δ0(b) of b has at most their
// product of pairs) and the configured m is the smaller of the two (a
// user's rows of one (a, b) group are rows of one a group).
type ColumnDefaults struct {
	Bounds    string
	MaxGroups int
	MaxRows   int
}

// defaultsKey keys the configured layer of the release being planned in
// its context.
type defaultsKey struct{}

// configured is the layer of configured values for one release, and the
// record of where each option the release read came from.
type configured struct {
	vars map[string]configuredValue

	mu      sync.Mutex
	origins map[string]string
}

type configuredValue struct {
	val    any
	origin string
}

// WithReleaseDefaults returns ctx carrying the configured defaults of one
// release over a table: the table's, overridden by its columns' for the
// keys (keyCols: the release's key columns when every key is a plain
// column, else nil). A context that already carries them is returned as it
// is (the first, most specific, call wins).
func WithReleaseDefaults(ctx *sql.Context, d *TableDefaults, keyCols []string) *sql.Context {
	if _, ok := ctx.Value(defaultsKey{}).(*configured); ok {
		return ctx
	}
	return WithOwnDefaults(ctx, d, keyCols)
}

// WithOwnDefaults is WithReleaseDefaults for a part of a release that has
// keys of its own (one DP_SET_UNION call of several, whose item is its
// key) or for a release planned outside the planner (DP_NGRAMS): its
// layer replaces any the context carries, and records its own origins.
func WithOwnDefaults(ctx *sql.Context, d *TableDefaults, keyCols []string) *sql.Context {
	c := &configured{vars: map[string]configuredValue{}, origins: map[string]string{}}
	if d != nil {
		for k, v := range d.Vars {
			c.vars[k] = configuredValue{v, OriginTable}
		}
		groups, rows, ok := columnContribution(d, keyCols)
		if ok && groups > 0 {
			c.vars[VarMaxGroups] = configuredValue{int64(groups), OriginColumn}
			c.vars[VarMaxItems] = configuredValue{int64(groups), OriginColumn}
		}
		if ok && rows > 0 {
			c.vars[VarMaxRows] = configuredValue{int64(rows), OriginColumn}
		}
	}
	return ctx.WithContext(context.WithValue(ctx.Context, defaultsKey{}, c))
}

// columnContribution combines the key columns' configured Δ0 (product)
// and m (minimum); ok is false unless every key column sets one of them.
func columnContribution(d *TableDefaults, keyCols []string) (groups, rows int, ok bool) {
	if len(keyCols) == 0 {
		return 0, 0, false
	}
	groups, allGroups := 1, true
	for _, k := range keyCols {
		c := d.Columns[strings.ToLower(k)]
		if c.MaxGroups <= 0 || groups > 1<<20 {
			allGroups = false
		} else {
			groups *= c.MaxGroups
		}
		if c.MaxRows > 0 && (rows == 0 || c.MaxRows < rows) {
			rows = c.MaxRows
		}
	}
	allRows := true
	for _, k := range keyCols {
		if d.Columns[strings.ToLower(k)].MaxRows <= 0 {
			allRows = false
		}
	}
	if !allGroups {
		groups = 0
	}
	if !allRows {
		rows = 0
	}
	return groups, rows, groups > 0 || rows > 0
}

// ColumnBounds returns the configured clamping bounds of a column, if the
// release's context carries them and the statement and session leave
// dp_contribution_bounds unset.
func ColumnBounds(ctx *sql.Context, d *TableDefaults, column string) (string, bool) {
	if d == nil {
		return "", false
	}
	switch Origin(ctx, VarBounds) {
	case OriginStatement, OriginSession:
		return "", false
	}
	c, ok := d.Columns[strings.ToLower(column)]
	if !ok || c.Bounds == "" {
		return "", false
	}
	return c.Bounds, true
}

// lookupConfigured returns the configured value of a variable for the
// release being planned.
func lookupConfigured(ctx *sql.Context, name string) (any, string, bool) {
	c, ok := ctx.Value(defaultsKey{}).(*configured)
	if !ok {
		return nil, "", false
	}
	v, ok := c.vars[name]
	return v.val, v.origin, ok
}

// noteOrigin records where a variable's value came from for the release
// being planned (nothing without a configured layer).
func noteOrigin(ctx *sql.Context, name, origin string) {
	if c, ok := ctx.Value(defaultsKey{}).(*configured); ok {
		c.mu.Lock()
		c.origins[name] = origin
		c.mu.Unlock()
	}
}

// Origin returns where the release being planned took a variable from
// ("" outside a release); a variable not read yet is read now.
func Origin(ctx *sql.Context, name string) string {
	c, ok := ctx.Value(defaultsKey{}).(*configured)
	if !ok {
		return ""
	}
	c.mu.Lock()
	o, read := c.origins[name]
	c.mu.Unlock()
	if read {
		return o
	}
	if get, _ := sessionVars(ctx); get != nil {
		get(name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.origins[name]
}

// SetOrigin records an origin found by the caller (a column's bounds).
func SetOrigin(ctx *sql.Context, name, origin string) { noteOrigin(ctx, name, origin) }

// OriginFacts are DP_EXPLAIN's rows saying where each option of the
// release came from, for the variables named (in that order).
func OriginFacts(ctx *sql.Context, names ...string) []explain.Fact {
	var out []explain.Fact
	for _, n := range names {
		o := Origin(ctx, n)
		if o == "" {
			continue
		}
		out = append(out, explain.F("source."+strings.TrimPrefix(n, "dp_"), o,
			"where the value of "+n+" comes from: statement (SET_VAR hint or OPTIONS), session (the analyst's SET), column or table configuration, or server default"))
	}
	return out
}

// VariableSetter is implemented by sessions that know which variables the
// client SET (the governed server's session). A session that does not
// counts a dp_* value as set when it differs from the global value.
type VariableSetter interface {
	VariableSet(name string) bool
}

// explicitlySet reports whether the session's client SET the variable.
func explicitlySet(ctx *sql.Context, name string, sessionVal any) bool {
	if s, ok := ctx.Session.(VariableSetter); ok {
		return s.VariableSet(name)
	}
	if sql.SystemVariables == nil {
		return true
	}
	_, gv, ok := sql.SystemVariables.GetGlobal(name)
	return !ok || fmt.Sprint(gv) != fmt.Sprint(sessionVal)
}
