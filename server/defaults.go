package server

import (
	"strings"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/server/config"
)

// basicLedger reports whether the deployment's ledger adds releases up by
// basic composition (Σε, Σδ). There a release whose bounds are chosen
// privately may take Laplace noise after them (dp_noise_after_bounds) for
// no extra charge, so every protected table defaults to it; under zCDP
// (the default ledger) that branch costs ρ_t + max(ρ_s, Σ ε_L²/2), 5–9×
// the Gaussian's ρ, and a Gaussian at that larger ρ would be narrower
// still, so the variable's own default (OFF) stands (docs/privacy.md §31).
func basicLedger(cfg *config.Config) bool {
	return strings.EqualFold(cfg.Accounting.Method, "basic")
}

// tableDefaults returns the configured DP options of the protected
// datasets (their dp: sections and their columns'), keyed by table, for
// planner.WithTableDefaults. The table's max_groups_contributed is also
// its SELECT DISTINCT's max_items (both are Δ0).
func tableDefaults(cfg *config.Config) func(db, table string) *dpvars.TableDefaults {
	m := map[string]*dpvars.TableDefaults{}
	for _, d := range cfg.Datasets {
		if !d.Protected() {
			continue
		}
		td := &dpvars.TableDefaults{Vars: map[string]any{}, Columns: map[string]dpvars.ColumnDefaults{}}
		if t := d.DP; t != nil {
			if t.Epsilon != nil {
				td.Vars[dpvars.VarEpsilon] = *t.Epsilon
			}
			if t.Delta != nil {
				td.Vars[dpvars.VarDelta] = *t.Delta
			}
			if t.Mechanism != "" {
				td.Vars[dpvars.VarMechanism] = strings.ToLower(t.Mechanism)
			}
			if t.Noise != "" {
				td.Vars[dpvars.VarNoise] = strings.ToLower(t.Noise)
			}
			if t.MaxGroupsContributed != nil {
				td.Vars[dpvars.VarMaxGroups] = int64(*t.MaxGroupsContributed)
				td.Vars[dpvars.VarMaxItems] = int64(*t.MaxGroupsContributed)
			}
			if t.MaxRowsPerGroup != nil {
				td.Vars[dpvars.VarMaxRows] = int64(*t.MaxRowsPerGroup)
			}
			if t.NoiseAfterBounds != nil {
				td.Vars[dpvars.VarNoiseAfterBounds] = *t.NoiseAfterBounds
			}
		}
		if _, set := td.Vars[dpvars.VarNoiseAfterBounds]; !set && basicLedger(cfg) {
			td.Vars[dpvars.VarNoiseAfterBounds] = true
		}
		td.BasicLedger = basicLedger(cfg)
		for _, c := range d.Columns {
			if c.DP == nil {
				continue
			}
			cd := dpvars.ColumnDefaults{Bounds: c.DP.BoundsText()}
			if c.DP.MaxGroupsContributed != nil {
				cd.MaxGroups = *c.DP.MaxGroupsContributed
			}
			if c.DP.MaxRowsPerGroup != nil {
				cd.MaxRows = *c.DP.MaxRowsPerGroup
			}
			td.Columns[strings.ToLower(c.Name)] = cd
		}
		if len(td.Vars) > 0 || len(td.Columns) > 0 || td.BasicLedger {
			m[strings.ToLower(d.QualifiedName())] = td
		}
	}
	return func(db, table string) *dpvars.TableDefaults {
		return m[strings.ToLower(db+"."+table)]
	}
}
