package dpagg

// A row budget for counts: the aggregates' Δ0_a as Δ0_a·m rows, not Δ0_a keys.
//
// Why. With Δ0 chosen privately, the aggregates count each user's Δ0_a keys
// with the most rows, at most m rows each (topgroups.go): a box of Δ0_a
// keys × m rows, ℓ2 sensitivity √Δ0_a·m. A user whose top Δ0_a keys hold
// fewer than m rows each leaves part of that box empty and still loses its
// rows of every further key. On the demo, COUNT(*) of the 20 most frequent
// words lost a median 8.6 % of its rows to the box at the oracle's best
// (Δ0_a, m) (docs/accuracy.md §5).
//
// What. When every aggregate of the release is a count of rows
// (COUNT(*), COUNT(col)) and Δ0_a is chosen, each user walks its keys in the
// order of aggregateKeys (most rows first, ties by the release's keyed
// hash) and counts r_k = min(rows_k, m, left) rows of key k, left starting
// at Δ0_a·m and falling by r_k, until left is 0: the same box when every
// key holds m rows or more, and more of the user's keys otherwise.
//
// Sensitivity. A user's contribution vector x has 0 ≤ x_k ≤ r_k ≤ m
// (COUNT(col) counts min(non-NULL_k, r_k)) and Σ_k r_k ≤ Δ0_a·m, so
// ‖x‖₂² ≤ max_k x_k · Σ_k x_k ≤ m·Δ0_a·m: ℓ2 sensitivity √Δ0_a·m, exactly the
// box's, and per key m. The noise, the plan and the charge are unchanged
// (Plan.statGroups is still Δ0_a); the coupling argument of the package
// documentation holds since x is a function of the user's own rows and of
// the release's tie seed. Other statistics (COUNT(DISTINCT unit), sums,
// means, spreads, quantiles) keep the box: COUNT(DISTINCT) would count up to
// Δ0_a·m keys at 1 each, and a sum's rounding to its granularity could push
// the ℓ2 norm past the bound.

// rowBudget reports whether the plan's aggregates count rows under a row
// budget (see above): Δ0_a chosen and every aggregate a count of rows.
func (p *Plan) rowBudget() bool {
	return p.AggregateGroups > 0 && p.countsOnly()
}

// countsOnly reports whether every aggregate of a plan with key selection
// is a count of rows, so that a chosen Δ0_a is a row budget.
func (p *Plan) countsOnly() bool {
	if p.Global || p.PublicKeys || len(p.Aggregates) == 0 {
		return false
	}
	for _, a := range p.Aggregates {
		if a.Kind != CountRows && a.Kind != CountValues {
			return false
		}
	}
	return true
}

// budgetKept is the rows a user whose rows per key are rows keeps under a
// budget of d·m rows at m per key: min(Σ_k min(rows_k, m), d·m).
func budgetKept(rows []uint32, d, m int) int64 {
	var kept int64
	for _, c := range rows {
		kept += min(int64(c), int64(m))
	}
	return min(kept, int64(d)*int64(m))
}

// budgetKeys returns the indexes of the user's entries (list l) in
// aggregateKeys' order, as many as the row budget can reach (at most
// AggregateGroups·m, each taking at least one row). idx is overwritten.
func (p *Pipeline) budgetKeys(l []uint64, idx []int32, m uint64) []int32 {
	idx = idx[:0]
	for i := range int32(len(l) / p.stride) {
		idx = append(idx, i)
	}
	return p.topKeys(l, idx, min(len(idx), p.plan.AggregateGroups*int(m)))
}

// userRows returns each user's rows per key (grouped pairs), as
// chooseAggregateGroups sees them.
func userRows(p *Pipeline) [][]uint32 {
	p.group()
	out := make([][]uint32, len(p.lists))
	for u, l := range p.lists {
		for i := 0; i < len(l); i += p.stride {
			out[u] = append(out[u], uint32(l[i]&0xffffffff))
		}
	}
	return out
}
