package planner

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/explain"
)

// WithTableDefaults gives releases the configured defaults of their
// protected table (server/config's per-table and per-column dp options):
// defaults(db, table) returns them, nil for none. Precedence, option by
// option: the statement's SET_VAR hints (and BigQuery's OPTIONS), then
// what the analyst SET in the session, then the column's configuration,
// then the table's, then the server default, which for the contribution
// bounds means chosen privately (dpvars.Origin*).
func WithTableDefaults(defaults func(db, table string) *dpvars.TableDefaults) PolicyOption {
	return func(p *policy) { p.defaults = defaults }
}

// tableDefaults returns the configured defaults of src's table (nil: none).
func (p *policy) tableDefaults(src source) *dpvars.TableDefaults {
	if p.defaults == nil {
		return nil
	}
	return p.defaults(src.db, src.name)
}

// withDefaults returns ctx carrying the configured defaults of a release
// over src with the given keys (once per release: a context that has them
// keeps them).
func (p *policy) withDefaults(ctx *sql.Context, src source, keys []sql.Expression) *sql.Context {
	return dpvars.WithReleaseDefaults(ctx, p.tableDefaults(src), keyColumns(src, keys))
}

// keyColumns are the names of the table's columns that are the keys, or
// nil unless every key is a plain column of the protected table.
func keyColumns(src source, keys []sql.Expression) []string {
	var cols []string
	for _, k := range keys {
		gf, ok := unalias(k).(*expression.GetField)
		if !ok || src.join.owns(gf) {
			return nil
		}
		cols = append(cols, gf.Name())
	}
	return cols
}

// bindSetUnion binds the i-th of n DP_SET_UNION calls of a release over
// src to its options as a SELECT DISTINCT of its item would take them:
// option by option, the call's options string, the statement's hints,
// the analyst's SET, the item column's configured defaults (when the item
// is a plain column), the table's, the server default. It returns the
// bound call and DP_EXPLAIN's source.* rows for it (call_i.source.* when
// the release has several calls).
func (p *policy) bindSetUnion(ctx *sql.Context, src source, c *functions.SetUnion, i, n int) (*functions.SetUnion, []explain.Fact, error) {
	cctx := dpvars.WithOwnDefaults(ctx, p.tableDefaults(src), keyColumns(src, []sql.Expression{c.Item()}))
	bound, err := c.Bind(cctx)
	if err != nil {
		return nil, nil, err
	}
	facts := originFacts(cctx, distinctRows)
	if n > 1 {
		facts = explain.Prefix(fmt.Sprintf("call_%d.", i+1), facts)
	}
	return bound, facts, nil
}

// columnBounds gives each bounded aggregate of exactly one configured
// column, whose bounds neither the statement nor the session set, the
// column's configured clamping bounds instead of bounds chosen
// privately.
func (p *policy) columnBounds(ctx *sql.Context, src source, aggs []aggregate, o *dpagg.Options) error {
	d := p.tableDefaults(src)
	origin := ""
	for i, a := range aggs {
		if i >= len(o.Aggregates) || !o.Aggregates[i].AutoBounds || a.value == nil {
			continue
		}
		gf, ok := unalias(a.value).(*expression.GetField)
		if !ok || src.join.owns(gf) {
			continue
		}
		b, ok := dpvars.ColumnBounds(ctx, d, gf.Name())
		if !ok {
			continue
		}
		lo, hi, err := dpvars.ParseBounds(b)
		if err != nil {
			return err
		}
		o.Aggregates[i].AutoBounds, o.Aggregates[i].Lower, o.Aggregates[i].Upper = false, lo, hi
		origin = dpvars.OriginColumn
	}
	if origin != "" {
		dpvars.SetOrigin(ctx, dpvars.VarBounds, origin)
	}
	return nil
}

// originFacts are DP_EXPLAIN's rows on where the release's options came
// from.
func originFacts(ctx *sql.Context, mode releaseMode) []explain.Fact {
	names := []string{dpvars.VarEpsilon, dpvars.VarDelta}
	switch mode {
	case aggregateRows:
		names = append(names, dpvars.VarMaxGroups, dpvars.VarMaxRows, dpvars.VarBounds, dpvars.VarNoise, dpvars.VarNoiseAfterBounds)
	case distinctRows:
		names = append(names, dpvars.VarMechanism, dpvars.VarMaxItems)
	default:
		return nil
	}
	facts := dpvars.OriginFacts(ctx, names...)
	for i, f := range facts {
		if f.Value == dpvars.OriginServer && privatelyChosen(ctx, f.Name) {
			facts[i].Value = "chosen privately from the data"
		}
	}
	return facts
}

// privatelyChosen reports whether a contribution bound left at its server
// default is chosen privately (0 or ”).
func privatelyChosen(ctx *sql.Context, fact string) bool {
	name := "dp_" + strings.TrimPrefix(fact, "source.")
	switch name {
	case dpvars.VarMaxGroups, dpvars.VarMaxRows, dpvars.VarMaxItems:
		v, err := ctx.GetSessionVariable(ctx, name)
		return err == nil && (v == int64(0) || v == 0)
	case dpvars.VarBounds:
		v, err := ctx.GetSessionVariable(ctx, name)
		return err == nil && strings.TrimSpace(fmt.Sprint(v)) == ""
	}
	return false
}
