package setunion

import (
	"math"

	"github.com/dpsql/dpsql/sqlext/noise"
)

// MissProbability returns the probability that a key is not released when
// its histogram weight is at least w (in every round, for dp_sips), without
// the cancellation of 1 − p (a miss of 1e-40 is not rounded to 0):
//
//	Gaussian   Φ((ρ − min(w, Γ))/σ)
//	dp_sips    Π_r Φ((ρ_r − w)/σ_r)
//	Laplace    1 − ½·e^(−(ρ−w')/λ) for w' = min(w, Γ) ≤ ρ, else ½·e^(−(w'−ρ)/λ)
//	Exact      1 − π(w)
//
// It is an upper bound for a key whose weight is at least w, since every
// release probability is nondecreasing in the weight. For a mechanism with a
// cutoff Γ it never falls below the value at Γ: Φ(−α) for the Gaussian
// policy, whatever the number of users (docs/privacy.md, "GROUP BY key
// selection"). For dp_sips the weight of a key can only grow from round to
// round (a user's weight 1/√|W_r| grows as its other keys are released and
// removed), so w = the first round's weight bounds the miss probability of
// the whole release: the key is missed only if every round misses it, and
// round r, given the rounds before, misses it with probability at most
// Φ((ρ_r − w)/σ_r).
func (c Calibration) MissProbability(w float64) float64 {
	capped := func(gamma float64) float64 {
		if gamma > 0 && w > gamma {
			return gamma
		}
		return w
	}
	if len(c.Rounds) > 0 {
		miss := 1.0
		for _, rd := range c.Rounds {
			miss *= noise.Phi((rd.Rho - capped(rd.Gamma)) / rd.Sigma)
		}
		return miss
	}
	switch c.Noise {
	case Gaussian:
		return noise.Phi((c.Rho - capped(c.Gamma)) / c.Scale)
	case Laplace:
		x := capped(c.Gamma) - c.Rho
		if x >= 0 {
			return 0.5 * math.Exp(-x/c.Scale)
		}
		return 1 - 0.5*math.Exp(x/c.Scale)
	default:
		return 1 - c.ReleaseProbability(w)
	}
}

// MissTarget is the miss probability DP_EXPLAIN reports the users for
// (users_for_miss_1e-9): a key that many users hold is dropped with
// probability at most this.
const MissTarget = 1e-9

// UsersForMiss returns the smallest number of users n, each holding only
// the key (weight n), for which MissProbability(n) ≤ target; ok is false
// when no number of users gets there (a cutoff Γ with Φ(−α) > target).
func (c Calibration) UsersForMiss(target float64) (n int, ok bool) {
	miss := func(n int) float64 { return c.MissProbability(float64(n)) }
	hi := 1
	for miss(hi) > target {
		if hi >= maxUsers {
			return 0, false
		}
		hi *= 2
	}
	lo := hi / 2 // miss(lo) > target, or lo = 0
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if miss(mid) <= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}
