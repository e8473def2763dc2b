package dpagg

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/sqlext/explain"
	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Clamping bounds chosen on small tables: a thresholded noisy histogram.
//
// Why. The binary search of chooseValues asks "N_{>g} − f·N + Z ≤ 0" with
// Z ~ N(0, σ_t²). Above the data N_{>g} = 0, so every test there passes
// with probability Φ(f·N/σ_t): 0.61 at 600 users (f·N = 18, σ_t ≈ 66), and
// each failure sends the search up half the remaining grid. Bounds drifted
// anywhere up to 2^53 (112 of 200 seeded releases of a SUM over 600 users
// with values in {0, 1, 2} chose U > 8, median 128). No exponential
// mechanism whose utility depends on N_{>g} alone does better: every
// candidate above the data has the same utility, so ~50 of the 64 tie.
// What a small table can tell is where its users are, not its 97th
// percentile.
//
// What. Below the size test's threshold MinUsers (the same test "N + Z ≥
// MinUsers" that sends Δ0 and m to their fallbacks, now run before the
// values are searched), each auto-bounded aggregate is bounded by a noisy
// histogram instead: user u falls in exactly one of the 128 cells
// (i, s), i the smallest grid index with maxAbs_u ≤ valueGrid[i] (63 beyond
// the grid; 0 for a user whose values are all NULL or NaN), maxAbs_u the
// largest |value| over all of u's rows (every key), and s whether one of
// them is negative: one item per user. Every cell gets a
// significance test
//
//	"c_{i,s} + Z_{i,s} > τ",   Z_{i,s} ~ N(0, σ_h²) independent,   τ = HistogramZ·σ_h,
//
// sampled exactly as Bernoulli(Φ((c − τ)/σ_h)) with two random words
// (securerand.BernoulliFixed). With H the highest grid index of a cell that
// passes, U = valueGrid[min(H+1, 63)] (one step of headroom above the
// highest well-populated cell), and lower = −U if a negative cell passes,
// 0 otherwise. If no cell passes (a table of fewer users than about τ),
// the bounds are the data-independent [0, FallbackUpper]. The error
// refinement of errchoice.go then runs as after a search (candidates 2U …
// U/16).
//
// Privacy. Adding or removing one user changes exactly one cell by 1, so
// the vector of cells has ℓ2 sensitivity 1 and the Gaussian mechanism
// c + Z is 1/(2σ_h²)-zCDP (Bun & Steinke 2016, Prop. 1.6); the 128
// decisions and the bounds are post-processing of it (each decision reads
// only its own Z_{i,s}, and sampling it as a Bernoulli of the exact
// probability has the same joint law). σ_h is set so that 1/(2σ_h²) is
// what the tests it replaces would cost: per aggregate the search and
// sign tests (valueSearchTests) and the error refinement of its bound
// (valueErrorTests, for SUM/AVG/spreads: a histogram's bound is not
// refined — at this size those tests' noise, C·σ_t, dwarfs a threshold of
// a few users), and the searches whose outcome the small-table fallback
// discards anyway — Δ0 (countSearchTests and TopGroupsSlots) and m
// (countSearchTests and rowsErrorTests) —, shared evenly by the
// auto-bounded aggregates: with K_s such tests,
// σ_h = σ_t·√(len(Values)/K_s), and those searches are then skipped. Which
// branch runs is a function of the size test's outcome, a DP output, and
// each branch costs at most the planned tests' K_s/(2σ_t²), so by adaptive
// composition the release's charge — fixed by the options before any row
// is read — is unchanged (TestSmallBoundsBudget).
//
// Work. A histogram draws exactly 2·128 words (2 per cell) except on an
// event of probability at most 128·2^−128 (securerand.BernoulliFixed);
// the number of cells, tests and words is a function of the plan and of
// the size test's outcome only (TestBoundTestsFixedWords).

// Parameters of the small-table histogram.
const (
	// HistogramZ puts the threshold τ at HistogramZ noise deviations: an
	// empty cell passes with probability Φ(−4.32) ≈ 7.8·10^−6, so any of
	// the 128 cells with probability below 10^−3.
	HistogramZ = 4.32
	// FallbackUpper is U when no cell passes.
	FallbackUpper  = 1
	histogramCells = 2 * 64 // len(valueGrid) × sign
)

// The searches a release's value searches are, or are not, replaced by.
const (
	SearchBinary    = "binary search"
	SearchHistogram = "histogram"
	SearchNone      = "histogram, no cell passed"
)

// smallTests is K_s, the tests whose budget the small-table histograms
// share: the value searches and the searches the fallback discards.
func (b *BoundsPlan) smallTests() int {
	k := len(b.Values)*valueSearchTests + b.errorValues*valueErrorTests
	if b.Groups {
		k += countSearchTests
		if b.AggregateGroups {
			k += TopGroupsSlots
		}
	}
	if b.Rows {
		k += countSearchTests
		if b.ErrorRows {
			k += rowsErrorTests
		}
	}
	return k
}

// HistogramSigma is σ_h, the noise deviation of each cell of a
// small-table histogram, in users (0 if no value bound is chosen).
func (b *BoundsPlan) HistogramSigma() float64 {
	if len(b.Values) == 0 {
		return 0
	}
	return b.TestSigma * math.Sqrt(float64(len(b.Values))/float64(b.smallTests()))
}

// valueCell returns user v's cell: grid index and sign.
func valueCell(v userValues) int {
	i := 0
	for i < len(valueGrid)-1 && !(v.maxAbs <= valueGrid[i]) {
		i++
	}
	if v.negative {
		i += len(valueGrid)
	}
	return i
}

// sizeTest runs the size test "N + Z ≥ MinUsers" once per release and
// reports whether the table is small.
func (t *tester) sizeTest(b *BoundsPlan, users int) bool {
	if !t.sized {
		t.sized = true
		t.small = !t.pass(b.MinUsers - float64(users))
	}
	return t.small
}

// spend takes k tests' budget from the plan (a histogram).
func (t *tester) spend(k int) {
	if k > t.left {
		panic("dpagg: more bound tests than planned")
	}
	t.left -= k
}

// cellPasses samples "count + Z > τ", Z ~ N(0, σ_h²), exactly, with two
// words (securerand.BernoulliFixed).
func (t *tester) cellPasses(count int, tau, sigma float64) bool {
	t.cells++
	return securerand.BernoulliFixed(t.rng, noise.Phi((float64(count)-tau)/sigma))
}

// chooseValuesSmall bounds each auto-bounded aggregate by its thresholded
// noisy histogram (see above). It spends the plan's smallTests, so the
// searches of Δ0 and m do not run (chooseCounts).
func (b *BoundsPlan) chooseValuesSmall(t *tester, vals [][]userValues, c *Chosen, nAggs int) {
	t.spend(b.smallTests())
	t.countsSpent = true
	sigma := b.HistogramSigma()
	tau := HistogramZ * sigma
	c.Bounds = make([][2]float64, nAggs)
	c.ValueSearch = make([]string, nAggs)
	for j, ai := range b.Values {
		var cells [histogramCells]int
		for _, v := range vals[j] {
			cells[valueCell(v)]++
		}
		top, neg := -1, false
		for k, n := range cells {
			if t.cellPasses(n, tau, sigma) {
				top = max(top, k%len(valueGrid))
				neg = neg || k >= len(valueGrid)
			}
		}
		if top < 0 {
			c.Bounds[ai] = [2]float64{0, FallbackUpper}
			c.ValueSearch[ai] = SearchNone
			continue
		}
		u := valueGrid[min(top+1, len(valueGrid)-1)]
		lower := 0.0
		if neg {
			lower = -u
		}
		c.Bounds[ai] = [2]float64{lower, u}
		c.ValueSearch[ai] = SearchHistogram
	}
}

// searchNote says, for the Note, how aggregate i's bounds were chosen when
// the table was small.
func (c *Chosen) searchNote(i int) string {
	if i >= len(c.ValueSearch) {
		return ""
	}
	switch c.ValueSearch[i] {
	case SearchHistogram:
		return " (small table: one grid step above the highest well-populated cell of a noisy histogram)"
	case SearchNone:
		return " (too few users to choose them: fixed)"
	}
	return ""
}

// refinable reports whether aggregate i's bounds are refined for error
// (errchoice.go): only after a binary search. A small table's histogram
// spent the refinement's tests (whose noise, σ_t·C against a signal of a
// few users, would only have moved the bound at random).
func (c *Chosen) refinable(i int) bool {
	return i >= len(c.ValueSearch) || c.ValueSearch[i] == SearchBinary
}

// valueSearchFacts tells DP_EXPLAIN how the clamping bounds are chosen:
// which search runs on which side of min_users, and their share of the
// aggregates' ρ.
func (b *BoundsPlan) valueSearchFacts() []explain.Fact {
	if len(b.Values) == 0 {
		return nil
	}
	total := b.Rho / BoundsShare // the aggregates' ρ
	one := 1 / (2 * b.TestSigma * b.TestSigma)
	search := float64(valueSearchTests) * one
	if b.errorValues > 0 {
		search += float64(b.errorValues*valueErrorTests) / float64(len(b.Values)) * one
	}
	sigma := b.HistogramSigma()
	return []explain.Fact{
		explain.F("bounds.value_search", fmt.Sprintf("at or above min_users: binary search of %d tests over 2^-10…2^53 and a sign test (then refined for error); below: a noisy histogram of the users' largest |value| (%d cells, σ_h = %.4g users), the bound one grid step above the highest cell whose noisy count exceeds τ = %.4g users ([0, %d] if none)",
			valueSearchTests-1, histogramCells, sigma, HistogramZ*sigma, FallbackUpper),
			"the Note of the release says which ran (docs/privacy.md, the section on clamping bounds on small tables)"),
		explain.F("bounds.value_search_rho", fmt.Sprintf("%.4g per bound (%.2f%% of the aggregates' ρ) above min_users; %.4g per bound (%.2f%%) below, with the budget of the searches the fallback replaces",
			search, 100*search/total, 1/(2*sigma*sigma), 100/(2*sigma*sigma)/total),
			"part of the choice's ρ (bounds.rho), charged with the release whichever runs"),
	}
}
