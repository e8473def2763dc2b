package dpagg

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/sqlext/explain"
)

// Facts describes the plan for people, as Lines does, in the common form
// of package explain: the budget split, the key selection (names prefixed
// "selection.", with the users a key needs), then per aggregate i (1-based,
// names prefixed "aggregate_i.") its noise and the half-width of a 95 %
// interval in the value's units.
func (p *Plan) Facts() []explain.Fact {
	var groups, rows any = p.MaxGroupsContributed, p.MaxRowsPerGroup
	if b := p.Bounds; b != nil && b.Chosen == nil {
		// Placeholders until the release chooses: say so instead.
		if b.Groups {
			groups = "chosen privately at release time"
		}
		if b.Rows {
			rows = "chosen privately at release time"
		}
	}
	facts := []explain.Fact{
		explain.F("epsilon", p.Epsilon, "ε of the whole release: key selection plus aggregates"),
		explain.F("delta", p.Delta, "δ of the whole release"),
		explain.F("max_groups_contributed", groups, "Δ0: each user contributes to at most this many keys, chosen uniformly at random per user"),
		explain.F("max_rows_per_group", rows, "each user contributes at most this many rows to one key's COUNT and SUM"),
	}
	facts = append(facts, p.Bounds.facts()...)
	switch {
	case p.Global:
		facts = append(facts, explain.F("key_selection", "none", "no GROUP BY: one row over all rows is always released, so all of ε and δ go to the aggregates and max_groups_contributed is 1"))
	case p.PublicKeys:
		facts = append(facts, explain.F("key_selection", "public keys, no selection", "GROUP BY over the keys of a public table: every public key gets a row (noise around 0 for a key no user has), rows of other keys are dropped, and all of ε and δ go to the aggregates"))
	default:
		sel := explain.Prefix("selection.", p.Selection.Facts())
		for i := range sel {
			if sel[i].Name == "selection.mechanism" {
				sel[i].Value = p.SelectionMechanism()
			}
		}
		facts = append(facts, sel...)
	}
	if len(p.Aggregates) == 0 {
		return facts
	}
	facts = append(facts,
		explain.F("aggregates_epsilon", p.AggregatesEpsilon, "ε left for the aggregates"),
		explain.F("aggregates_delta", p.AggregatesDelta, "δ left for the aggregates"),
		explain.F("aggregates_noise", "discrete "+string(p.Noise), "integer-valued noise, sampled exactly, added to each aggregate's exact total"))
	if p.Noise == Gaussian {
		facts = append(facts, explain.F("aggregates_rho", p.Rho, "zCDP ρ of all aggregates together"))
		if p.Composition == CompositionZCDP {
			facts = append(facts, explain.F("aggregates_composition", "zcdp", "the aggregates get the ρ that ε and δ leave once key selection's ρ is added in zCDP (more than aggregates_epsilon and aggregates_delta alone would give); the release is (ε, δ)-DP by one conversion (jointrho.go)"))
		}
	}
	facts = append(facts, p.gaussianAutoFacts()...) // noiseauto.go
	for i, a := range p.Aggregates {
		pre := fmt.Sprintf("aggregate_%d.", i+1)
		what := string(a.Kind)
		if a.Kind.clamped() {
			what += fmt.Sprintf(" of values clamped to [%g, %g]", a.Lower, a.Upper)
		}
		if a.Kind == Quantile {
			what = fmt.Sprintf("quantile p=%g of values clamped to [%g, %g]", a.Quantile, a.Lower, a.Upper)
		}
		facts = append(facts, explain.F(pre+"kind", what, fmt.Sprintf("gets %.3g of the aggregates' budget", a.Share)))
		if a.Kind == Quantile {
			facts = append(facts, p.quantileFacts(pre, &a)...) // quantile.go
			continue
		}
		for _, s := range a.Stats {
			sp := pre
			if len(a.Stats) > 1 {
				sp += s.Name + "."
			}
			if p.Bounds != nil && p.Bounds.Chosen == nil {
				facts = append(facts, explain.F(sp+"noise_scale", "depends on the bounds chosen at release time",
					fmt.Sprintf("the statistic gets %.3g of the aggregates' budget after the choice's share; its noise scales with the chosen bounds", a.Share)),
					explain.F(sp+"ci95_half_width", "depends on the bounds chosen at release time", "set the bounds (dp_max_groups_contributed, dp_max_rows_per_group, dp_contribution_bounds) to see it before the release"))
				continue
			}
			facts = append(facts,
				explain.F(sp+"noise_scale", s.Scale, fmt.Sprintf("%s of the noise (per-user sensitivity ℓ1 %.4g, ℓ2 %.4g; granularity %g)", scaleName(p.Noise), s.L1, s.L2, s.Granularity)),
				explain.F(sp+"stddev", s.StdDev, "standard deviation of the noise, in the value's units"),
				explain.F(sp+"ci95_half_width", s.HalfWidth95, "95% of released values are within this of the exact (bounded) value"))
		}
		if a.Kind == Avg {
			facts = append(facts, explain.F(pre+"ci95_half_width", fmt.Sprintf("≈ %.4g / count", a.Stats[1].HalfWidth95),
				"the mean is midpoint + noisy centred sum / noisy count: its error shrinks with the key's count"))
		}
	}
	return facts
}

func scaleName(n Noise) string {
	if n == Gaussian {
		return "σ"
	}
	return "b"
}

// facts describes the private choice of bounds (none for nil).
func (b *BoundsPlan) facts() []explain.Fact {
	if b == nil {
		return nil
	}
	var what []string
	if b.Groups {
		what = append(what, "max_groups_contributed")
	}
	if b.Rows {
		what = append(what, "max_rows_per_group")
	}
	if len(b.Values) > 0 {
		what = append(what, fmt.Sprintf("the clamping bounds of %d SUM/AVG", len(b.Values)))
	}
	out := []explain.Fact{
		explain.F("bounds.chosen_privately", strings.Join(what, ", "), "left unset by the session and the configuration, so chosen from the data at release time by noisy tests (the values above are placeholders)"),
		explain.F("bounds.rho", b.Rho, fmt.Sprintf("zCDP ρ of the choice: %.0f%% of the aggregates' ρ", 100*BoundsShare)),
		explain.F("bounds.tests", b.Tests, "noisy tests of the choice (binary searches over public grids)"),
		explain.F("bounds.test_sigma", b.TestSigma, "σ of each test's Gaussian noise, in users"),
		explain.F("bounds.truncate", b.Truncate, "each chosen bound truncates about this share of the users"),
		explain.F("bounds.min_users", b.MinUsers, fmt.Sprintf("below about this many users, max_groups_contributed = %d and max_rows_per_group = %d instead and the clamping bounds come from a noisy histogram (the tests cannot tell bounds apart)", FallbackMaxGroups, FallbackMaxRows)),
	}
	out = append(out, b.valueSearchFacts()...) // smallbounds.go
	if b.AggregateGroups {
		out = append(out, explain.F("bounds.aggregate_groups", fmt.Sprintf("each user's keys with the most rows, how many chosen by a noisy minimum of the expected error (%d of the tests)", TopGroupsSlots),
			"the aggregates bound users apart from key selection, which keeps its uniform sample of max_groups_contributed keys (docs/privacy.md §21)"))
	}
	if b.NoiseChoice {
		out = append(out, explain.F("bounds.noise", fmt.Sprintf("discrete gaussian at rho=%.4g, or discrete laplace at epsilon=%.4g, whichever is narrower for the chosen bounds", b.statRho, b.LaplaceEpsilon),
			"the noise family is chosen after the bounds (noise_after_bounds); a zCDP account is charged the larger of the two branches' ρ (docs/privacy.md, the section on bounds chosen for error)"))
	}
	if c := b.Chosen; c != nil {
		out = append(out, explain.F("bounds.chosen", c.String(), "the privately chosen bounds (a DP output)"))
	}
	return out
}
