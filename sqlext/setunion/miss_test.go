package setunion

import (
	"math"
	"testing"

	"github.com/dpsql/dpsql/sqlext/noise"
)

// TestMissProbability: MissProbability is 1 − ReleaseProbability for one
// histogram (the weight capped at Γ), 1 − KeyProbability for dp_sips, and
// UsersForMiss finds the first user count at or below the target; with a
// cutoff there is none, and the floor is the miss at Γ.
func TestMissProbability(t *testing.T) {
	for _, m := range []Mechanism{WeightedGaussian, WeightedLaplace, PolicyGaussianL2, PolicyLaplace, DPSIPS, SingleItem} {
		o := Defaults()
		o.Mechanism, o.Epsilon, o.Delta, o.MaxItems = m, 1, 1e-6, 4
		if m == SingleItem {
			o.MaxItems = 1
		}
		cal, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 10, 30, 50, 80, 200} {
			want := 1 - cal.KeyProbability(n, false)
			if got := cal.MissProbability(float64(n)); math.Abs(got-want) > 1e-12 {
				t.Errorf("%s: miss at %d users %v, 1 − KeyProbability %v", m, n, got, want)
			}
		}
		n, ok := cal.UsersForMiss(MissTarget)
		if m.HasCutoff() {
			floor := cal.MissProbability(1e15)
			if ok || floor != cal.MissProbability(cal.Gamma) || !(floor > MissTarget) {
				t.Errorf("%s: users for 1e-9 %d (ok %v), floor %v", m, n, ok, floor)
			}
			if m == PolicyGaussianL2 && math.Abs(floor-noise.Phi(-CutoffAlpha)) > 1e-15 {
				t.Errorf("policy_gaussian_l2 floor %v, want Φ(−3) = %v", floor, noise.Phi(-CutoffAlpha))
			}
			continue
		}
		if !ok || cal.MissProbability(float64(n)) > MissTarget || cal.MissProbability(float64(n-1)) <= MissTarget {
			t.Errorf("%s: users for 1e-9 %d (ok %v): miss %v there, %v one below", m, n, ok, cal.MissProbability(float64(n)), cal.MissProbability(float64(n-1)))
		}
		t.Logf("%s: a key of %d users is missed with probability ≤ 1e-9", m, n)
	}
	// The tail: no cancellation.
	o := Defaults()
	o.Mechanism, o.Epsilon, o.Delta, o.MaxItems = WeightedGaussian, 1, 1e-6, 1
	cal, _ := Calibrate(o)
	if got, want := cal.MissProbability(cal.Rho+8*cal.Scale), noise.Phi(-8); math.Abs(got/want-1) > 1e-9 {
		t.Errorf("miss 8σ above ρ: %v, want Φ(−8) = %v", got, want)
	}
}

// TestSaturatedKeyMissRate: many users on one key (far above Γ) are missed
// at the cutoff's rate Φ(−α) by the Gaussian policy (α = 1 here, so the rate
// is measurable), and at MissProbability's rate by dp_sips near its 50 %
// point.
func TestSaturatedKeyMissRate(t *testing.T) {
	const trials = 3000
	o := Defaults()
	o.Mechanism, o.Epsilon, o.Delta, o.MaxItems, o.Alpha = PolicyGaussianL2, 1, 1e-6, 4, Float(1)
	cal, _ := Calibrate(o)
	hits := releaseFrequency(t, o, 300, trials, 11)
	checkBinomial(t, "policy_gaussian_l2, 300 users, α = 1", hits, trials, 1-cal.MissProbability(300))
	if p := cal.MissProbability(300); math.Abs(p-noise.Phi(-1)) > 1e-12 {
		t.Errorf("policy miss %v, want Φ(−1)", p)
	}
	o.Mechanism, o.Alpha = DPSIPS, nil
	cal, _ = Calibrate(o)
	n, _ := cal.UsersNeeded(0.5, false)
	hits = releaseFrequency(t, o, n, trials, 12)
	checkBinomial(t, "dp_sips at its 50 % point", hits, trials, 1-cal.MissProbability(float64(n)))
}

// TestFactsMiss: DP_EXPLAIN's users_for_miss_1e-9 is a number for dp_sips
// and "never" for a mechanism with a cutoff.
func TestFactsMiss(t *testing.T) {
	for m, want := range map[Mechanism]bool{DPSIPS: true, PolicyGaussianL2: false} {
		o := Defaults()
		o.Mechanism, o.MaxItems = m, 10
		cal, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		v := ""
		for _, f := range cal.Facts() {
			if f.Name == "users_for_miss_1e-9" {
				v = f.Value
			}
		}
		if (v == "never") == want || v == "" {
			t.Errorf("%s: users_for_miss_1e-9 = %q", m, v)
		}
	}
}
