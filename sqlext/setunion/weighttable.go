package setunion

import "math"

// weightTableMax caps the weight table of a histogram: users with more
// items after bounding (a Δ0 above it) compute their weight as before.
const weightTableMax = 1024

// weightTable returns t with t[n] = additiveWeight(m, n) for 0 < n ≤
// min(bound, weightTableMax), for the additive rule m of a histogram that
// bounds every user to bound items: the weighted Gaussian rules' 1/√n
// (a square root and a division) looked up once per user instead of
// computed. The values are additiveWeight's own, so the histogram is the
// same bit for bit. Its size is a function of bound (an option or a DP
// output) and a constant, never of the data. It returns nil when m is not
// additive or not bounded, or bound < 1.
func weightTable(m Mechanism, bound int) []float64 {
	if !m.additive() || !m.Bounded() || bound < 1 {
		return nil
	}
	t := make([]float64, min(bound, weightTableMax)+1)
	for n := 1; n < len(t); n++ {
		t[n] = additiveWeight(m, n)
	}
	return t
}

// weightFrom returns additiveWeight(m, n) for n > 0, from t when it holds
// n.
func weightFrom(t []float64, m Mechanism, n int) float64 {
	if n < len(t) {
		return t[n]
	}
	return additiveWeight(m, n)
}

// additive reports whether m's update adds the same weight, additiveWeight,
// to each of a user's items.
func (m Mechanism) additive() bool {
	switch m {
	case CountLaplace, CountGaussian, SingleItem, WeightedLaplace, WeightedGaussian, DPSIPS:
		return true
	}
	return false
}

// additiveWeight is the weight an additive rule m adds to each item of a
// user with n > 0 items: 1/n for weighted_laplace (ℓ1 norm 1), 1/√n for the
// Gaussian weighted rules (ℓ2 norm 1), 1 for the counts and single_item.
func additiveWeight(m Mechanism, n int) float64 {
	switch m {
	case WeightedLaplace:
		return 1 / float64(n)
	case WeightedGaussian, DPSIPS:
		return 1 / math.Sqrt(float64(n))
	}
	return 1
}
