package dpagg

import "math"

// Intervals of the released values (DP_INTERVAL_LOW / DP_INTERVAL_HIGH).
//
// Each released value comes with a 95 % interval computed from the noisy
// statistics of its row and from the plan's noise calibration only: the
// half-width w_i(level) of statistic i is the smallest integer with
// P(|Z_i| ≤ w) ≥ level for its exact discrete Laplace or Gaussian noise Z_i
// (noise.Laplace.HalfWidth, noise.Gaussian.HalfWidth), a function of
// the public scale alone, never of the data. The interval is therefore
// post-processing of the release: it costs nothing and reveals nothing
// beyond the noisy statistics (which it exposes unclamped: a count's
// interval is built on T + Z even where the released count was clamped to
// 0).
//
//   - COUNT(*), COUNT(col), COUNT(DISTINCT unit), SUM: [v − w, v + w] with
//     v = T + Z the noisy total at level 95 %, intersected with the
//     values the statistic can take (≥ 0 for counts and for sums with
//     lower ≥ 0, ≤ 0 for sums with upper ≤ 0). It covers the noiseless
//     bounded total T whenever |Z| ≤ w: with probability ≥ 95 %, and equal
//     to 95 % up to the discreteness of Z (TestIntervalCoverage).
//   - AVG: the count's and the centred sum's intervals at level 97.5 %
//     each, and the range of mid + s/n over that box (n ≥ 1), clamped to
//     [lower, upper]: it covers the noiseless mean of the bounded rows with
//     probability ≥ 95 % by the union bound (conservative).
//   - The variances and standard deviations, and any kind without an
//     interval rule: NaN (NULL in SQL).
//
// The intervals cover the noiseless value of the bounded data (after
// max_groups_contributed, max_rows_per_group and clamping), not the raw
// truth: the bias of contribution bounding is not in them.

// intervalLevel is the confidence level of the released intervals.
const intervalLevel = 0.95

// halfWidth returns w(level) of the statistic's noise in units of its
// granularity, computed once per level and plan (it sums the pmf).
func (s *StatPlan) halfWidth(level float64) int64 {
	if w, ok := s.halfWidths[level]; ok {
		return w
	}
	var w int64
	if s.lap != nil {
		w = s.lap.HalfWidth(level)
	} else if s.gau != nil {
		w = s.gau.HalfWidth(level)
	}
	if s.halfWidths == nil {
		s.halfWidths = map[float64]int64{}
	}
	s.halfWidths[level] = w
	return w
}

// interval returns the 95 % interval of the aggregate's released value
// from its noisy statistics (NaN, NaN when the kind has none).
func (a *AggregatePlan) interval(noisy []int64) (lo, hi float64) {
	switch a.Kind {
	case CountRows, CountValues, CountUnits:
		w := float64(a.Stats[0].halfWidth(intervalLevel))
		v := float64(noisy[0])
		return max(v-w, 0), max(v+w, 0)
	case Sum:
		s := &a.Stats[0]
		w := float64(s.halfWidth(intervalLevel))
		lo, hi = (float64(noisy[0])-w)*s.Granularity, (float64(noisy[0])+w)*s.Granularity
		if a.Lower >= 0 {
			lo, hi = max(lo, 0), max(hi, 0)
		} else if a.Upper <= 0 {
			lo, hi = min(lo, 0), min(hi, 0)
		}
		return lo, hi
	case Avg:
		return a.avgInterval(noisy)
	}
	return math.NaN(), math.NaN()
}

// avgInterval is AVG's interval: the range of mid + s/n over the box of
// the count's and the sum's 97.5 % intervals (n ≥ 1), clamped.
func (a *AggregatePlan) avgInterval(noisy []int64) (lo, hi float64) {
	level := 1 - (1-intervalLevel)/2
	cs, ss := &a.Stats[0], &a.Stats[1]
	wn, ws := float64(cs.halfWidth(level)), float64(ss.halfWidth(level))
	nLo, nHi := max(float64(noisy[0])-wn, 1), float64(noisy[0])+wn
	sLo, sHi := (float64(noisy[1])-ws)*ss.Granularity, (float64(noisy[1])+ws)*ss.Granularity
	if nHi < 1 {
		return a.Lower, a.Upper
	}
	mid := a.Lower + (a.Upper-a.Lower)/2
	// s/n is increasing in s, and monotone in n for a fixed s: the extremes
	// are at the corners.
	lo = mid + min(sLo/nLo, sLo/nHi)
	hi = mid + max(sHi/nLo, sHi/nHi)
	return min(max(lo, a.Lower), a.Upper), min(max(hi, a.Lower), a.Upper)
}

// newRow returns a row for key with room for n aggregates.
func newRow(key string, n int) Row {
	return Row{Key: key, Values: make([]float64, n), Low: make([]float64, n), High: make([]float64, n)}
}
