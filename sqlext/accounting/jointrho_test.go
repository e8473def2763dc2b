package accounting

import (
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// TestAggregatesZCDPComposition: a GROUP BY release with Gaussian
// aggregates after dp_sips composes its parts in zCDP (dpagg's
// jointrho.go): what the zCDP ledger charges for it — the selection's ρ,
// the bound tests' and the statistics' — converts (CKS20) to at most the
// release's own ε at δ less the thresholds' charge, for random options,
// with bounds set by hand or chosen privately; and the statistics get at
// least the ρ of their basic-composition share.
func TestAggregatesZCDPComposition(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	kinds := []dpagg.Kind{dpagg.CountRows, dpagg.CountValues, dpagg.Sum, dpagg.Avg, dpagg.CountUnits, dpagg.StdDevPop}
	zcdp := 0
	for range 300 {
		o := dpagg.Defaults()
		o.Epsilon = []float64{0.05, 0.3, 1, 2, 8}[r.IntN(5)]
		o.Delta = []float64{1e-9, 1e-6, 1e-5, 1e-3}[r.IntN(4)]
		o.SelectionShare = []float64{0, 0.1, 0.5, 0.9}[r.IntN(4)]
		o.SelectionDeltaShare = []float64{0, 0.2, 0.8}[r.IntN(3)]
		o.MaxGroupsContributed = []int{0, 1, 5, 300}[r.IntN(4)]
		o.MaxRowsPerGroup = []int{0, 1, 7}[r.IntN(3)]
		o.NoiseAfterBounds = r.IntN(4) == 0
		o.GaussianAuto = !o.NoiseAfterBounds
		for range 1 + r.IntN(3) {
			a := dpagg.Aggregate{Kind: kinds[r.IntN(len(kinds))]}
			if a.Kind.NeedsBounds() {
				if r.IntN(2) == 0 {
					a.AutoBounds = true
				} else {
					a.Lower, a.Upper = -2, 10
				}
			}
			o.Aggregates = append(o.Aggregates, a)
		}
		p, err := dpagg.Calibrate(o)
		if err != nil {
			continue // e.g. Laplace with bounds to choose
		}
		c, err := Aggregates(p)
		if err != nil {
			t.Fatal(err)
		}
		if p.Composition != dpagg.CompositionZCDP {
			continue
		}
		zcdp++
		if eps := CKSEpsilon(c.Rho, o.Delta-c.ThresholdCharge()); eps > o.Epsilon*(1+1e-9) {
			t.Errorf("%+v: charged ρ %v converts to ε %v > %v", o, c.Rho, eps, o.Epsilon)
		}
	}
	if zcdp < 50 {
		t.Errorf("only %d of 300 random releases composed in zCDP", zcdp)
	}
}
