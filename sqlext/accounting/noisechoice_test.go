package accounting

import (
	"testing"

	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// TestAggregatesNoiseChoiceBasic: a release whose bounds are chosen with
// noise auto may end Laplace or Gaussian (dpagg's noisechoice.go), so its
// aggregates are charged by basic composition, (ε_a, δ_a), and not as
// zCDP; key selection keeps its zCDP part. The charge comes from the plan
// made before any row, and the whole release still fits its (ε, δ).
func TestAggregatesNoiseChoiceBasic(t *testing.T) {
	o := dpagg.Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
	o.Aggregates = []dpagg.Aggregate{{Kind: dpagg.CountRows}}
	p, err := dpagg.Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Aggregates(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.BasicEpsilon < p.AggregatesEpsilon || c.BasicDelta < p.AggregatesDelta || c.Rho <= 0 {
		t.Fatalf("cost %+v for aggregates (%v, %v)", c, p.AggregatesEpsilon, p.AggregatesDelta)
	}
	if e := c.EpsilonAt(o.Delta); e > o.Epsilon*(1+1e-9) {
		t.Fatalf("one release costs ε %v at δ %v, more than its ε %v", e, o.Delta, o.Epsilon)
	}
	o.Noise = dpagg.Gaussian // no noise choice: zCDP as before
	p, _ = dpagg.Calibrate(o)
	if c, _ := Aggregates(p); c.BasicEpsilon != 0 {
		t.Fatalf("Gaussian release with chosen bounds charged basic: %+v", c)
	}
}
