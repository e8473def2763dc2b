package setunion

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// maxItemsGrid is the public grid of contribution bounds that the private
// choice of Δ0 searches: 32 values ≈ 2^(j/2+1/2), j = 0..31, from 1 to 65,536,
// so that a binary search takes exactly MaxItemsTests tests.
var maxItemsGrid = func() []int {
	g := make([]int, 32)
	for j := range g {
		g[j] = int(math.Round(math.Pow(2, float64(j+1)/2)))
	}
	return g
}()

// MaxItemsTests is the number of noisy tests of the private choice of Δ0
// (a binary search over the 32 values of its grid).
const MaxItemsTests = 5

// MaxItemsGrid returns the grid of bounds the private choice of Δ0 can
// return (a copy).
func MaxItemsGrid() []int { return slices.Clone(maxItemsGrid) }

// truncatedStat returns T_g = N_{>g} − f·N for users whose distinct-item
// counts are sorted ascending: the number of users that a bound g would
// truncate, minus the target share f of all users. Adding or removing one
// user changes N by 1 and N_{>g} by 0 or 1, so T_g moves by −f or 1 − f:
// its sensitivity is max(f, 1 − f) ≤ 1.
func truncatedStat(sorted []int, g int, f float64) float64 {
	above := len(sorted) - sort.SearchInts(sorted, g+1)
	return float64(above) - f*float64(len(sorted))
}

// privateMaxItems chooses Δ0 from the grid by a binary search of
// MaxItemsTests noisy tests "T_g + Z ≤ 0", Z ~ N(0, σ_t²): the smallest grid
// value g that (noisily) truncates at most the share f of users. Each test is
// a Gaussian mechanism of sensitivity ≤ 1 and is sampled exactly as a
// Bernoulli with probability Φ(−T_g/σ_t), so no noisy count exists; the
// search is their adaptive composition, μ² = MaxItemsTests/σ_t² in
// Gaussian-DP terms. sorted holds the users' distinct-item counts ascending.
func privateMaxItems(rng *rand.Rand, sorted []int, f, sigmaT float64) int {
	lo, hi := 0, len(maxItemsGrid)-1
	for lo < hi {
		mid := (lo + hi) / 2
		t := truncatedStat(sorted, maxItemsGrid[mid], f)
		if securerand.BernoulliFixed(rng, noise.Phi(-t/sigmaT)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return maxItemsGrid[lo]
}

// userSizes returns every user's number of distinct items, sorted ascending.
// The lists must be grouped.
func (b *Builder) userSizes() []int {
	if b.prep != nil {
		return b.prep.userSizes() // shared: read only
	}
	s := make([]int, len(b.lists))
	for u, l := range b.lists {
		s[u] = len(l)
	}
	slices.Sort(s)
	return s
}

// chooseMaxItems runs the private choice of Δ0 planned in b.cal.Auto on the
// grouped users and recalibrates the release for the chosen Δ0 with the
// rest of the Gaussian budget.
func (b *Builder) chooseMaxItems(rng *rand.Rand) {
	a := *b.cal.Auto
	a.Chosen = min(privateMaxItems(rng, b.userSizes(), a.Truncate, a.TestSigma), a.Cap)
	cal, err := calibrate(b.opts, a.Chosen, 1-a.Share)
	if err != nil {
		panic("setunion: calibration failed for options that calibrated before: " + err.Error())
	}
	cal.Auto = &a
	b.cal = cal
}
