package accounting

import (
	"math"
	"testing"

	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// TestAggregatesNoiseChoiceRho: a release whose bounds are chosen with
// noise auto and NoiseAfterBounds may end Laplace or Gaussian (dpagg's
// noisechoice.go); its aggregates are charged ρ_t + max(ρ_s, ε_L²/2) in
// zCDP whatever is chosen (a charge from the plan made before any row),
// never more than the same release with its bounds set by hand at the
// Δ0 = m = 1 for which the branch takes Laplace noise (noise auto picks
// Laplace there too), and (ε, δ) by basic composition, with no basic-only
// part (which a zCDP account would refuse). Without the option the charge
// is as before.
func TestAggregatesNoiseChoiceRho(t *testing.T) {
	o := dpagg.Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
	o.Aggregates = []dpagg.Aggregate{{Kind: dpagg.CountRows}}
	o.NoiseAfterBounds = false
	plain, err := dpagg.Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := Aggregates(plain)
	o.NoiseAfterBounds = true
	p, err := dpagg.Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Aggregates(p)
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := SetUnion(p.Selection)
	b := p.Bounds
	want := sel.Rho + b.Rho + math.Max(p.Rho-b.Rho, b.LaplaceEpsilon*b.LaplaceEpsilon/2) // one statistic: Σ_i ε_L,i² = ε_L²
	if c.BasicEpsilon != 0 || c.BasicDelta != 0 || math.Abs(c.Rho-want) > 1e-12*want || c.Epsilon != o.Epsilon || c.Delta != o.Delta {
		t.Fatalf("cost %+v, want ρ %v and (ε, δ) = (%v, %v)", c, want, o.Epsilon, o.Delta)
	}
	if before.BasicEpsilon != 0 || before.Rho >= c.Rho {
		t.Fatalf("without the option: cost %+v (with: %+v)", before, c)
	}
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 1, 1
	hp, err := dpagg.Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	hand, _ := Aggregates(hp)
	if hp.Noise != dpagg.Laplace || hand.Rho < c.Rho {
		t.Fatalf("hand-set Δ0 = m = 1: noise %s, charge %+v below the choice's %+v", hp.Noise, hand, c)
	}
	t.Logf("zCDP charge of a COUNT release with bounds chosen privately: ρ %.4g without NoiseAfterBounds, %.4g with it (%.1f×; the default); with Δ0 = m = 1 set by hand (Laplace) %.4g", before.Rho, c.Rho, c.Rho/before.Rho, hand.Rho)
}
