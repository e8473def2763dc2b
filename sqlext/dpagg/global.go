package dpagg

import (
	"context"
	"errors"
	"math/big"
	"math/rand/v2"
)

// Global aggregates: SQL without GROUP BY (SELECT COUNT(*), SUM(x) FROM t
// [WHERE …]) releases exactly one row, whose key is the empty key every
// input row has. The key set {∅} is public — it does not depend on the
// data, and the row is released even over an empty table — so there is
// nothing to select and no threshold: the aggregates get the whole budget
// (ε_a = ε, δ_a = δ; a Laplace release uses no δ at all).
//
// Sensitivity. Each user has at most one key, so Δ0 = 1: a user moves each
// statistic's single total by at most its per-key bound U_i (m for counts,
// 1 for COUNT(DISTINCT unit), ⌈m·max(|lower|, |upper|)/g⌉ for SUM, and so
// on, exactly as per key). The noise of statistic i is calibrated to ℓ1 =
// ℓ2 = U_i; the proof of the package documentation then applies with the
// selection step removed: the released row is A = (T_i + Z_i)_i, a
// Laplace or Gaussian mechanism of that sensitivity, (ε, δ)-DP by the same
// composition over the statistics (TestGlobalNeighbourSensitivity).

// calibrateGlobal is Calibrate's budget split for a global release, and for
// a release over public keys (publickeys.go): all of (ε, δ) to the
// aggregates, no key selection; the noise is calibrated to the plan's Δ0 (1
// for a global release).
func (p *Plan) calibrateGlobal(o Options, stats []*StatPlan, totalW *big.Rat) (*Plan, error) {
	if len(stats) == 0 {
		if p.PublicKeys {
			return nil, errors.New("a GROUP BY over public keys needs at least one aggregate")
		}
		return nil, errors.New("a release without GROUP BY needs at least one aggregate")
	}
	epsAgg, deltaAgg := exactRat(o.Epsilon), exactRat(o.Delta)
	if p.Noise == NoiseAuto {
		p.Noise = autoNoise(stats, totalW, float64(p.MaxGroupsContributed), o.Epsilon, o.Delta)
	}
	if p.Noise == Laplace {
		deltaAgg = new(big.Rat)
	}
	p.AggregatesEpsilon = ratFloorFloat(epsAgg)
	p.AggregatesDelta = ratFloorFloat(deltaAgg)
	if err := p.calibrateNoise(o, stats, totalW, epsAgg, exactRat(o.Delta)); err != nil {
		return nil, err
	}
	return p, nil
}

// releaseGlobal is ReleaseContext for a global release: every user's single
// pair is kept, and the one row is released with noise, present or not in
// the data.
func (p *Pipeline) releaseGlobal(ctx context.Context, rng *rand.Rand) (*Result, error) {
	tot := p.bound(func(_ uint32, idx []int32) []int32 { return idx }, func(uint32, uint32) {})
	p.tot = tot
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &Result{Chosen: p.chosen}
	res.Stats.Occurrences = p.rows
	res.Stats.Users = len(p.userNames)
	res.Stats.DistinctItems = len(p.keyNames)
	res.Stats.Pairs = p.pairs
	k, present := p.keyIdx[""]
	row, err := p.noisyRow(rng, tot, k, present) // publickeys.go
	if err != nil {
		return nil, err
	}
	res.Rows = []Row{row}
	return res, nil
}
