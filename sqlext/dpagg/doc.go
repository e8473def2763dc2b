// Package dpagg releases noisy aggregates per privately selected key under
// user-level (ε, δ)-differential privacy: the core of
//
//	SELECT k, COUNT(*), COUNT(col), COUNT(DISTINCT privacy_unit), SUM(x), AVG(x), MEDIAN(x)
//	FROM protected GROUP BY k
//
// where neighbouring databases differ in all rows of one user. It is pure Go
// (no SQL engine), modelled on Google DP's dpagg and noise packages, with
// integer noise from exact samplers (package discrete).
//
// # The mechanism
//
// The SQL side feeds (privacy unit, key bytes, one value per aggregate) rows
// to a Pipeline in one pass; Release then
//
//  1. groups rows by user and key (per user and key: rows, non-NULL rows and
//     the exact sum of the clamped values per value aggregate);
//  2. keeps for every user Δ0 = max_groups_contributed of its keys, chosen
//     uniformly without replacement (securerand.SampleInPlace, fresh
//     randomness per user, as setunion.Builder bounds users);
//  3. computes each kept (user, key) pair's contribution to every statistic:
//     COUNT(*) min(rows, m), COUNT(col) min(non-NULL, m), COUNT(DISTINCT
//     unit) 1, SUM the sum of the clamped values if there are at most
//     m = max_rows_per_group of them and otherwise m times their mean, AVG
//     the same for the count and for the values centred on the midpoint of
//     [lower, upper]; sums are rounded to a granularity g and clamped to
//     ±⌈c/g⌉ (below); per-key totals are exact int64 sums of contributions;
//  4. selects keys with setunion on exactly the kept (user, key) pairs, at
//     the selection share (ε_s, δ_s) of the budget: the mechanism a private
//     DISTINCT with max_items = Δ0 and (ε_s, δ_s) runs, with the same
//     bounding (a user already holds ≤ Δ0 keys, so the builder's own
//     sampling keeps them all, and dp_sips, the default, never re-samples
//     between its rounds: selection.go);
//  5. for each selected key, adds independent integer noise to each
//     statistic's total — discrete Laplace (CKS20 Algorithm 2) or discrete
//     Gaussian (Algorithm 3) — and post-processes: counts clamped at 0, sums
//     (total + Z)·g, AVG = mid + g·(noisy centred sum)/max(noisy count, 1)
//     clamped to [lower, upper] (the normalised mean of Google's
//     dpagg.BoundedMean).
//
// Nothing else leaves: keys are sorted, and Result.Stats are operator-only.
// Calibrate (the explain function: options in, Plan out, no data, no budget)
// gives the split, every sensitivity, each statistic's noise scale, its exact
// standard deviation and 95 % half-width, and the selection threshold ρ.
//
// # Budget
//
// Selection gets ε_s = selection_share·ε (default ½) and δ_s (all of δ with
// Laplace aggregates, which need none; selection_delta_share·δ, default ½,
// with Gaussian ones). The aggregates get the exact remainders ε_a = ε − ε_s,
// δ_a = δ − δ_s, split by the aggregates' weights (default equal; AVG's share
// halved between its count and its sum):
//
//	Laplace   statistic i: ε_i = w_i·ε_a, scale b_i = Δ0·U_i/ε_i
//	Gaussian  ρ = the largest zCDP parameter with CKS20 Corollary 13
//	          δ(ρ, ε_a) = inf_{α>1} e^{(α−1)(αρ−ε_a)}/(α−1)·(1−1/α)^α ≤ δ_a;
//	          statistic i: ρ_i = w_i·ρ, σ_i² = Δ0·U_i²/(2ρ_i)
//
// with U_i the statistic's per-key sensitivity in units of its granularity.
// Scales are turned into the samplers' rationals by rounding up, so the noise
// is never smaller than the calibration asks; the Gaussian ρ_i are re-summed
// exactly after rounding. noise=auto picks the family with the smaller total
// variance per unit of contribution, from the options alone.
//
// # Privacy proof sketch
//
// Let D' be D plus all rows of one user u. Write the release as
// R = post(S, A), S the selected keys and A = (T_k + Z_k)_{k∈K} the noisy
// totals of every statistic over the whole (countable) key universe K, keys
// absent from the data having total 0; R only reveals A on S.
//
// Coupling. Each user's contributions and Δ0-sample are functions of its own
// rows and its own randomness. Conditioned on the other users' randomness
// (identically distributed under D and D'), the bounded databases differ by
// u's bounded rows alone: at most Δ0 keys, each statistic's total moving by
// at most U_i on each (TestNeighbourSensitivity checks this on 600 random
// neighbouring pairs, with NULL, NaN, ±Inf and 1e300 values: ℓ1 ≤ Δ0·U_i,
// ℓ2 ≤ √Δ0·U_i, and the selection histogram within its mechanism's
// sensitivity). A guarantee that holds for every value of that randomness
// holds for the mixture.
//
// Selection. On databases whose users hold ≤ Δ0 keys, setunion's mechanism
// is (ε_s, δ_s)-DP (see package setunion); it sees exactly the kept pairs.
// The default, dp_sips, therefore never re-samples a user's keys between
// its rounds, and no key's weight is capped, so a key that many users hold
// is dropped only with a probability that vanishes as they grow
// (selection.go: the design, its proof and the measured cost). On a
// basic-composition ledger (Options.BasicLedger) a release at Δ0 = 1 whose
// parts compose by basic composition takes single_item instead, the
// optimal (ε_s, δ_s)-DP selection of one key per user
// (singleItemSelection; docs/privacy.md §42).
//
// Aggregates. For a statistic i, the vector (T_k)_{k∈K} has ℓ1 sensitivity
// Δ0·U_i and ℓ2 sensitivity √Δ0·U_i in integers. Independent discrete Laplace
// noise of scale b_i ≥ Δ0·U_i/ε_i per coordinate is ε_i-DP (the pmf ratio of
// shifted discrete Laplaces is at most e^{|shift|/b}); discrete Gaussian noise
// of variance parameter σ_i² per coordinate is Δ0·U_i²/(2σ_i²)-zCDP (CKS20
// Theorems 4 and 14), at most ρ_i. Only finitely many coordinates differ, so
// the infinite vector is no obstacle. Summed: Σε_i ≤ ε_a, or Σρ_i ≤ ρ and so
// (ε_a, δ_a)-DP by the conversion above.
//
// Composition. S and A use independent randomness, so (S, A) is
// (ε_s + ε_a, δ_s + δ_a) = (ε, δ)-DP by basic composition, and R, a function
// of (S, A), is too. In particular a key that only u holds is covered without
// any extra term: its A-coordinate is one of the ≤ Δ0 coordinates u moves
// (accounted in ε_a or ρ), and S contains it only as often as the selection's
// (ε_s, δ_s) guarantee allows — the threshold ρ of setunion is what keeps a
// key of one user out except with probability within δ_s. Releasing
// statistics only for selected keys is post-processing.
//
// Floating point. No noise value is a float: Z is an exact integer (package
// discrete samples with integer comparisons only). Totals are exact int64
// sums. A user's contribution may be computed with float operations (clamp,
// centre, the mean when rows exceed m), but from integers that depend only on
// the user's own rows — the rows' clamped values are summed exactly on a row
// grid h (a power of two with rowBound/h ∈ (2^29, 2^30], rowBound the
// largest |value| of one row), so their order does not matter
// (TestOrderIndependence) — and it is rounded to an integer number of g and
// clamped to ±U_i, so the sensitivity holds whatever the rounding did. A
// released sum is (T + Z)·g with g a power of two fixed by the options: the
// set of possible outputs does not depend on the data, which is what
// Mironov's (2012) attack on floating-point Laplace noise exploits; the
// conversion to float64 (exact below 2^53 units), the AVG division and the
// clamps are post-processing.
//
// Cost of the granularity. For a per-key contribution bound c (m for
// counts, where g = 1 and nothing is rounded; m·max(|lower|, |upper|) for
// SUM; m·(upper − lower)/2 for AVG's centred sum) g is the power of two with
// c/g ∈ (2^29, 2^30], coarsened (to no less than c/g ∈ (2^9, 2^10]) only
// when the noise scale would otherwise exceed 2^49 units, where the noise is
// larger than c·2^19 anyway. The sensitivity ⌈c/g⌉ exceeds c/g by less than
// one part in 2^29 (2^9 when coarsened), and the noise is larger than for
// exact reals by that factor at most. Rounding each contribution to the
// nearest multiple of g moves a key's sum by at most g/2 per user (and the
// row grid by h/2 per row): bias, not a privacy cost, at most n·c·2^−30 for
// n users at the finest grid.
//
// Rows beyond m. A user with more than m non-NULL rows under a key
// contributes m times the mean of its clamped values: the expectation of the
// sum of m of those rows drawn uniformly without replacement, with none of
// the sampling's variance. It is bounded by m·max(|lower|, |upper|) like any
// m rows, so the sensitivity is unchanged, and it needs no per-pair reservoir.
//
// Conservative Gaussian. The discrete Gaussian's (ε, δ) is taken through
// zCDP, not through its exact profile (CKS20 Theorem 7), because zCDP
// composes across statistics. The bound is valid for it and for the
// continuous Gaussian (TestZCDPDeltaBoundsTheExactProfiles), and its σ is 7 %
// above the analytic Gaussian σ of Balle & Wang at the default split
// (Plan.UnitSigma against Plan.AnalyticUnitSigma). The analytic σ itself
// would not be safe for discrete noise: at σ = 1, ε = 1 the discrete
// Gaussian's exact δ is 0.141 against the continuous 0.127.
//
// # Refused options
//
// Selection mechanisms that do not sample a user's Δ0 keys uniformly once:
// greedy_frequency and greedy_public (they keep the keys of highest
// priority), the unproven greedy rules (no bound, which the aggregates'
// sensitivity needs, and no proof: docs/privacy.md §7), the
// disabled policy_gaussian_l1, single_item unless Δ0 = 1, SUM or AVG
// with given bounds that are not finite with lower < upper, and Laplace
// noise with a bound left to choose. Calibrate says which and why.
//
// # Bounds chosen privately, and global releases
//
// Δ0 = 0, m = 0 and Aggregate.AutoBounds leave those bounds to a private
// choice at release time with a share of the aggregates' ρ (bounds.go has
// the mechanism and its proof). Options.Global releases one row over all
// rows without key selection (global.go).
//
// # Public keys
//
// Options.PublicKeys releases one row for every key of a set K given by
// Pipeline.SetPublicKeys (a function of public data: the keys of a public
// table), in sorted key order, with no key selection: rows of other keys
// are dropped, a key no user has gets noise around 0, and the aggregates
// get all of ε and δ. Users keep Δ0 keys among K, so each statistic's total
// vector over K moves by at most Δ0·Units in ℓ1 and √Δ0·Units in ℓ2 between
// neighbouring databases — the sensitivities the noise is calibrated to —
// and the released keys, their number and order depend on K alone
// (publickeys.go has the proof; at most MaxPublicKeys keys).
//
// # Quantiles
//
// MEDIAN(x) and PERCENTILE_CONT(x, p) (Kind Quantile, level
// Aggregate.Quantile) are released by the exponential mechanism over the
// public grid c_j = lower + j·(upper − lower)/2^16, j = 0 … 2^16, on the
// same bounded data (Δ0 keys per user, at most m values per user and key,
// its own order statistics beyond m): with n kept values, lo_j and hi_j of
// them below and at or below c_j, and p = P/Q,
//
//	e_j = max(0, P·n − Q·hi_j, Q·lo_j − P·n),   P(j) ∝ exp(−λ·e_j),
//	λ = ε_q/(2·Δu),   Δu = m·max(P, Q − P)
//
// A user moves every e_j of a key by at most Δu, on at most Δ0 keys, so
// the aggregate is Δ0·ε_q-DP and Δ0·ε_q²/8-zCDP (ε_q-bounded range); ε_q is
// the aggregate's share, ε_i/Δ0 or √(8ρ_i/Δ0), Δ0 being the keys the aggregates count (AggregateGroups when chosen, §21 of docs/privacy.md). The draw is exact,
// with work independent of the data: rejection from an envelope over the
// whole grid, three tries of fixed work, each decided exactly by a
// directed-rounding bracket of exp(−λ·e_j). See quantilesampler.go.
//
// # Limits
//
// A pair's value sum is exact for fewer than 2^33 non-NULL rows of one user
// under one key. A noise draw beyond the int64 range (probability below
// e^(−8192) at the largest scales the options allow) fails the release with
// an error instead of wrapping. The Gaussian's 95 % half-width and variance
// are summed exactly for σ ≤ 20,000 units and taken from the continuous
// normal above (error far below one unit).
package dpagg
