package dpagg

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Bounds chosen to minimise the error, not the truncation.
//
// Why. bounds.go picks max_rows_per_group m and a clamping bound U as the
// grid values that truncate at most a share f of the users: bounds for
// truncation. For a SUM the noise grows with m·U, so the truncation-free
// m and U swamp the sums in noise (median relative error ≈ 1 on the top
// keys of the accuracy table, against 0.13–0.77 with hand-set bounds).
//
// What. After Δ0, the quantile m_q and the aggregates' Δ0_a are chosen,
// the release refines m and then each clamping bound of a SUM, AVG or
// spread by the same kind of noisy test, with an error-minimising
// threshold. For a key holding a share 1/K of the data (K = ErrorKeys) the
// expected absolute error of a statistic is about (loss to bounding)/K +
// √(2/π)·σ, σ its noise deviation, linear in the bound x being chosen
// (σ(x) = σ_0·x/x_0 for m, and for U). Over a descending public candidate
// grid x_0 > x_1 > …, stepping from x_i to x_{i+1} lowers K× the error iff
//
//	ΔLoss_i < K·√(2/π)·σ_0·(x_i − x_{i+1})/x_0,
//
// i.e. iff X_i < τ with the normalised marginal loss
//
//	X_i = Σ_u min(δ_u(i), C),  δ_u(i) = (loss_u(x_{i+1}) − loss_u(x_i))⁺ / (v·(x_i − x_{i+1})),
//	τ   = K·√(2/π)·σ_0/(v·x_0),
//
// loss_u the user's rows (or value) lost on its Δ0_a keys with the most rows
// (ties by key bytes) against the largest candidate, v the public value
// scale of one row (1 for a count, m·… see below), C = 2·⌈√Δ0_a⌉. X_i grows
// with i (the loss is convex in the bound), so a binary search of the
// noisy tests "X_i − τ + C·Z ≤ 0", Z ~ N(0, σ_t²), finds the first step
// not worth taking. For m the candidates are setunion's grid values up to
// RowsCandidateFactor·m_q (and, for a count, whose loss is all bias and
// which the clipping to C undercounts for users with many keys, at least
// m_q), the loss of a pair at m is its rows (or |sum|)
// beyond m (in proportion m/n for a sum), v = 1 for counts and U for sums;
// for AVG and the spreads it is 0 (a user's m-bounded sums, scaled by m/n,
// keep its mean and second moment; only the weights of the users change,
// while the noise relative to the bounded count grows with m), so m goes to
// the smallest candidate the tests allow;
// for U they are U_q·2, U_q, U_q/2, …, U_q/16 (valueCandidateCount, U_q the
// quantile bound of the first pass), the loss of a pair is |T(U_0) −
// T(U_j)|, T the pair's m-bounded sum, and v = m (for a variance or
// standard deviation the loss is in the second moment and the noise, of
// the sum of squares and of the mean's term, grows as U²: spreadErrorStats).
// Each pair keeps one exact
// sum per candidate U from the first row on (column.cands), so the choice
// is made on the grouped data after m is known.
//
// Privacy. Every δ_u(i) is a function of user u's own rows and of public
// values (the candidates, C, and Δ0, m, U chosen by earlier tests, DP
// outputs); min(·, C) ≥ 0 bounds it in [0, C], so adding or removing a
// user moves X_i by at most C and (X_i − τ)/C, τ public, by at most 1:
// each test is one more Gaussian test of sensitivity 1 at σ_t, sampled
// exactly (securerand.Bernoulli), of the K planned in BoundsPlan.Tests
// (rowsErrorTests for m, valueErrorTests per bound) — a number fixed by the
// options, never by the data (TestErrorChoiceSensitivity checks the bound
// on random neighbouring databases).
const (
	// ErrorKeys is K: the choice minimises the error of a key that holds a
	// share 1/K of the data (as TopGroupsKeys).
	ErrorKeys = TopGroupsKeys
	// RowsCandidateFactor bounds the candidates of m at this multiple of
	// the quantile choice m_q.
	RowsCandidateFactor = 4
	// valueCandidateCount candidates U_q·2^(1−j), j = 0 … 5; the quantile
	// bound U_q is candidate valueCandidateTop.
	valueCandidateCount = 6
	valueCandidateTop   = 1
	// The tests of the binary searches: ⌈log2 32⌉ over at most the 32
	// values of the grid for m, ⌈log2 6⌉ for U.
	rowsErrorTests  = 5
	valueErrorTests = 3
)

// errorValueKind reports whether an aggregate's clamping bound is refined
// for error (SUM, AVG and the spreads; a quantile keeps the quantile bound).
func errorValueKind(k Kind) bool { return k == Sum || k == Avg || k.spread() }

// rowsAggregate returns the first aggregate whose error depends on m
// (COUNT(*), COUNT(col), SUM, AVG, a spread), or −1.
func rowsAggregate(aggs []Aggregate) int {
	return slices.IndexFunc(aggs, func(a Aggregate) bool {
		return a.Kind == CountRows || a.Kind == CountValues || errorValueKind(a.Kind)
	})
}

// valueCandidates returns the candidate ranges of every aggregate whose
// bounds are refined, from the first pass's choice c: U_q·2^(1−j), with
// the lower end 0 or −U as chosen.
func valueCandidates(o Options, c *Chosen) [][]candidate {
	out := make([][]candidate, len(o.Aggregates))
	for i, a := range o.Aggregates {
		if !a.AutoBounds || !errorValueKind(a.Kind) || i >= len(c.Bounds) || !(c.Bounds[i][0] < c.Bounds[i][1]) || !c.refinable(i) {
			continue
		}
		lo, up := c.Bounds[i][0], c.Bounds[i][1]
		for j := range valueCandidateCount {
			u := math.Ldexp(up, valueCandidateTop-j)
			l := 0.0
			if lo < 0 {
				l = -u
			}
			out[i] = append(out[i], newCandidate(a.Kind, l, u))
		}
	}
	return out
}

// newCandidate returns the range [lo, up] with the row grids Calibrate
// gives it (sumStat, spreadStats).
func newCandidate(k Kind, lo, up float64) candidate {
	cd := candidate{lower: lo, upper: up}
	if k == Sum {
		cd.h = sumStat("sum", 1, max(math.Abs(lo), math.Abs(up)), 1).rowGrid
		return cd
	}
	b := (up - lo) / 2
	cd.mid = lo + b
	cd.h = sumStat("normalized_sum", 1, b, 1).rowGrid
	if k.spread() {
		cd.h2 = sumStat("normalized_sum_of_squares", 1, b*b, 1).rowGrid
	}
	return cd
}

// marginalSearch returns the first index i < n−1 whose test
// "(x(i) − tau)/capC + Z ≤ 0" fails (n−1 if none), by a binary search of
// at most ⌈log2 n⌉ tests; x(i) must move by at most capC per user.
func (t *tester) marginalSearch(n int, tau, capC float64, x func(i int) float64) int {
	lo, hi := 0, n-1
	for lo < hi {
		mid := (lo + hi) / 2
		if t.pass((x(mid) - tau) / capC) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// fixedCountBounds, when a test sets it, replaces the chosen (Δ0_a, m) of a
// count after the tests ran (their budget is spent as planned), so that the
// real release can be measured at given bounds (demo_fixed_test.go). It is
// nil outside tests.
var fixedCountBounds *[2]int

// chooseForError refines m and the clamping bounds with candidates for
// error (see above), after chooseCounts, and recalibrates.
func (p *Pipeline) chooseForError(rng *rand.Rand) error {
	b := p.plan.Bounds
	if b == nil || p.chosen == nil {
		return nil
	}
	hasCands := slices.ContainsFunc(p.cols, func(c column) bool { return c.cands != nil })
	if !b.ErrorRows && !hasCands {
		return nil
	}
	if p.tests == nil {
		p.tests = &tester{rng: rng, sigma: b.TestSigma, left: b.Tests}
	}
	c := p.chosen
	d := p.plan.statGroups()
	capC := 2 * math.Ceil(math.Sqrt(float64(d)))
	kept := p.choiceKeys(d)
	if ai := rowsAggregate(p.opts.Aggregates); b.ErrorRows && !c.Fallback && ai >= 0 {
		c.MaxRowsPerGroup = p.chooseRowsForError(kept, ai, capC)
		if fixedCountBounds != nil { // tests only: the real release at a given (Δ0_a, m)
			c.AggregateGroups, c.MaxRowsPerGroup = fixedCountBounds[0], fixedCountBounds[1]
		}
		if err := p.replan(c); err != nil {
			return err
		}
	}
	for ai := range p.cols {
		col := &p.cols[ai]
		if col.cands == nil {
			continue
		}
		cd := col.cands[p.chooseValueForError(kept, ai, capC)]
		c.Bounds[ai] = [2]float64{cd.lower, cd.upper}
		if err := p.replan(c); err != nil {
			return err
		}
	}
	return nil
}

// choiceKeys returns, per user, the indexes of its d entries with the most
// rows, ties broken by the key bytes: a function of the user's own rows.
func (p *Pipeline) choiceKeys(d int) [][]int32 {
	s := p.stride
	out := make([][]int32, len(p.lists))
	var es []topEntry // this call's scratch (topsort.go)
	for u, l := range p.lists {
		idx := make([]int32, len(l)/s)
		for i := range idx {
			idx[i] = int32(i)
		}
		if len(idx) > d {
			es = es[:0]
			for i := range idx {
				e := l[i*s]
				name := p.keyNames[e>>32]
				es = append(es, topEntry{rows: e & 0xffffffff, tie: namePrefix(name), idx: int32(i), name: name})
			}
			idx = sortTop(es, d, idx)
		}
		out[u] = idx
	}
	return out
}

// errorStat is the statistic of aggregate ai whose noise the bounds set:
// the count of a count, the (normalised) sum of the others.
func (p *Plan) errorStat(ai int) *StatPlan {
	a := &p.Aggregates[ai]
	if len(a.Stats) > 1 {
		return &a.Stats[1]
	}
	return &a.Stats[0]
}

// pairTotal is entry e's bounded-sum value of column col before the m
// bound: its signed sum of clamped values at candidate j (col.sel if
// j < 0), in value units, and its non-NULL rows.
func pairTotal(col *column, e []uint64, j int) (float64, uint64) {
	nn := e[col.off]
	if j < 0 {
		j = col.sel
	}
	cd := candidate{lower: col.lower, upper: col.upper, mid: col.mid, h: col.h}
	if col.cands != nil {
		cd = col.cands[j]
	}
	w := int64(e[col.off+1+j*col.words()])
	return float64(w)*cd.h + cd.mid*float64(nn), nn
}

// chooseRowsForError runs the search of m for aggregate ai.
func (p *Pipeline) chooseRowsForError(kept [][]int32, ai int, capC float64) int {
	ms, xs, tau := p.rowsErrorStats(kept, ai, capC)
	if len(ms) < 2 {
		return p.plan.MaxRowsPerGroup
	}
	return ms[p.tests.marginalSearch(len(ms), tau, capC, func(i int) float64 { return xs[i] })]
}

// rowsErrorStats returns the candidates of m (setunion's grid values up to
// RowsCandidateFactor·m_q, m_q the current m, descending), the normalised
// marginal losses X_i of aggregate ai and the threshold τ.
func (p *Pipeline) rowsErrorStats(kept [][]int32, ai int, capC float64) ([]int, []float64, float64) {
	mq := p.plan.MaxRowsPerGroup
	col := &p.cols[ai]
	// A count's loss is all bias, and the clipped δ_u undercount the
	// users with many keys: a count keeps at least the quantile m_q.
	floor := 1
	if !errorValueKind(col.kind) {
		floor = mq
	}
	var ms []int
	for _, g := range setunion.MaxItemsGrid() {
		if g >= floor && g <= min(RowsCandidateFactor*mq, MaxMaxRowsPerGroup) {
			ms = append(ms, g)
		}
	}
	slices.Reverse(ms)
	if len(ms) < 2 {
		return ms, nil, 0
	}
	unit := 1.0
	if errorValueKind(col.kind) {
		unit = max(math.Abs(col.lower), math.Abs(col.upper))
	}
	// contrib is a pair's contribution at m: rows for a count, |sum|·min(1, m/n) for a sum.
	contrib := func(e []uint64, m int) float64 {
		switch col.kind {
		case CountRows:
			return float64(min(e[0]&0xffffffff, uint64(m)))
		case CountValues:
			return float64(min(e[col.off], uint64(m)))
		case Avg, VarPop, VarSamp, StdDevPop, StdDevSamp:
			return 0 // the m-bounded sums keep each user's mean: no loss (see above)
		}
		t, nn := pairTotal(col, e, -1)
		if nn == 0 {
			return 0
		}
		return math.Abs(t) * min(1, float64(m)/float64(nn))
	}
	sigma := p.plan.errorStat(ai).StdDev
	tau := ErrorKeys * math.Sqrt(2/math.Pi) * sigma / (float64(mq) * unit)
	s := p.stride
	xs := make([]float64, len(ms)-1)
	if p.plan.rowBudget() { // counts under a row budget of Δ0_a·m (rowbudget.go)
		d, rows := p.plan.statGroups(), userRows(p)
		for i := range xs {
			for _, r := range rows {
				du := float64(budgetKept(r, d, ms[i]) - budgetKept(r, d, ms[i+1]))
				xs[i] += min(max(du, 0)/(unit*float64(ms[i]-ms[i+1])), capC)
			}
		}
		return ms, xs, tau
	}
	for i := range xs {
		for u, l := range p.lists {
			var du float64
			for _, k := range kept[u] {
				e := l[int(k)*s : int(k+1)*s]
				du += contrib(e, ms[i]) - contrib(e, ms[i+1])
			}
			xs[i] += min(max(du, 0)/(unit*float64(ms[i]-ms[i+1])), capC)
		}
	}
	return ms, xs, tau
}

// chooseValueForError runs the search of aggregate ai's clamping bound over
// its candidates and returns the chosen index.
func (p *Pipeline) chooseValueForError(kept [][]int32, ai int, capC float64) int {
	xs, tau := p.valueErrorStats(kept, ai, capC)
	return p.tests.marginalSearch(len(xs)+1, tau, capC, func(j int) float64 { return xs[j] })
}

// valueErrorStats returns the normalised marginal losses X_j between
// aggregate ai's candidates j and j+1, and the threshold τ.
func (p *Pipeline) valueErrorStats(kept [][]int32, ai int, capC float64) ([]float64, float64) {
	col := &p.cols[ai]
	if col.kind.spread() {
		return p.spreadErrorStats(kept, ai, capC)
	}
	m := float64(p.plan.MaxRowsPerGroup)
	sigma := p.plan.errorStat(ai).StdDev
	tau := ErrorKeys * math.Sqrt(2/math.Pi) * sigma / (m * col.upper)
	xs := p.marginalLosses(kept, col, m, capC, pairTotal, func(j int) float64 {
		return m * (col.cands[j].upper - col.cands[j+1].upper)
	})
	return xs, tau
}

// spreadErrorStats is valueErrorStats for a variance or standard
// deviation, whose error is that of n·var = S2 − 2·mean·S1 + … (spread.go):
// its noise has deviation σ_v = √(σ_2² + (2b·σ_1)²) at the current bound
// (|mean| ≤ b, the half-range: the worst case, values at one end of the
// range), and both terms scale with U², b ∝ U, so σ_v(U) = σ_v·(U/U_c)².
// The loss of a pair at candidate j is |Q_0 − Q_j|, Q_j its m-bounded sum
// of squared clamped values about 0 (the second moment a clamp at U_j
// loses), and stepping from U_j to U_{j+1} removes noise
// σ_v·(U_j² − U_{j+1}²)/U_c², so
//
//	δ_u(j) = (loss_u(j+1) − loss_u(j))⁺ / (m·(U_j² − U_{j+1}²)),  τ = K·√(2/π)·σ_v/(m·U_c²).
//
// Each δ_u is a function of user u's own pairs and public values, clipped
// to [0, C] below: the same sensitivity as the other tests.
func (p *Pipeline) spreadErrorStats(kept [][]int32, ai int, capC float64) ([]float64, float64) {
	col := &p.cols[ai]
	m := float64(p.plan.MaxRowsPerGroup)
	st := p.plan.Aggregates[ai].Stats
	b := (col.upper - col.lower) / 2
	sigma := math.Hypot(st[2].StdDev, 2*b*st[1].StdDev)
	tau := ErrorKeys * math.Sqrt(2/math.Pi) * sigma / (m * col.upper * col.upper)
	xs := p.marginalLosses(kept, col, m, capC, pairSquares, func(j int) float64 {
		uj, un := col.cands[j].upper, col.cands[j+1].upper
		return m * (uj*uj - un*un)
	})
	return xs, tau
}

// marginalLosses returns X_j = Σ_u min((loss_u(j+1) − loss_u(j))⁺/step(j), C)
// for the candidates of col, where loss_u(j) = Σ over user u's kept pairs
// of |stat(U_0) − stat(U_j)|, each pair weighted min(1, m/rows) (its share
// of the m-bounded sum): the normalised marginal losses of
// valueErrorStats (stat = pairTotal) and spreadErrorStats (stat =
// pairSquares). Each user's term is its own pairs' and public values',
// clipped to [0, C].
func (p *Pipeline) marginalLosses(kept [][]int32, col *column, m, capC float64, stat func(*column, []uint64, int) (float64, uint64), step func(j int) float64) []float64 {
	n := len(col.cands)
	s := p.stride
	xs := make([]float64, n-1)
	loss := make([]float64, n)
	for u, l := range p.lists {
		clear(loss)
		for _, k := range kept[u] {
			e := l[int(k)*s : int(k+1)*s]
			v0, nn := stat(col, e, 0)
			if nn == 0 {
				continue
			}
			f := min(1, m/float64(nn))
			for j := 1; j < n; j++ {
				vj, _ := stat(col, e, j)
				loss[j] += math.Abs(v0-vj) * f
			}
		}
		for j := range xs {
			xs[j] += min(max(loss[j+1]-loss[j], 0)/step(j), capC)
		}
	}
	return xs
}

// pairSquares is entry e's sum of squared clamped values about 0 at
// candidate j of spread column col, from its sums of x and x² about the
// candidate's midpoint (Σ(x + mid)² = Σx² + 2·mid·Σx + n·mid²), and its
// non-NULL rows.
func pairSquares(col *column, e []uint64, j int) (float64, uint64) {
	nn := e[col.off]
	cd := col.cands[j]
	w := col.off + 1 + j*col.words()
	sx := float64(int64(e[w])) * cd.h
	sq := float64(int64(e[w+1])) * cd.h2
	return sq + 2*cd.mid*sx + float64(nn)*cd.mid*cd.mid, nn
}
