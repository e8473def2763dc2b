package setunion_test

import (
	"fmt"
	"log"
	"slices"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// ExampleBuilder releases the union of users' items under (ε, δ)-DP with
// the default mechanism: items many users hold are released, an item one
// user holds is not (except with probability below δ).
func ExampleBuilder() {
	o := setunion.Defaults()
	o.Epsilon, o.Delta = 1, 1e-6
	b, err := setunion.NewBuilder(o)
	if err != nil {
		log.Fatal(err)
	}
	for u := range 500 {
		user := fmt.Sprint("user", u)
		b.Add(user, "weather")
		if u%2 == 0 {
			b.Add(user, "news")
		}
	}
	b.Add("user7", "my own name")

	// Production code passes securerand.New() (crypto/rand); a seed makes
	// the run reproducible, and therefore not private.
	res := b.Release(securerand.NewSeeded(1))
	fmt.Println(slices.Contains(res.Items, "weather"), slices.Contains(res.Items, "news"), slices.Contains(res.Items, "my own name"))
	// Output: true true false
}

// ExampleCalibrate shows what a mechanism's parameters are before any
// data is read: the noise scale σ and the release threshold ρ of the
// Gaussian policy at ε = 1, δ = 1e-6 with each user bounded to Δ0 = 10
// items.
func ExampleCalibrate() {
	o := setunion.Defaults()
	o.Mechanism = setunion.PolicyGaussianL2
	o.Epsilon, o.Delta, o.MaxItems = 1, 1e-6, 10
	c, err := setunion.Calibrate(o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: Δ0=%d σ=%.2f ρ=%.2f\n", c.Mechanism, c.MaxItems, c.Scale, c.Rho)
	// Output: policy_gaussian_l2: Δ0=10 σ=4.37 ρ=23.57
}
