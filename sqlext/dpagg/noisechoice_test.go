package dpagg

import (
	"math"
	"testing"
)

// TestNoiseChoiceBudget: with noise auto, NoiseAfterBounds and bounds left to choose, the plan
// charged before the data (a) fixes ε_L and the Gaussian ρ_s from the
// options alone, (b) after a choice of Δ0 = 1 takes Laplace noise whose ε,
// with the tests' ε_t at (1−g)·δ_a, adds up to at most ε_a, and after a
// choice of Δ0 = 64 stays Gaussian at ρ_t + ρ_s ≤ ρ(ε_a, g·δ_a); (c) the
// ledger's cost (accounting) is the same in both branches, which the test
// in sqlext/accounting checks; without the option nothing changes.
func TestNoiseChoiceBudget(t *testing.T) {
	o := Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
	o.NoiseAfterBounds = true
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Sum, AutoBounds: true}}
	planned, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	b := planned.Bounds
	if b == nil || !b.NoiseChoice || !(b.LaplaceEpsilon > 0) || planned.Noise != Gaussian {
		t.Fatalf("planned bounds %+v noise %s", b, planned.Noise)
	}
	o.NoiseAfterBounds = false
	if off, _ := Calibrate(o); off.Bounds.NoiseChoice || off.ChoiceRho() != 0 {
		t.Fatal("noise choice without the option")
	}
	o.NoiseAfterBounds = true
	ea, da := planned.AggregatesEpsilon, planned.AggregatesDelta
	et := zcdpEpsilon(b.Rho, (1-GaussianBranchDelta)*da)
	if ZCDPDelta(b.Rho, et) > (1-GaussianBranchDelta)*da || b.LaplaceEpsilon+et > ea {
		t.Fatalf("ε_t %v + ε_L %v > ε_a %v", et, b.LaplaceEpsilon, ea)
	}
	for _, tc := range []struct {
		d0   int
		want Noise
	}{{1, Laplace}, {64, Gaussian}} {
		oc := o
		oc.chosen = &Chosen{MaxGroupsContributed: tc.d0, MaxRowsPerGroup: 4, Bounds: [][2]float64{{}, {0, 16}}, final: true}
		final, err := Calibrate(oc)
		if err != nil {
			t.Fatal(err)
		}
		if final.Noise != tc.want {
			t.Fatalf("Δ0 = %d: noise %s, want %s", tc.d0, final.Noise, tc.want)
		}
		fb := final.Bounds
		if fb.Rho != b.Rho || fb.TestSigma != b.TestSigma || fb.LaplaceEpsilon != b.LaplaceEpsilon {
			t.Fatalf("Δ0 = %d: the tests' budget changed with the choice: %+v against %+v", tc.d0, fb, b)
		}
		var eps, rho float64
		for _, a := range final.Aggregates {
			for _, s := range a.Stats {
				eps += s.Epsilon
				rho += s.Rho
			}
		}
		switch tc.want {
		case Laplace:
			if eps > b.LaplaceEpsilon*(1+1e-12) || eps < 0.999*b.LaplaceEpsilon {
				t.Errorf("Laplace statistics spend ε %v of ε_L %v", eps, b.LaplaceEpsilon)
			}
		case Gaussian:
			full, _ := maxRho(ea, GaussianBranchDelta*da)
			if rho+fb.Rho > full*(1+1e-12) {
				t.Errorf("Gaussian statistics ρ %v + tests %v > ρ %v", rho, fb.Rho, full)
			}
			if math.Abs(final.Rho-full) > 1e-12*full {
				t.Errorf("plan ρ %v, want %v", final.Rho, full)
			}
		}
	}
}
