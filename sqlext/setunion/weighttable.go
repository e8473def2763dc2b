package setunion

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
