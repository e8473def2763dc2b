package accounting

import (
	"math"
	"testing"

	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// TestQuantileCharged: a release's quantile is charged like any statistic
// of its plan — its ρ (Gaussian) or ε²/2 (Laplace) — and a COUNT beside it
// with the same weight costs the same.
func TestQuantileCharged(t *testing.T) {
	for _, nz := range []dpagg.Noise{dpagg.Gaussian, dpagg.Laplace} {
		o := dpagg.Defaults()
		o.Noise = nz
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 5, 2
		o.Aggregates = []dpagg.Aggregate{{Kind: dpagg.CountRows}, {Kind: dpagg.Quantile, Quantile: 0.5, Lower: 0, Upper: 10}}
		p, err := dpagg.Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		withQ, err := Aggregates(p)
		if err != nil {
			t.Fatal(err)
		}
		o.Aggregates = o.Aggregates[:1]
		o.Aggregates = append(o.Aggregates, dpagg.Aggregate{Kind: dpagg.CountRows})
		p2, err := dpagg.Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		twoCounts, err := Aggregates(p2)
		if err != nil {
			t.Fatal(err)
		}
		if withQ.Rho <= 0 || withQ.Rho > twoCounts.Rho*(1+1e-6) || withQ.Rho < twoCounts.Rho*0.99 || math.IsNaN(withQ.Rho) {
			t.Errorf("%s: cost with a quantile ρ=%v, with two counts ρ=%v", nz, withQ.Rho, twoCounts.Rho)
		}
	}
}
