package setunion

import (
	"strings"
	"testing"
)

// TestSingleItemCost: the estimate of the table's length is close to the
// table's, and options that need more than MaxSingleItemTable entries are
// refused before the table is built.
func TestSingleItemCost(t *testing.T) {
	for _, c := range []struct{ eps, delta float64 }{{1, 1e-6}, {0.1, 1e-9}, {0.01, 1e-12}, {3, 1e-5}, {0.001, 1e-15}} {
		pi, _ := singleItemTable(c.eps, c.delta)
		est := singleItemEntries(c.eps, c.delta)
		if got := float64(len(pi)); got > 1.2*est+3 || got < 0.8*est-3 {
			t.Errorf("ε=%g δ=%g: table of %v entries, estimate %v", c.eps, c.delta, got, est)
		}
	}
	o := Defaults()
	o.Mechanism, o.Epsilon, o.Delta = SingleItem, 1e-8, 1e-12
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "calibration table") {
		t.Fatalf("ε=1e-8, δ=1e-12 accepted: %v", err)
	}
	if _, err := Calibrate(o); err == nil {
		t.Fatal("Calibrate accepted them")
	}
}
