package dpagg

import "math"

// Variances and standard deviations (SQL VARIANCE/VAR_POP, VAR_SAMP,
// STDDEV/STDDEV_POP, STDDEV_SAMP), per key or global, in the manner of
// Google's dpagg.BoundedVariance: values are clamped to [lower, upper] and
// centred on the midpoint mid, x = clamp(v) − mid ∈ [−b, b] with
// b = (upper − lower)/2, and three statistics are released with noise:
//
//	N   the count                       contribution ≤ m            (units 1)
//	S1  Σ x   (normalized_sum)          contribution ≤ m·b
//	S2  Σ x²  (normalized_sum_of_squares) contribution ≤ m·b²
//
// each computed per (user, key) pair exactly as AVG's sum (rows summed
// exactly on a row grid — h for x, h2 for x² with b²/h2 ∈ (2^29, 2^30] —
// m times the mean beyond m rows, rounded to the statistic's granularity
// and clamped to ±Units). A user changes each statistic on at most Δ0 keys
// by at most its Units, so the sensitivity argument of the package
// documentation applies to each of the three, and they share the
// aggregate's budget in thirds (TestSpreadNeighbourSensitivity). The
// released value is post-processing of the noisy (N, S1, S2):
//
//	n = max(N, 1), mean = clamp(S1/n, −b, b), ex2 = clamp(S2/n, 0, b²)
//	var_pop = clamp(ex2 − mean², 0, b²), var_samp = var_pop·n/(n − 1) (n ≥ 2)
//	stddev_* = √var_*
//
// No noise value is a float: the three totals get integer noise.

// The spread aggregates.
const (
	// VarPop is VAR_POP(x) (and VARIANCE(x)) of values clamped to [Lower, Upper].
	VarPop Kind = "var_pop"
	// VarSamp is VAR_SAMP(x).
	VarSamp Kind = "var_samp"
	// StdDevPop is STDDEV_POP(x) (and STD, STDDEV).
	StdDevPop Kind = "stddev_pop"
	// StdDevSamp is STDDEV_SAMP(x).
	StdDevSamp Kind = "stddev_samp"
)

// spread reports whether k is a variance or a standard deviation.
func (k Kind) spread() bool {
	return k == VarPop || k == VarSamp || k == StdDevPop || k == StdDevSamp
}

// spreadStats are the three statistics of a spread aggregate with
// per-row bound b (half the clamping range) and weight w.
func spreadStats(m, b, w float64) []StatPlan {
	return []StatPlan{
		countStat(m, w/3),
		sumStat("normalized_sum", m*b, b, w/3),
		sumStat("normalized_sum_of_squares", m*b*b, b*b, w/3),
	}
}

// spreadValue turns the noisy (N, S1, S2), in units of their
// granularities, into the released variance or standard deviation.
func (a *AggregatePlan) spreadValue(noisy []int64) float64 {
	b := (a.Upper - a.Lower) / 2
	n := max(float64(noisy[0]), 1)
	mean := min(max(float64(noisy[1])*a.Stats[1].Granularity/n, -b), b)
	ex2 := min(max(float64(noisy[2])*a.Stats[2].Granularity/n, 0), b*b)
	v := min(max(ex2-mean*mean, 0), b*b)
	if (a.Kind == VarSamp || a.Kind == StdDevSamp) && n >= 2 {
		v *= n / (n - 1)
	}
	if a.Kind == StdDevPop || a.Kind == StdDevSamp {
		return math.Sqrt(v)
	}
	return v
}
