package checks

import (
	"fmt"
	"math"
	"testing"
)

func TestChecks(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name string
		f    func(float64) error
		ok   []float64
		bad  []float64
	}{
		{"Epsilon", Epsilon, []float64{5e-324, 0.1, 1, 1e300}, []float64{0, -1, nan, inf, -inf}},
		{"EpsilonOrZero", EpsilonOrZero, []float64{0, 1}, []float64{-1, nan, inf}},
		{"Delta", Delta, []float64{5e-324, 1e-6, 0.999}, []float64{0, 1, -1, nan, inf}},
		{"DeltaOrZero", DeltaOrZero, []float64{0, 1e-6}, []float64{1, -1, nan}},
	} {
		for _, v := range c.ok {
			if err := c.f(v); err != nil {
				t.Errorf("%s(%v) = %v, want nil", c.name, v, err)
			}
		}
		for _, v := range c.bad {
			if err := c.f(v); err == nil {
				t.Errorf("%s(%v) = nil, want an error", c.name, v)
			}
		}
	}
}

func ExampleEpsilon() {
	fmt.Println(Epsilon(0))
	fmt.Println(Delta(1e-6))
	// Output:
	// epsilon must be a finite number greater than 0, got 0
	// <nil>
}
