package setunion

import (
	"fmt"
	"math"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestUsersNeededMatchesReleases checks the plain-words figures of Facts
// against the real mechanism: a key held by n users is released at the
// rate KeyProbability(n) states, at n = UsersNeeded(½) and n − 1 (each
// user holding only that key; and, for the weighted mechanisms, each
// holding Δ0 keys, where their weight is exactly 1/√Δ0 or 1/Δ0). Rates
// are measured over seeded trials and compared with a 4.5-sigma binomial
// band.
func TestUsersNeededMatchesReleases(t *testing.T) {
	const trials = 600
	cases := []struct {
		o      Options
		spread bool
	}{
		{Options{Mechanism: PolicyGaussianL2, Epsilon: 1, Delta: 1e-6, MaxItems: 10, Rounds: 1}, false},
		{Options{Mechanism: WeightedLaplace, Epsilon: 1, Delta: 1e-6, MaxItems: 5, Rounds: 1}, true},
		{Options{Mechanism: WeightedGaussian, Epsilon: 2, Delta: 1e-5, MaxItems: 4, Rounds: 1}, true},
		{Options{Mechanism: CountGaussian, Epsilon: 1, Delta: 1e-6, MaxItems: 3, Rounds: 1}, false},
		{Options{Mechanism: DPSIPS, Epsilon: 1, Delta: 1e-6, MaxItems: 8, Rounds: 3}, false},
		{Options{Mechanism: SingleItem, Epsilon: 1, Delta: 1e-6, MaxItems: 1, Rounds: 1}, false},
	}
	seed := uint64(1)
	for _, tc := range cases {
		cal, err := Calibrate(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		half, ok := cal.UsersNeeded(0.5, tc.spread)
		if !ok {
			t.Fatalf("%s: no users reach ½", tc.o.Mechanism)
		}
		for _, n := range []int{half - 1, half} {
			want := cal.KeyProbability(n, tc.spread)
			hits := 0
			for range trials {
				b, err := NewBuilder(tc.o)
				if err != nil {
					t.Fatal(err)
				}
				for u := range n {
					user := fmt.Sprint("u", u)
					b.Add(user, "key")
					if tc.spread {
						for k := 1; k < tc.o.MaxItems; k++ {
							b.Add(user, fmt.Sprintf("own-%d-%d", u, k))
						}
					}
				}
				seed++
				for _, it := range b.Release(securerand.NewSeeded(seed)).Items {
					if it == "key" {
						hits++
					}
				}
			}
			got := float64(hits) / trials
			band := 4.5*math.Sqrt(want*(1-want)/trials) + 1.0/trials
			t.Logf("%s spread=%v: n=%d released %.3f, stated %.3f", tc.o.Mechanism, tc.spread, n, got, want)
			if math.Abs(got-want) > band {
				t.Errorf("%s spread=%v n=%d: released at rate %.3f, KeyProbability says %.3f (band ±%.3f)", tc.o.Mechanism, tc.spread, n, got, want, band)
			}
		}
		if p := cal.KeyProbability(half, tc.spread); p < 0.5 || cal.KeyProbability(half-1, tc.spread) >= 0.5 {
			t.Errorf("%s: UsersNeeded(½) = %d is not the smallest n with probability ≥ ½", tc.o.Mechanism, half)
		}
	}
}

// TestFactsDefaults checks the facts of the default options name the
// mechanism and give finite user counts, growing with the probability.
func TestFactsDefaults(t *testing.T) {
	cal, err := Calibrate(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range cal.Facts() {
		if f.Meaning == "" {
			t.Errorf("%s has no meaning", f.Name)
		}
		got[f.Name] = f.Value
	}
	if got["mechanism"] != string(DPSIPS) || got["max_items"] != "auto (at most 1000)" {
		t.Errorf("facts %v", got)
	}
	var half, high int
	fmt.Sscan(got["users_for_50pct"], &half)
	fmt.Sscan(got["users_for_95pct"], &high)
	if half < 2 || high <= half {
		t.Errorf("users for ½ %q, for 0.95 %q", got["users_for_50pct"], got["users_for_95pct"])
	}
}
