package accounting

import (
	"testing"

	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// TestFilterDefaultReleases: how many default releases (ε = 1, δ = 1e-6) a
// budget of (10, 1e-5) admits under the filter, against basic composition
// (10). docs/batch.md quotes these numbers.
func TestFilterDefaultReleases(t *testing.T) {
	c, err := SetUnionOptions(setunion.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	f := Filter{Epsilon: 10, Delta: 1e-5}
	n := f.MaxReleases(c, 1000)
	_, basic := MaxRepeats(c, 10, 1e-5, 1000)
	t.Logf("default releases in (10, 1e-5): %d under the zCDP filter, %d under basic composition", n, basic)
	if basic != 10 || n < 40 {
		t.Errorf("filter admits %d, basic %d; want basic 10 and the filter several times more", n, basic)
	}
	// The filter is monotone: once it refuses, it refuses every longer
	// sequence, and it never admits more than the (tighter, non-filter)
	// joint accounting.
	if f.Check(Repeat(c, n+1)) == nil || f.Check(Repeat(c, n+2)) == nil {
		t.Error("not monotone")
	}
	if joint, _ := MaxRepeats(c, 10, 1e-5, 1000); n > joint {
		t.Errorf("filter %d > joint accounting %d", n, joint)
	}
	// Spent and Remaining add up to the budget.
	e, d := f.Spent(Repeat(c, n))
	re, rd := f.Remaining(Repeat(c, n))
	thr, _ := f.Split()
	if e > 10 || e+re < 10-1e-9 || e+re > 10+1e-9 || d > thr || d+rd < thr-1e-18 {
		t.Errorf("spent (%v, %v), remaining (%v, %v)", e, d, re, rd)
	}
}

// TestFilterRefusesBasicOnly: a release without a zCDP account cannot enter.
func TestFilterRefusesBasicOnly(t *testing.T) {
	f := Filter{Epsilon: 10, Delta: 1e-5}
	if err := f.Check(Basic(0.1, 1e-7)); err == nil {
		t.Fatal("a basic-only release was admitted")
	}
	if err := (Filter{Epsilon: 1, Delta: 1e-5, ThresholdShare: 1}).Check(Cost{}); err == nil {
		t.Fatal("share 1 accepted")
	}
}

// TestAggregatesCost: a release of aggregates costs its selection plus its
// statistics, and converts to at most its stated (ε, δ).
func TestAggregatesCost(t *testing.T) {
	for _, noise := range []dpagg.Noise{dpagg.Laplace, dpagg.Gaussian} {
		o := dpagg.Defaults()
		o.Noise = noise
		o.Aggregates = []dpagg.Aggregate{{Kind: dpagg.CountRows}, {Kind: dpagg.Sum, Lower: 0, Upper: 10}}
		p, err := dpagg.Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Aggregates(p)
		if err != nil {
			t.Fatal(err)
		}
		sel, _ := SetUnion(p.Selection)
		if c.Rho <= sel.Rho || c.ThresholdFail != sel.ThresholdFail || c.Epsilon != o.Epsilon || c.Delta != o.Delta {
			t.Errorf("%s: cost %+v, selection %+v", noise, c, sel)
		}
		if e := c.ConcentratedEpsilon(o.Delta * 10); !(e > 0) {
			t.Errorf("%s: ε at 10δ = %v", noise, e)
		}
	}
}
