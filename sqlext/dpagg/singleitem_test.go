package dpagg

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// TestSingleItemSelectionRule: the key selection takes single_item only at
// Δ0 = 1 on a basic-composition ledger, with the mechanism left to the
// default and parts that compose by basic composition; everywhere else it
// keeps its mechanism (a zCDP account would refuse single_item, also with
// dp_noise_after_bounds ON), and a Δ0 = 1 release that composes in zCDP
// keeps that composition.
func TestSingleItemSelectionRule(t *testing.T) {
	count := []Aggregate{{Kind: CountRows}}
	cases := []struct {
		name string
		mut  func(o *Options)
		want setunion.Mechanism
	}{
		{"basic deployment, hand-set m", func(o *Options) {}, setunion.SingleItem},
		{"basic deployment, m chosen privately", func(o *Options) { o.MaxRowsPerGroup = 0 }, setunion.SingleItem},
		{"basic deployment, no aggregates", func(o *Options) { o.Aggregates = nil }, setunion.SingleItem},
		{"basic deployment, Laplace", func(o *Options) { o.Noise = Laplace }, setunion.SingleItem},
		{"zCDP deployment", func(o *Options) { o.BasicLedger, o.NoiseAfterBounds, o.GaussianAuto = false, false, true }, setunion.DPSIPS},
		{"zCDP deployment, noise_after_bounds ON", func(o *Options) { o.BasicLedger = false }, setunion.DPSIPS},
		{"zCDP deployment, noise_after_bounds ON, m chosen", func(o *Options) { o.BasicLedger, o.MaxRowsPerGroup = false, 0 }, setunion.DPSIPS},
		{"basic deployment, noise_after_bounds OFF, m chosen (Gaussian, composed in zCDP)", func(o *Options) { o.NoiseAfterBounds, o.MaxRowsPerGroup = false, 0 }, setunion.DPSIPS},
		{"Gaussian set by hand (composed in zCDP)", func(o *Options) { o.Noise = Gaussian }, setunion.DPSIPS},
		{"Δ0 = 2", func(o *Options) { o.MaxGroupsContributed = 2 }, setunion.DPSIPS},
		// Before the choice, the plan that is charged and explained holds the
		// placeholder Δ0 = 1: its charge must cover a choice of 1.
		{"Δ0 chosen privately, before the choice", func(o *Options) { o.MaxGroupsContributed = 0 }, setunion.SingleItem},
		{"zCDP deployment, Δ0 chosen privately", func(o *Options) { o.MaxGroupsContributed, o.BasicLedger = 0, false }, setunion.DPSIPS},
		{"mechanism set by the analyst", func(o *Options) { o.Mechanism = setunion.CountGaussian }, setunion.CountGaussian},
		{"π(n) table too large", func(o *Options) { o.Epsilon, o.Delta = 1e-7, 1e-12 }, setunion.DPSIPS},
	}
	for _, c := range cases {
		o := Defaults()
		o.MaxGroupsContributed, o.MaxRowsPerGroup, o.NoiseAfterBounds, o.BasicLedger = 1, 16, true, true
		o.Aggregates = count
		c.mut(&o)
		p, err := Calibrate(o)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if p.Selection.Mechanism != c.want {
			t.Errorf("%s: selection %s, want %s", c.name, p.Selection.Mechanism, c.want)
		}
		name := string(c.want)
		if c.name == "Δ0 chosen privately, before the choice" {
			name = "single_item if the chosen Δ0 is 1, else dp_sips"
		}
		if got := p.SelectionMechanism(); got != name {
			t.Errorf("%s: SelectionMechanism %q, want %q", c.name, got, name)
		}
		if c.want == setunion.SingleItem && p.Composition == CompositionZCDP {
			t.Errorf("%s: single_item composed in zCDP", c.name)
		}
		if c.name == "Gaussian set by hand (composed in zCDP)" && p.Composition != CompositionZCDP {
			t.Errorf("%s: composition %q, want zcdp", c.name, p.Composition)
		}
	}
}

// TestSingleItemSelectionKeys: on the synthetic searches table (20,000
// users, one country each, 60 countries), the expected countries released
// at Δ0 = 1 on a basic deployment equal those of Google DP's truncated
// geometric partition selection at the same (ε_s, δ_s), which is optimal
// there, where dp_sips released about 9 fewer.
func TestSingleItemSelectionKeys(t *testing.T) {
	tb := searchesTable()
	users := tb.usersPerKey()
	expected := map[setunion.Mechanism]float64{}
	var google float64
	for _, m := range []setunion.Mechanism{"", setunion.DPSIPS} {
		o := Defaults()
		o.MaxGroupsContributed, o.MaxRowsPerGroup, o.NoiseAfterBounds, o.BasicLedger, o.Mechanism = 1, 16, true, true, m
		o.Aggregates = []Aggregate{{Kind: CountRows}}
		p, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range users {
			expected[p.Selection.Mechanism] += 1 - p.Selection.MissProbability(float64(n))
		}
		if m == "" {
			google = tb.googleKeys(p.Selection.Epsilon, p.Selection.Delta, 1, 1)
		}
	}
	single, sips := expected[setunion.SingleItem], expected[setunion.DPSIPS]
	t.Logf("expected countries released at Δ0 = 1: %.3f (single_item, the default here), %.3f (dp_sips), %.3f (Google's selection)", single, sips, google)
	if math.Abs(single-google) > 1e-6 || single < sips+5 {
		t.Errorf("single_item %.3f, dp_sips %.3f, Google %.3f: want single_item = Google, well above dp_sips", single, sips, google)
	}
}

// TestSingleItemSelectionProbability releases keys of 20, 26 and 32 users
// (one key per user) through the pipeline on a basic deployment, and checks
// each key's release rate against π(n) of the truncated geometric
// recurrence at the plan's (ε_s, δ_s), computed here independently of
// setunion's table.
func TestSingleItemSelectionProbability(t *testing.T) {
	sizes := []int{20, 26, 32}
	o := Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup, o.NoiseAfterBounds, o.BasicLedger = 1, 1, true, true
	o.Aggregates = []Aggregate{{Kind: CountRows}}
	trials := iterations(2000, 200)
	hits := make([]int, len(sizes))
	var plan *Plan
	for s := range trials {
		p, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		plan = p.Plan()
		for k, n := range sizes {
			for u := range n {
				if err := p.Add([]byte(fmt.Sprintf("u%d-%d", k, u)), []byte(fmt.Sprintf("key%d", k)), make([]Value, 1)); err != nil {
					t.Fatal(err)
				}
			}
		}
		res, err := p.Release(securerand.NewSeeded(uint64(7700 + s)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			var k int
			fmt.Sscanf(r.Key, "key%d", &k)
			hits[k]++
		}
	}
	if plan.Selection.Mechanism != setunion.SingleItem {
		t.Fatalf("selection %s, want single_item", plan.Selection.Mechanism)
	}
	eps, delta := plan.Selection.Epsilon, plan.Selection.Delta
	pi := []float64{0}
	for len(pi) <= sizes[len(sizes)-1] {
		p := pi[len(pi)-1]
		pi = append(pi, min(math.Exp(eps)*p+delta, 1-math.Exp(-eps)*(1-p-delta), 1))
	}
	for k, n := range sizes {
		checkRate(t, fmt.Sprintf("%d-user key, single_item", n), hits[k], trials, pi[n])
	}
}
