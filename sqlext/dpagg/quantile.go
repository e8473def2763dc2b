package dpagg

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/dpsql/dpsql/sqlext/explain"
)

// Quantiles (SQL MEDIAN(x) and PERCENTILE_CONT(x, p)), per key or global,
// by the exponential mechanism over a public grid (McSherry & Talwar 2007;
// the rank utility of Smith 2011 on a finite grid, as in Gillenwater,
// Joseph & Kulesza 2021), with exact sampling.
//
// Grid. The candidates are the G+1 = 2^16+1 points c_j = lower + j·s,
// s = (upper − lower)/G, j = 0 … G: a function of the clamping bounds only
// (given, or chosen privately by bounds.go, a DP output). Every value is
// clamped to [lower, upper] and snapped to its nearest candidate index
// (NULL and NaN are skipped), so the data enter only as integers.
//
// Bounding. As every aggregate, a user keeps Δ0 keys (the same sample as
// the others); under a kept key, a user with k > m = max_rows_per_group
// values keeps m of them: its own order statistics at positions
// ⌊(2i+1)·k/(2m)⌋, i < m, a deterministic function of its sorted values
// (so of its own rows only, in any order). Per key, n is the number of kept
// values and, for candidate j, lo_j = #{kept values < j} and
// hi_j = #{kept values ≤ j}.
//
// Utility. With p = P/Q (p rounded to a multiple of 10^−6, reduced), the
// energy of candidate j is the distance of the target rank p·n from the
// ranks c_j may take, in units of 1/Q:
//
//	e_j = max(0, P·n − Q·hi_j, Q·lo_j − P·n)     (an integer ≥ 0)
//
// Since hi_j = lo_{j+1}, the intervals [lo_j, hi_j] cover [0, n], so
// min_j e_j = 0 (some candidate always has the target rank: ties and data
// between two grid points do not push the output away from the data, as
// the plain rank utility would). Sensitivity: a user adds k ≤ m values to a
// key, a of them below j and b ≤ k at or below; P·n − Q·hi_j moves by
// P·k − Q·b ∈ [−(Q−P)·k, P·k] and Q·lo_j − P·n by Q·a − P·k ∈ [−P·k,
// (Q−P)·k], so e_j moves by at most Δu = m·max(P, Q − P) for every j
// (TestQuantileNeighbourSensitivity).
//
// Mechanism. For a released key, candidate j is drawn with probability
//
//	P(j) ∝ exp(−λ·e_j),   λ = ε_q/(2·Δu)
//
// which is ε_q-DP and ε_q-bounded-range (Durfee & Rogers 2019), hence
// ε_q²/8-zCDP (Cesar & Rogers 2021: ε-bounded-range implies ε²/8-zCDP). A user changes at most Δ0
// keys' mechanisms, independent given the bounded data, so the aggregate
// costs Δ0·ε_q (pure) or Δ0·ε_q²/8 (zCDP). Budget: the aggregate's share
// of the aggregates' budget, as any statistic: ε_q = ε_i/Δ0 with Laplace
// aggregates, ε_q = √(8ρ_i/Δ0) with Gaussian ones; λ is rounded down to a
// dyadic rational (so the cost is at most the share, recomputed exactly).
// A key absent from the data has n = 0 and every e_j = 0: a uniform
// candidate, which is what the coupling of the package documentation
// needs (the mechanism runs on every key of the universe; only selected
// keys are shown).
//
// Exact sampling with data-independent work (quantilesampler.go): an
// envelope over the whole grid computed in a fixed number of iterations,
// then a fixed number of rejection tries, each a fixed number of draws and
// an exact comparison with rigorous bounds of exp(−λ·e_j). The accepted j
// has exactly the distribution above; no floating-point operation takes
// part in a decision without a proven error bound; the output c_j is one
// of the G+1 data-independent floats (no Mironov-style gaps). The work —
// draws, loop iterations, big-float operations — is a function of G, λ and
// the level only, except on an event of probability below 2^−94 per key.
//
// Accuracy. By the exponential mechanism's utility theorem, with
// probability 0.95 the released candidate's rank is within
// T·ln(20·(G+1)) of p·n, T = 1/(λ·Q) = 2·m·max(p, 1 − p)/ε_q ranks
// (Plan: RankError95), plus the grid's resolution s/2 in value units.

// Quantile is PERCENTILE_CONT(x, p) and MEDIAN(x) (p = ½) of values
// clamped to [Lower, Upper]; the level p is Aggregate.Quantile.
const Quantile Kind = "quantile"

// QuantileGridBits fixes the grid: 2^16 intervals of [lower, upper], so
// 65,537 candidates, as the 65,536 leaves of Google's bounded quantiles.
const QuantileGridBits = 16

// quantileDenominator is the resolution of the level p: it is rounded to
// a multiple of 10^−6.
const quantileDenominator = 1_000_000

// quantileNoise is the calibrated exponential mechanism of one quantile.
type quantileNoise struct {
	p, q    int64    // the level P/Q, reduced
	cands   uint64   // G+1 candidates (quantileCandidates; smaller in tests)
	lamNum  *big.Int // λ = lamNum / lamDen per unit of energy; lamDen = 2^lamBits
	lamBits uint     // (tests may set another lamDen and leave lamBits 0)
	lamDen  *big.Int
}

// quantileLevel returns p ∈ [0, 1] as P/Q in lowest terms, rounded to a
// multiple of 10^−6.
func quantileLevel(p float64) (int64, int64) {
	n := int64(math.Round(p * quantileDenominator))
	d := int64(quantileDenominator)
	g := new(big.Int).GCD(nil, nil, big.NewInt(n), big.NewInt(d)).Int64()
	if g == 0 {
		return 0, 1
	}
	return n / g, d / g
}

// quantileRows is the values one user keeps under one key for a quantile:
// max_rows_per_group when given or in a global release, and 1 when it is
// chosen privately for a release per key. The private choice fits the
// counts (m covering 97 % of the users' rows), while the temperature grows
// with m: on keys of a few hundred users one value per user (its own
// median, by the thinning above) is far better, and on one global key of
// thousands of users the chosen m is (TestCorpusQuantileAccuracy, medians
// per first word of git_python_ecosystem: median relative error 0.45 with
// one value per user against 1.46 with the chosen m = 23; global 0.087
// with the chosen m = 64 against 0.415 with one value per user, the
// median of the users' medians).
func quantileRows(o Options, auto *BoundsPlan) int {
	if auto != nil && auto.Rows && !o.Global {
		return 1
	}
	return o.MaxRowsPerGroup
}

// valueTruncate is the share of users the private choice of an
// aggregate's clamping bound may truncate: BoundsTruncate, and for a
// quantile at level p the larger min(p, 1 − p)/2 — clamping the largest
// values does not move a quantile below them, while every grid point of
// [lower, upper] above the data draws probability as a bad candidate, so a
// bound near the data is what makes the quantile accurate. The tests keep
// their sensitivity max(f, 1 − f) ≤ 1 (bounds.go).
func valueTruncate(a Aggregate) float64 {
	if a.Kind != Quantile {
		return BoundsTruncate
	}
	return max(BoundsTruncate, min(a.Quantile, 1-a.Quantile)/2)
}

// quantileStats is the one "rank" statistic of a quantile at level p with
// m values per user and key and weight w: its sensitivity Units is Δu in
// units of 1/Q of a rank (Granularity 1/Q).
func quantileStats(m, p, w float64) []StatPlan {
	P, Q := quantileLevel(p)
	u := int64(m) * max(P, Q-P)
	return []StatPlan{{Name: "rank", Contribution: float64(u) / float64(Q), Granularity: 1 / float64(Q), Units: u, weight: w}}
}

// floorDyadic returns the largest a/2^k ≤ x (x > 0) with a < 2^41, as (a, k).
func floorDyadic(x *big.Rat) (*big.Int, uint, error) {
	if x.Sign() <= 0 {
		return nil, 0, errors.New("non-positive exponential-mechanism parameter")
	}
	for k := uint(0); k < 4096; k++ {
		v := new(big.Int).Lsh(x.Num(), k)
		v.Quo(v, x.Denom())
		if v.BitLen() >= 41 {
			return v, k, nil
		}
	}
	return nil, 0, errors.New("exponential-mechanism parameter too small")
}

// setLambda fixes λ ≤ lam (rounded down) and the statistic's display
// fields; it returns the exact ε_q of one key's mechanism, 2·Δu·λ.
func (s *StatPlan) setLambda(lam *big.Rat, level float64) (*big.Rat, error) {
	num, k, err := floorDyadic(lam)
	if err != nil {
		return nil, fmt.Errorf("aggregate %s: %w (raise epsilon)", s.kind, err)
	}
	P, Q := quantileLevel(level)
	den := new(big.Int).Lsh(big.NewInt(1), k)
	s.quant = &quantileNoise{p: P, q: Q, cands: uint64(quantileCandidates()), lamNum: num, lamBits: k, lamDen: den}
	l := new(big.Rat).SetFrac(num, den)
	lf, _ := l.Float64()
	// T = 1/(λ·Q) ranks; Scale/Granularity = 1/λ units of energy.
	s.Scale = 1 / (lf * float64(Q))
	s.RankError95 = s.Scale * math.Log(20*float64(quantileCandidates()))
	return new(big.Rat).Mul(l, new(big.Rat).SetInt64(2*s.Units)), nil
}

// quantileCandidates is G+1.
func quantileCandidates() int { return 1<<QuantileGridBits + 1 }

// calibrateQuantileLaplace gives a quantile its pure share ε_i: each of
// the Δ0 keys a user touches gets ε_q = ε_i/Δ0.
func (s *StatPlan) calibrateQuantileLaplace(d0 int, epsI *big.Rat, level float64) error {
	lam := new(big.Rat).Quo(epsI, new(big.Rat).SetInt64(2*int64(d0)*s.Units))
	epsQ, err := s.setLambda(lam, level)
	if err != nil {
		return err
	}
	s.Epsilon = ratFloorFloat(new(big.Rat).Mul(epsQ, new(big.Rat).SetInt64(int64(d0))))
	return nil
}

// calibrateQuantileRho gives a quantile its zCDP share ρ_i: ε_q =
// √(8ρ_i/Δ0), so that Δ0·ε_q²/8 ≤ ρ_i; it returns the exact ρ used.
func (s *StatPlan) calibrateQuantileRho(d0 int, rhoI float64, level float64) (*big.Rat, error) {
	epsQ := math.Sqrt(8*rhoI/float64(d0)) * (1 - 1e-9)
	lam := new(big.Rat).Quo(exactRat(epsQ), new(big.Rat).SetInt64(2*s.Units))
	for range 64 {
		e, err := s.setLambda(lam, level)
		if err != nil {
			return nil, err
		}
		used := new(big.Rat).Mul(e, e)
		used.Mul(used, big.NewRat(int64(d0), 8))
		if used.Cmp(exactRat(rhoI)) <= 0 {
			s.Rho, _ = used.Float64()
			return used, nil
		}
		lam.Mul(lam, big.NewRat(999, 1000))
	}
	return nil, fmt.Errorf("internal error: the quantile's zCDP exceeds its share %v", rhoI)
}

// quantileCol holds one quantile aggregate's values: every non-NULL
// value's (user, key, grid index) until bounding, then the kept grid
// indexes of each key.
type quantileCol struct {
	recs   []quantileRec
	sorted bool
	perKey [][]uint32
}

type quantileRec struct {
	uk uint64 // user<<32 | key
	j  uint32
}

// quantileIndex snaps x to its nearest grid index in [lower, upper].
func quantileIndex(x, lower, upper float64) uint32 {
	g := float64(int(1) << QuantileGridBits)
	t := (min(max(x, lower), upper) - lower) / (upper - lower) * g
	return uint32(min(max(math.Round(t), 0), g))
}

// quantileValue is candidate j of [lower, upper].
func quantileValue(j int, lower, upper float64) float64 {
	g := int(1) << QuantileGridBits
	if j >= g {
		return upper
	}
	return lower + (upper-lower)*(float64(j)/float64(g))
}

// addQuantile records one value of aggregate i for user u and key k.
func (p *Pipeline) addQuantile(i int, u, k uint32, v Value) {
	if !v.Valid || math.IsNaN(v.Float) {
		return
	}
	if p.quant == nil {
		p.quant = make([]*quantileCol, len(p.cols))
	}
	q := p.quant[i]
	if q == nil {
		q = &quantileCol{}
		p.quant[i] = q
	}
	c := p.cols[i]
	q.recs = append(q.recs, quantileRec{uk: uint64(u)<<32 | uint64(k), j: quantileIndex(v.Float, c.lower, c.upper)})
}

// keepQuantile bounds user u's values of aggregate i under kept key k to
// m (its own order statistics, see above) and adds them to the key's list.
func (p *Pipeline) keepQuantile(i int, u, k uint32, m uint64) {
	if p.quant == nil || p.quant[i] == nil {
		return
	}
	q := p.quant[i]
	if !q.sorted {
		slices.SortFunc(q.recs, func(a, b quantileRec) int {
			if a.uk != b.uk {
				if a.uk < b.uk {
					return -1
				}
				return 1
			}
			return int(a.j) - int(b.j)
		})
		q.sorted = true
		q.perKey = make([][]uint32, len(p.keyNames))
	}
	uk := uint64(u)<<32 | uint64(k)
	lo := sort.Search(len(q.recs), func(x int) bool { return q.recs[x].uk >= uk })
	hi := lo + sort.Search(len(q.recs)-lo, func(x int) bool { return q.recs[lo+x].uk > uk })
	c := uint64(hi - lo)
	if c <= m {
		for _, r := range q.recs[lo:hi] {
			q.perKey[k] = append(q.perKey[k], r.j)
		}
		return
	}
	for t := range m {
		q.perKey[k] = append(q.perKey[k], q.recs[lo+int((2*t+1)*c/(2*m))].j)
	}
}

// releaseQuantile draws aggregate ai's value for key k (k < 0: a key with
// no rows) by the exponential mechanism.
func (p *Pipeline) releaseQuantile(rng *rand.Rand, ai int, k int) (float64, error) {
	var vals []uint32
	if k >= 0 && p.quant != nil && p.quant[ai] != nil && p.quant[ai].perKey != nil {
		vals = p.quant[ai].perKey[k]
		slices.Sort(vals)
	}
	a := &p.plan.Aggregates[ai]
	if p.qbufs == nil {
		p.qbufs = new(samplerBufs)
	}
	j, err := a.Stats[0].quant.sampleWith(rng, vals, p.qbufs, nil)
	if err != nil {
		return 0, err
	}
	return quantileValue(j, a.Lower, a.Upper), nil
}

// energy is e_j for the sorted kept indexes vals.
func (q *quantileNoise) energy(vals []uint32, j int) (uint64, error) {
	lo := int64(sort.Search(len(vals), func(i int) bool { return int(vals[i]) >= j }))
	hi := lo + int64(sort.Search(len(vals)-int(lo), func(i int) bool { return int(vals[int(lo)+i]) > j }))
	return q.energyOf(int64(len(vals)), lo, hi)
}

// energyOf is e_j for n values, lo below and hi at or below candidate j.
func (q *quantileNoise) energyOf(n, lo, hi int64) (uint64, error) {
	if n > math.MaxInt64/4/q.q {
		return 0, errors.New("dpagg: too many values under one key for a quantile")
	}
	return uint64(max(0, q.p*n-q.q*hi, q.q*lo-q.p*n)), nil
}

// quantileProbabilities returns the exact release distribution over the
// grid for sorted kept indexes vals (float, for tests and explanations).
func (q *quantileNoise) probabilities(vals []uint32) []float64 {
	lam, _ := new(big.Rat).SetFrac(q.lamNum, q.lamDen).Float64()
	out := make([]float64, q.cands)
	var z float64
	for j := range out {
		en, _ := q.energy(vals, j)
		out[j] = math.Exp(-lam * float64(en))
		z += out[j]
	}
	for j := range out {
		out[j] /= z
	}
	return out
}

// quantileFacts describes a quantile aggregate for DP_EXPLAIN.
func (p *Plan) quantileFacts(pre string, a *AggregatePlan) []explain.Fact {
	s := a.Stats[0]
	facts := []explain.Fact{
		explain.F(pre+"level", a.Quantile, "the quantile released: p = 0.5 is the median (rounded to a multiple of 1e-6)"),
		explain.F(pre+"mechanism", fmt.Sprintf("exponential mechanism over %d grid points of [lower, upper]", quantileCandidates()),
			"one grid point per key, drawn exactly with probability ∝ exp(−|rank − p·n| / temperature); n is the key's count of kept values"),
	}
	if p.Bounds != nil && p.Bounds.Chosen == nil {
		return append(facts, explain.F(pre+"temperature", "depends on the bounds chosen at release time",
			"set dp_max_groups_contributed and dp_max_rows_per_group to see it before the release"))
	}
	budget := fmt.Sprintf("ε %.4g over the keys a user touches", s.Epsilon)
	if s.Rho > 0 {
		budget = fmt.Sprintf("zCDP ρ %.4g over the keys a user touches", s.Rho)
	}
	return append(facts,
		explain.F(pre+"temperature", s.Scale, fmt.Sprintf("in ranks: each rank of distance from p·n divides a candidate's weight by e^(1/temperature) (rank sensitivity %.4g per key, %s)", s.Contribution, budget)),
		explain.F(pre+"rank_error_95", s.RankError95, "95% of released values have a rank within this of p·n among the key's kept values"),
		explain.F(pre+"resolution", (a.Upper-a.Lower)/float64(quantileCandidates()-1), "spacing of the grid, in the value's units"))
}

// quantileLine is Plan.Lines' line for a quantile aggregate.
func (a *AggregatePlan) quantileLine(name string) string {
	s := a.Stats[0]
	return fmt.Sprintf("%s p=%g: share %.3g, exponential mechanism over %d grid points, rank sensitivity %.4g, temperature %.4g ranks, 95%% rank error ±%.4g",
		name, a.Quantile, a.Share, quantileCandidates(), s.Contribution, s.Scale, s.RankError95)
}
