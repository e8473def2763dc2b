package accounting

import (
	"math"
	"testing"

	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// TestPublicKeysCost: a release over public keys costs its statistics'
// zCDP (and the private choice of bounds), no selection: finite, within
// the ρ its (ε, δ) allows, and the same as a global release's when Δ0 = 1.
func TestPublicKeysCost(t *testing.T) {
	for _, nz := range []dpagg.Noise{dpagg.Gaussian, dpagg.Laplace} {
		for _, d0 := range []int{1, 5, 0} {
			if d0 == 0 && nz == dpagg.Laplace {
				continue // a private choice of bounds needs Gaussian noise
			}
			o := dpagg.Defaults()
			o.Noise, o.MaxGroupsContributed, o.MaxRowsPerGroup = nz, d0, 1
			o.PublicKeys = true
			o.Aggregates = []dpagg.Aggregate{{Kind: dpagg.CountRows}, {Kind: dpagg.Sum, Lower: 0, Upper: 10}}
			p, err := dpagg.Calibrate(o)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Aggregates(p)
			if err != nil || !(c.Rho > 0) || math.IsInf(c.Rho, 0) || c.ThresholdFail != 0 {
				t.Fatalf("%s Δ0=%d: cost %+v %v", nz, d0, c, err)
			}
			if nz == dpagg.Gaussian && c.Rho > p.Rho*(1+1e-9) {
				t.Errorf("%s Δ0=%d: ρ %v above the plan's %v", nz, d0, c.Rho, p.Rho)
			}
			if d0 == 1 {
				o.PublicKeys, o.Global = false, true
				g, _ := dpagg.Calibrate(o)
				gc, _ := Aggregates(g)
				if math.Abs(gc.Rho-c.Rho) > 1e-12*c.Rho {
					t.Errorf("%s: public keys ρ %v, global %v", nz, c.Rho, gc.Rho)
				}
			}
		}
	}
}
