package dpagg

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/big"
	"slices"

	"github.com/dpsql/dpsql/sqlext/noise"
)

// The aggregates' own Δ0 when max_groups_contributed is chosen privately.
//
// Why. With Δ0 chosen as the (1 − f) quantile of the users' distinct keys
// and each user's Δ0 keys sampled uniformly, the users who write most —
// few, but holding much of the rows — keep a random Δ0 of their many keys
// and so lose most of their rows of the frequent keys. On the demo (20,000
// users, 741k words, ε = 1, δ = 1e-6) COUNT(*) of the 20 most frequent
// words lost a median 26 % of its rows to that bounding alone (Δ0 = 128,
// m = 11): the error was bias, not noise.
//
// What. When Δ0 is left to choose, the aggregates bound each user
// differently from the key selection:
//
//   - key selection keeps the uniform sample of Δ0_s keys it always had
//     (Δ0_s the quantile choice of bounds.go), so which keys are released
//     is unchanged;
//
//   - the aggregates keep each user's Δ0_a keys with the most rows (ties in
//     a random order of the keys drawn once per release), Δ0_a ≤ Δ0_s chosen to minimise the
//     expected error of a key that holds a share 1/TopGroupsKeys of the
//     rows: the rows clipping loses plus TopGroupsKeys times the noise's
//     mean absolute value,
//
//     J(d) = Σ_u min(loss_u(d)/m, B) + K·√(2/π)·κ·√d,
//
//     loss_u(d) the user's rows beyond min(rows, m) on its d keys with the
//     most rows, B = TopGroupsLossCap, K = TopGroupsKeys, κ the aggregates'
//     noise σ per unit of ℓ2 sensitivity (public, from the plan), over the
//     public grid d ∈ {1, 2, 4, …, 1024}; J is computed in integer units
//     of 1/TopGroupsUnits, each gets independent discrete Gaussian noise
//     and d = the argmin (report noisy min).
//
// Privacy. Each user's kept keys are a function of its own rows and own
// randomness, so the coupling argument of the package documentation holds
// for the aggregates as for any per-user bounding: a user moves at most
// Δ0_a keys' totals, by at most U_i each, and the aggregates' noise is
// calibrated to Δ0_a. Selection and aggregates each bound users in their own
// way (each a function of the user's rows) and compose as before; a key is
// still released only if selected. The argmin: one user moves each J(d) by
// at most B (its clipped loss; the noise term is public), so the vector of
// the G = 11 objectives has ℓ2 sensitivity B·√G (TopGroupsUnits·B·√G in
// integer units); discrete Gaussian noise of σ_J = σ_t·B·√(G/S) per
// coordinate is G·B²/(2σ_J²) = S/(2σ_t²)-zCDP (CKS20 Thm 14), exactly the
// cost of S = TopGroupsSlots of the bound tests, and it is counted among
// them (BoundsPlan.Tests). The argmin is post-processing, and so is capping
// it at Δ0_s.
const (
	// TopGroupsSlots is S, the number of test slots the argmin costs.
	TopGroupsSlots = 5
	// TopGroupsLossCap is B, the most one user's clipped loss counts, in
	// units of m rows.
	TopGroupsLossCap = 4
	// TopGroupsKeys is K: the objective is the error of a key holding a
	// share 1/K of all rows.
	TopGroupsKeys = 100
	// TopGroupsUnits is the integer resolution of J (units of m/64 rows).
	TopGroupsUnits = 64
)

// topGroupsGrid is the public grid of the aggregates' Δ0.
var topGroupsGrid = []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// chooseAggregateGroups runs the report-noisy-min of J over topGroupsGrid
// for users whose row counts per key are rows[u] (any order), m the
// chosen max_rows_per_group and kappa the noise σ per unit of ℓ2
// sensitivity. It uses TopGroupsSlots of the tester's slots.
func (t *tester) chooseAggregateGroups(rows [][]uint32, m int, kappa float64, budget bool) (int, error) {
	if t.left < TopGroupsSlots {
		panic("dpagg: more bound tests than planned")
	}
	t.left -= TopGroupsSlots
	g := len(topGroupsGrid)
	// σ_J in integer units: TopGroupsUnits·B·σ_t·√(G/S).
	sigma := TopGroupsUnits * TopGroupsLossCap * t.sigma * math.Sqrt(float64(g)/TopGroupsSlots)
	gau, err := noise.NewGaussian(noise.RoundUp(new(big.Rat).SetFloat64(sigma*sigma), 48))
	if err != nil {
		return 0, err
	}
	obj := topGroupsLoss(rows, m, budget)
	best, bestJ := 0, math.Inf(1)
	for i, d := range topGroupsGrid {
		z, err := gau.Sample(t.rng)
		if err != nil {
			return 0, err
		}
		noiseTerm := TopGroupsKeys * math.Sqrt(2/math.Pi) * kappa * math.Sqrt(float64(d)) * TopGroupsUnits
		j := float64(obj[i]+z) + noiseTerm
		if j < bestJ {
			best, bestJ = i, j
		}
	}
	return topGroupsGrid[best], nil
}

// topGroupsLoss returns, per grid value d, Σ_u min(loss_u(d)/m, B) in
// integer units of 1/TopGroupsUnits (each user's term rounded down, so
// it stays in [0, TopGroupsUnits·B]). Under a row budget (rowbudget.go)
// loss_u(d) is the user's rows beyond min(Σ_k min(rows_k, m), d·m).
func topGroupsLoss(rows [][]uint32, m int, budget bool) []int64 {
	out := make([]int64, len(topGroupsGrid))
	capUnits := int64(TopGroupsUnits * TopGroupsLossCap)
	var sorted []uint32
	for _, r := range rows {
		if budget { // rowbudget.go: d·m rows over all of the user's keys
			var total int64
			for _, c := range r {
				total += int64(c)
			}
			for gi, d := range topGroupsGrid {
				loss := (total - budgetKept(r, d, m)) * TopGroupsUnits / int64(m)
				out[gi] += min(loss, capUnits)
			}
			continue
		}
		sorted = append(sorted[:0], r...)
		slices.SortFunc(sorted, func(a, b uint32) int { return int(b) - int(a) })
		var total, kept int64
		for _, c := range sorted {
			total += int64(c)
		}
		i := 0
		for gi, d := range topGroupsGrid {
			for ; i < d && i < len(sorted); i++ {
				kept += min(int64(sorted[i]), int64(m))
			}
			loss := (total - kept) * TopGroupsUnits / int64(m)
			out[gi] += min(loss, capUnits)
		}
	}
	return out
}

// tieHash is FNV-1a of the release's random seed and the key bytes: a
// uniformly random-looking order of keys, the same for every user of one
// release, so that each user's choice is a function of its own rows and of
// the release's seed only.
func tieHash(seed uint64, key string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(key))
	return h.Sum64()
}

// chooseAggregateGroups sets c.AggregateGroups: Δ0_s itself when the table
// was too small for the searches (c.Fallback), otherwise the noisy argmin
// of J capped at Δ0_s. The rows per key are the pipeline's grouped pairs.
func (p *Pipeline) chooseAggregateGroups(c *Chosen) error {
	if c.Fallback {
		c.AggregateGroups = c.MaxGroupsContributed
		return nil
	}
	rows := make([][]uint32, len(p.lists))
	for u, l := range p.lists {
		r := make([]uint32, 0, len(l)/p.stride)
		for i := 0; i < len(l); i += p.stride {
			r = append(r, uint32(l[i]&0xffffffff))
		}
		rows[u] = r
	}
	d, err := p.tests.chooseAggregateGroups(rows, max(c.MaxRowsPerGroup, p.plan.MaxRowsPerGroup), p.plan.unitKappa(), p.plan.countsOnly())
	if err != nil {
		return err
	}
	c.AggregateGroups = min(d, c.MaxGroupsContributed)
	return nil
}

// unitKappa is the noise σ of the first statistic per unit of its ℓ2
// sensitivity (1/√(2ρ_i) for Gaussian noise), from the plan alone.
func (p *Plan) unitKappa() float64 {
	s := &p.Aggregates[0].Stats[0]
	return s.Scale / (s.Granularity * float64(s.Units) * math.Sqrt(float64(p.statGroups())))
}

// aggregateKeys returns the indexes of the user's entries (list l) that
// the aggregates count: its AggregateGroups keys with the most rows.
// idx is overwritten.
func (p *Pipeline) aggregateKeys(l []uint64, idx []int32) []int32 {
	idx = idx[:0]
	for i := range int32(len(l) / p.stride) {
		idx = append(idx, i)
	}
	if len(idx) <= p.plan.AggregateGroups {
		return idx
	}
	return p.topKeys(l, idx, p.plan.AggregateGroups)
}

// topKeys returns the d entries of idx (indexes into the user's list l) with
// the most rows, ties by the release's keyed hash, in that order.
func (p *Pipeline) topKeys(l []uint64, idx []int32, d int) []int32 {
	p.tieKeys()
	s := p.stride
	es := p.topScratch[:0]
	for _, i := range idx {
		e := l[int(i)*s]
		es = append(es, topEntry{rows: e & 0xffffffff, tie: p.keyTie[e>>32], idx: i})
	}
	p.topScratch = es
	return sortTop(es, d, idx)
}

// tieKeys computes keyTie, the tie hash of every key, once per release.
// bound calls it before its first user whenever the plan has its own
// AggregateGroups (a choice of the plan, itself a DP output or an option),
// not when the first user with more keys than that is met: whether the
// pass over every key's name runs, and when, then does not depend on one
// user's rows.
func (p *Pipeline) tieKeys() {
	if p.keyTie != nil {
		return
	}
	p.keyTie = make([]uint64, len(p.keyNames))
	for k, name := range p.keyNames {
		p.keyTie[k] = tieHash(p.tieSeed, name)
	}
}
