package setunion

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestPreparedReleaseMatchesPairs: releasing pairs grouped once
// (pairs.prepare, releasePrepared) gives the items that adding the pairs
// to a builder of each release's own options gives (pairs.release), for
// every mechanism and option the corpus accuracy tests use, seed by seed.
// Those tests (TestUtilityAgainstReference, TestSmallTableDefaultMaxItems)
// release prepared input, so their figures are those of the release from
// pairs they state.
func TestPreparedReleaseMatchesPairs(t *testing.T) {
	r := securerand.NewSeeded(7)
	z := rand.NewZipf(r, 1.1, 1, 2000-1)
	var p pairs
	for u := range 2000 {
		for range 1 + r.IntN(40) {
			p.users = append(p.users, fmt.Sprintf("u%d", u))
			p.items = append(p.items, fmt.Sprintf("i%d", z.Uint64()))
		}
	}
	prep := p.prepare(t)
	type config struct {
		m     Mechanism
		alpha float64
		d0    int
	}
	configs := []config{
		{DPSIPS, 0, AutoMaxItems}, {DPSIPS, 0, 8}, {WeightedGaussian, 0, 10}, {PolicyGaussianL2, 3, 100},
		{PolicyLaplace, 3, 300}, {CountGaussian, 0, 10}, {PolicyGaussianL1, 5, 100},
		{GreedyFrequencyUnproven, 3, 0}, {GreedyFrequency, 3, 30},
	}
	for _, c := range configs {
		o := Defaults()
		o.Mechanism, o.Epsilon, o.Delta = c.m, 1, 1e-6
		if c.d0 != 0 {
			o.MaxItems = c.d0
		}
		if c.alpha > 0 {
			o.Alpha = Float(c.alpha)
		}
		o.unsafeResearch = c.m == PolicyGaussianL1
		o.AllowUnproven = c.m == GreedyFrequencyUnproven
		for seed := uint64(1); seed <= 2; seed++ {
			want := p.release(t, o, seed).Items
			got := releasePrepared(t, prep, o, seed).Items
			if !slices.Equal(got, want) {
				t.Errorf("%s α=%v Δ0=%d seed %d: prepared input released %d items, pairs %d", c.m, c.alpha, c.d0, seed, len(got), len(want))
			} else if seed == 1 {
				t.Logf("%s α=%v Δ0=%d: %d items", c.m, c.alpha, c.d0, len(want))
			}
		}
	}
}
