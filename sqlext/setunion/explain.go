package setunion

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/sqlext/explain"
)

// userWeight is the histogram weight one user gives a key in a release (or
// DP-SIPS round) bounded to maxItems keys per user: 1 when the user holds
// only that key (or for the count mechanisms, whose users add 1 to each of
// their keys); with spread, the weight when the user spreads its budget
// evenly over maxItems keys: 1/√Δ0 for the ℓ2 mechanisms, 1/Δ0 for the ℓ1
// ones.
func (c Calibration) userWeight(maxItems int, spread bool) float64 {
	if !spread || maxItems <= 1 {
		return 1
	}
	switch c.Mechanism {
	case CountLaplace, CountGaussian:
		return 1
	case WeightedGaussian, PolicyGaussianL2, DPSIPS:
		return 1 / math.Sqrt(float64(maxItems))
	}
	return 1 / float64(maxItems)
}

// KeyProbability returns the probability that a key held by n users is
// released, each user holding only that key or, with spread, each spreading
// its weight evenly over Δ0 keys (see userWeight). A key's weight is capped
// at the cutoff Γ of the mechanisms that have one. For DP-SIPS it is
// 1 − Π_r (1 − Φ((min(n·w_r, Γ_r) − ρ_r)/σ_r)): the key is released in the
// first round it passes, each round with independent noise, and its users
// weigh on it in every round until then. For single_item it is the exact
// π(n).
func (c Calibration) KeyProbability(n int, spread bool) float64 {
	if n <= 0 {
		return 0
	}
	if c.Mechanism == SingleItem {
		return c.ReleaseProbability(float64(n))
	}
	capped := func(w, gamma float64) float64 {
		if gamma > 0 && w > gamma {
			return gamma
		}
		return w
	}
	if len(c.Rounds) > 0 {
		miss := 1.0
		for r, rd := range c.Rounds {
			w := capped(float64(n)*c.userWeight(rd.MaxItems, spread), rd.Gamma)
			miss *= 1 - c.RoundProbability(r, w)
		}
		return 1 - miss
	}
	return c.ReleaseProbability(capped(float64(n)*c.userWeight(c.MaxItems, spread), c.Gamma))
}

// maxUsers bounds the search of UsersNeeded.
const maxUsers = 1 << 40

// UsersNeeded returns the smallest number of users n for which a key is
// released with probability at least p (KeyProbability(n, spread) ≥ p);
// ok is false when no number of users reaches p (a cutoff Γ too close to
// the threshold ρ).
func (c Calibration) UsersNeeded(p float64, spread bool) (n int, ok bool) {
	hi := 1
	for c.KeyProbability(hi, spread) < p {
		if hi >= maxUsers {
			return 0, false
		}
		hi *= 2
	}
	lo := hi / 2 // KeyProbability(lo) < p, or lo = 0
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if c.KeyProbability(mid, spread) >= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// Facts describes the calibration for people: the mechanism and its
// parameters, and how many users a key needs to be released with
// probability ½ and 0.95.
func (c Calibration) Facts() []explain.Fact {
	facts := []explain.Fact{
		explain.F("mechanism", string(c.Mechanism), "the DP set-union mechanism that selects the released keys"),
		explain.F("epsilon", c.Epsilon, "ε of the key selection"),
		explain.F("delta", c.Delta, "δ of the key selection: roughly the chance that a key only one user holds is released"),
	}
	d0 := fmt.Sprint(c.MaxItems)
	d0Meaning := "Δ0: each user contributes at most this many distinct keys (chosen uniformly at random per user)"
	if c.Auto != nil {
		d0 = fmt.Sprintf("auto (at most %d)", c.Auto.Cap)
		d0Meaning = fmt.Sprintf("Δ0 is chosen privately from the data (%.0f%% of the budget) so that about %.0f%% of users hold more distinct keys; the figures below use the cap %d, the most conservative", c.Auto.Share*100, c.Auto.Truncate*100, c.Auto.Cap)
	}
	facts = append(facts, explain.F("max_items", d0, d0Meaning))
	switch {
	case c.Mechanism == SingleItem:
		facts = append(facts, explain.F("noise", "exact", "each user contributes one key; a key with n users is released with the exact probability π(n)"))
	case len(c.Rounds) > 0:
		facts = append(facts,
			explain.F("noise", string(c.Noise), "noise added to each key's weight"),
			explain.F("noise_scale", c.Scale, "σ* of all rounds together (each round's σ_r = σ*/√f_r)"),
			explain.F("rounds", len(c.Rounds), "DP-SIPS rounds; a key is released in the first round its noisy weight passes that round's threshold"))
		for r, rd := range c.Rounds {
			facts = append(facts, explain.F(fmt.Sprintf("round_%d", r+1),
				fmt.Sprintf("f=%.3g σ=%.4g ρ=%.4g Δ0=%d %s", rd.Fraction, rd.Sigma, rd.Rho, rd.MaxItems, rd.Rule),
				"the round's budget share f, noise σ, threshold ρ, bound Δ0 and update rule"))
		}
	default:
		facts = append(facts,
			explain.F("noise", string(c.Noise), "noise added to each key's weight"),
			explain.F("noise_scale", c.Scale, scaleMeaning(c.Noise)),
			explain.F("threshold", c.Rho, "ρ: a key is released when its weight plus noise exceeds this"))
		if c.Gamma > 0 {
			facts = append(facts, explain.F("cutoff", c.Gamma, "Γ: no key's weight is raised above this (users spend their weight on keys below it)"))
		}
	}
	if n, ok := c.UsersForMiss(MissTarget); ok {
		facts = append(facts, explain.F("users_for_miss_1e-9", n, "a key held by this many users, each holding only this key, is dropped with probability at most 1e-9 (more users: less)"))
	} else {
		facts = append(facts, explain.F("users_for_miss_1e-9", "never", "the cutoff Γ caps a key's weight, so even a key that every user holds is dropped with probability Φ(−α) > 1e-9, however many users hold it"))
	}
	if c.ThresholdDelta > 0 {
		facts = append(facts, explain.F("threshold_delta", c.ThresholdDelta, "δ_T: the share of δ paid for by the threshold"))
	}
	for _, q := range []struct {
		p      float64
		spread bool
		name   string
	}{
		{0.5, false, "users_for_50pct"}, {0.95, false, "users_for_95pct"},
		{0.5, true, "users_for_50pct_spread"}, {0.95, true, "users_for_95pct_spread"},
	} {
		if q.spread && (c.Mechanism == SingleItem || c.userWeight(2, true) == 1) {
			continue // the same as without spread
		}
		who := "users, each holding only this key"
		if q.spread {
			who = fmt.Sprintf("users, each holding %d keys", c.MaxItems)
			if len(c.Rounds) > 0 {
				who = "users, each holding Δ0 keys (per round)"
			}
		}
		meaning := fmt.Sprintf("a key held by this many %s is released with probability %g", who, q.p)
		n, ok := c.UsersNeeded(q.p, q.spread)
		if !ok {
			facts = append(facts, explain.F(q.name, "never", fmt.Sprintf("no number of %s reaches probability %g (the cutoff is too close to the threshold)", who, q.p)))
			continue
		}
		facts = append(facts, explain.F(q.name, n, meaning))
	}
	return facts
}

func scaleMeaning(n Noise) string {
	if n == Laplace {
		return "λ of that Laplace noise"
	}
	return "σ of that Gaussian noise"
}
