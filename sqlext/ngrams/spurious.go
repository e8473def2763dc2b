package ngrams

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Spurious k-grams (docs/privacy.md §8). Every k-gram of V_k outside supp(H_k)
// has weight 0 and crosses the threshold with probability p = Φ(−ρ_k/σ_k),
// independently of the others. The specification phrases it as
// B_k ~ Binomial(|V_k| − |supp H_k|, p) followed by a uniform B_k-subset of
// V_k \ supp(H_k); here the same law is drawn directly as independent
// Bernoulli(p) trials over the ranks 0..N−1 of V_k \ supp(H_k)
// (N = |V_k| − |supp H_k|): the number of successes is Binomial(N, p) and,
// given their number, their set is uniform. Small N runs the trials one by
// one with the exact Bernoulli sampler; large N jumps from success to success
// with geometric gaps (sampled bit by bit, below), so the cost is O(B_k), not
// O(N), and no k-gram of V_k is materialised.
//
// Why not a binomial sampler: gonum's evaluates log C(N, b) as a difference
// of log-gamma values of size N·ln N, whose rounding error grows with N
// (about 5e-9 at N = 3e6, 1e-6 at 1e9, 3e-3 at 1e12); a total-variation error
// τ in the mechanism's output law adds up to (1 + e^ε)·τ to δ. The draws here
// have an error of the order of 1e-16 per spurious k-gram whatever N is.

// directTrials is the largest N for which the trials run one by one.
const directTrials = 1 << 12

// maxRankBits bounds the ranks: N ≤ 2^53 (maxValid).
const maxRankBits = 54

// zeroWeightReleases returns, in increasing order, the ranks r < n that are
// released when each is released independently with probability p.
func zeroWeightReleases(rng *rand.Rand, n uint64, p float64) []uint64 {
	var out []uint64
	switch {
	case n == 0 || !(p > 0):
		return nil
	case p >= 1:
		out = make([]uint64, n)
		for i := range out {
			out[i] = uint64(i)
		}
		return out
	case n <= directTrials:
		for r := range n {
			if securerand.Bernoulli(rng, p) {
				out = append(out, r)
			}
		}
		return out
	}
	g := newGeometric(p)
	next := uint64(0) // the first rank not yet decided
	for {
		gap, ok := g.draw(rng)
		if !ok || gap >= n-next {
			return out
		}
		next += gap
		out = append(out, next)
		next++
		if next >= n {
			return out
		}
	}
}

// geometric samples G, the number of failures before the first success in
// Bernoulli(p) trials: P(G ≥ g) = q^g with q = 1 − p. It uses that the
// binary digits of G are independent: P(G = Σ_j 2^j·b_j) = p·Π_j (q^(2^j))^(b_j)
// factorises, so bit j is 1 with probability r_j/(1 + r_j), r_j = q^(2^j), and
// G ≥ 2^m (some bit ≥ m set) has probability r_m. Each bit is an exact
// Bernoulli draw of a probability computed to within a few ulps, so the law
// of G is correct to about 1e-16 in total variation, for every p.
type geometric struct {
	high float64              // r_m for m = maxRankBits: P(G ≥ 2^m)
	bit  [maxRankBits]float64 // P(bit j = 1)
}

func newGeometric(p float64) *geometric {
	lq := math.Log1p(-p) // log q < 0
	g := &geometric{high: math.Exp(math.Ldexp(lq, maxRankBits))}
	for j := range g.bit {
		r := math.Exp(math.Ldexp(lq, j))
		g.bit[j] = r / (1 + r)
	}
	return g
}

// draw returns G, or ok = false if G ≥ 2^maxRankBits (beyond every rank).
func (g *geometric) draw(rng *rand.Rand) (v uint64, ok bool) {
	if securerand.Bernoulli(rng, g.high) {
		return 0, false
	}
	for j, pb := range g.bit {
		if securerand.Bernoulli(rng, pb) {
			v |= 1 << j
		}
	}
	return v, true
}

// unrank returns the r-th (0-based) integer of [0, ∞) that is not in the
// sorted, duplicate-free list excluded. Since excluded[i] − i counts the
// integers below excluded[i] that are not excluded, the answer is r + j with
// j the number of i such that excluded[i] − i ≤ r.
func unrank(excluded []uint64, r uint64) uint64 {
	j := sort.Search(len(excluded), func(i int) bool { return excluded[i]-uint64(i) > r })
	return r + uint64(j)
}

// sampleSpurious draws the spurious k-grams of a level: supp holds the V_k
// indices of supp(H_k), sorted and distinct; each of the other size −
// len(supp) indices is drawn independently with probability p. It returns the
// drawn indices of V_k.
func sampleSpurious(rng *rand.Rand, size uint64, supp []uint64, p float64) []uint64 {
	idx := zeroWeightReleases(rng, size-uint64(len(supp)), p)
	for i, r := range idx {
		idx[i] = unrank(supp, r)
	}
	return idx
}
