package dpagg

import "math"

// RoundQuantileLevel returns the level p ∈ [0, 1] as the quantile
// mechanism releases it: the nearest multiple of 10^−6 (quantileLevel).
// Callers that store the level in Options round it first, so that levels
// that make one release (0.5 and 0.5000001) are one option everywhere —
// in the bounds chosen privately, in DP_EXPLAIN, in the reuse key.
func RoundQuantileLevel(p float64) float64 {
	return math.Round(p*quantileDenominator) / quantileDenominator
}
