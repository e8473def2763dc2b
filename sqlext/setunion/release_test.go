package setunion

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// releaseFrequency runs trials releases of a database in which n users hold
// only item "x" (and each a private item of its own, when fill is set) and
// returns how often "x" was released.
func releaseFrequency(t *testing.T, o Options, n, trials int, seed uint64) int {
	t.Helper()
	r := securerand.NewSeeded(seed)
	hits := 0
	for i := 0; i < trials; i++ {
		b, err := NewBuilder(o)
		if err != nil {
			t.Fatal(err)
		}
		for u := 0; u < n; u++ {
			b.Add(fmt.Sprintf("user%d", u), "x")
		}
		if slices.Contains(b.Release(r).Items, "x") {
			hits++
		}
	}
	return hits
}

// checkBinomial fails unless hits is within 4.5 standard deviations of
// trials·p (a two-sided test at about 7e-6 per check).
func checkBinomial(t *testing.T, name string, hits, trials int, p float64) {
	t.Helper()
	mean := float64(trials) * p
	sd := math.Sqrt(float64(trials) * p * (1 - p))
	if math.Abs(float64(hits)-mean) > 4.5*sd+0.5 {
		t.Errorf("%s: released %d of %d times, expected %.1f ± %.1f (p = %.4f)", name, hits, trials, mean, 4.5*sd, p)
	} else {
		t.Logf("%s: released %d of %d, p = %.4f (expected %.1f)", name, hits, trials, p, mean)
	}
}

// TestReleaseMatchesSurvivalFunction: an item of known weight is released
// with frequency P(w + Z > ρ) for the mechanism's noise.
func TestReleaseMatchesSurvivalFunction(t *testing.T) {
	const trials = 4000
	cases := []struct {
		m     Mechanism
		users int
	}{
		{WeightedGaussian, 0}, {WeightedLaplace, 0}, {CountGaussian, 0}, {CountLaplace, 0},
		{PolicyGaussianL2, 0}, {PolicyLaplace, 0}, {GreedyFrequency, 0},
	}
	for i, c := range cases {
		o := Defaults()
		o.Mechanism, o.Epsilon, o.Delta, o.MaxItems = c.m, 1, 1e-6, 4
		o.Alpha = Float(20) // cutoff far above ρ: each lone-item user adds exactly 1
		cal, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		// Choose the number of users so that the release probability is moderate.
		n := max(1, int(math.Round(cal.Rho)))
		p := cal.ReleaseProbability(float64(n))
		hits := releaseFrequency(t, o, n, trials, uint64(100+i))
		checkBinomial(t, fmt.Sprintf("%s, weight %d", c.m, n), hits, trials, p)
	}
}

// TestPolicyCutoffCapsWeight: under a policy, an item never gets more than Γ,
// so a release of many users holding one item has probability P(Γ + Z > ρ).
func TestPolicyCutoffCapsWeight(t *testing.T) {
	o := Defaults()
	o.Mechanism, o.Epsilon, o.Delta, o.MaxItems, o.Alpha = PolicyGaussianL2, 1, 1e-6, 4, Float(0.5)
	cal, _ := Calibrate(o)
	const trials = 3000
	hits := releaseFrequency(t, o, 100, trials, 7)
	checkBinomial(t, "policy_gaussian_l2 capped at Γ", hits, trials, cal.ReleaseProbability(cal.Gamma))
}

// TestSingleItemMatchesPi: with single_item, an item held by n users (one
// item each) is released with probability π(n).
func TestSingleItemMatchesPi(t *testing.T) {
	o := Defaults()
	o.Mechanism, o.Epsilon, o.Delta = SingleItem, 1, 0.05
	cal, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	const trials = 4000
	for n := 1; n <= 5; n++ {
		hits := releaseFrequency(t, o, n, trials, uint64(200+n))
		checkBinomial(t, fmt.Sprintf("single_item, %d users", n), hits, trials, cal.ReleaseProbability(float64(n)))
	}
}

// TestSingleItemTable checks π against its definition: π(0) = 0, it ends at
// 1, and every step satisfies both (ε, δ)-DP constraints between n−1 and n
// users with equality in the binding one (Desfontaines et al.).
func TestSingleItemTable(t *testing.T) {
	for _, c := range []struct{ eps, delta float64 }{{1, 1e-6}, {0.1, 1e-10}, {3, 0.05}, {20, 1e-12}} {
		pi, q := singleItemTable(c.eps, c.delta)
		if pi[0] != 0 || pi[len(pi)-1] != 1 {
			t.Fatalf("ε=%v δ=%v: table %v…%v", c.eps, c.delta, pi[0], pi[len(pi)-1])
		}
		ee := math.Exp(c.eps)
		for n := 1; n < len(pi); n++ {
			a, b := pi[n-1], pi[n]
			if !(b > a) || math.Abs(q[n]-(1-b)) > 1e-15 {
				t.Fatalf("π not increasing at %d, or q ≠ 1 − π", n)
			}
			if b > (ee*a+c.delta)*(1+1e-12) || q[n-1] > (ee*q[n]+c.delta)*(1+1e-12) {
				t.Fatalf("ε=%v δ=%v n=%d: π(n−1)=%v π(n)=%v violates (ε, δ)-DP", c.eps, c.delta, n, a, b)
			}
		}
	}
}

// TestDPSIPSReleaseProbability: an item of weight w in every round is released
// by some round with probability 1 − Π_r (1 − p_r(w)).
func TestDPSIPSReleaseProbability(t *testing.T) {
	o := Defaults()
	o.Mechanism, o.Epsilon, o.Delta, o.MaxItems, o.Rounds = DPSIPS, 1, 1e-6, 4, 3
	cal, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	n := int(math.Round(cal.Rho))
	miss := 1.0
	for r := range cal.Rounds {
		miss *= 1 - cal.RoundProbability(r, float64(n))
	}
	const trials = 3000
	hits := releaseFrequency(t, o, n, trials, 300)
	checkBinomial(t, "dp_sips", hits, trials, 1-miss)
	// Composition: Σ 1/σ_r² = 1/σ*², Σ δ_r = δ_T (the thresholds' share).
	inv, dsum := 0.0, 0.0
	for _, rd := range cal.Rounds {
		inv += 1 / (rd.Sigma * rd.Sigma)
		dsum += rd.Delta
	}
	if math.Abs(inv*cal.Scale*cal.Scale-1) > 1e-12 || math.Abs(dsum-cal.ThresholdDelta) > 1e-18 || math.Abs(cal.ThresholdDelta-(1-SIPSGaussianShare)*o.Delta) > 1e-18 {
		t.Errorf("rounds do not compose: Σ1/σ_r² · σ*² = %v, Σδ_r = %v", inv*cal.Scale*cal.Scale, dsum)
	}
	if !(cal.Rounds[0].Sigma > cal.Rounds[2].Sigma) {
		t.Errorf("later rounds should get more budget: %+v", cal.Rounds)
	}
}

// TestBuilderGrouping: pairs in any order, duplicates counted once, empty
// privacy units dropped, per-user compaction equal to a reference map.
func TestBuilderGrouping(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b, _ := NewBuilder(Defaults())
	ref := map[string]map[string]uint64{}
	for i := 0; i < 50_000; i++ {
		u := fmt.Sprintf("u%d", r.IntN(300))
		it := fmt.Sprintf("i%d", int(r.ExpFloat64()*40))
		if r.IntN(100) == 0 {
			u = ""
		}
		b.Add(u, it)
		if u == "" {
			continue
		}
		if ref[u] == nil {
			ref[u] = map[string]uint64{}
		}
		ref[u][it]++
	}
	st := b.Group()
	pairs := 0
	items := map[string]bool{}
	for _, m := range ref {
		pairs += len(m)
		for it := range m {
			items[it] = true
		}
	}
	if st.Users != len(ref) || st.Pairs != int64(pairs) || st.DistinctItems != len(items) {
		t.Fatalf("stats %+v, want users %d pairs %d items %d", st, len(ref), pairs, len(items))
	}
	for u, m := range ref {
		uid, _ := b.users.Lookup([]byte(u))
		l := b.lists[uid]
		if len(l) != len(m) {
			t.Fatalf("user %s: %d entries, want %d", u, len(l), len(m))
		}
		if !slices.IsSorted(l) {
			t.Fatalf("user %s: entries not sorted by item", u)
		}
		for _, e := range l {
			if got, want := e&0xffffffff, m[b.items.String(uint32(e>>32))]; got != want {
				t.Fatalf("user %s item %s: count %d, want %d", u, b.items.String(uint32(e>>32)), got, want)
			}
		}
	}
}

// TestReleaseBasics: sorted output, determinism under a seed, no item a
// single user alone holds, empty input.
func TestReleaseBasics(t *testing.T) {
	for _, m := range Mechanisms() {
		if m.Disabled() != nil {
			continue
		}
		o := Defaults()
		o.Mechanism, o.Epsilon, o.Delta, o.MaxItems = m, 2, 1e-6, 10
		o.AllowUnproven = true
		if m.publicPriority() {
			o.Public = map[string]float64{"common00": 1000}
		}
		build := func() *Builder {
			b, err := NewBuilder(o)
			if err != nil {
				t.Fatal(err)
			}
			for u := 0; u < 400; u++ {
				for k := 0; k < 8; k++ {
					b.Add(fmt.Sprintf("user%03d", u), fmt.Sprintf("common%02d", k))
				}
				b.Add(fmt.Sprintf("user%03d", u), fmt.Sprintf("secret-of-%03d", u))
			}
			return b
		}
		a := build().Release(securerand.NewSeeded(1)).Items
		c := build().Release(securerand.NewSeeded(1)).Items
		if !slices.Equal(a, c) {
			t.Errorf("%s: same seed, different output", m)
		}
		if !slices.IsSorted(a) {
			t.Errorf("%s: output not sorted: %v", m, a)
		}
		if len(a) != 8 {
			t.Errorf("%s: released %v, want the 8 common items", m, a)
		}
		for _, it := range a {
			if strings.HasPrefix(it, "secret") {
				t.Errorf("%s: released %q held by one user", m, it)
			}
		}
		empty, _ := NewBuilder(o)
		if res := empty.Release(securerand.NewSeeded(1)); len(res.Items) != 0 || res.Support != 0 {
			t.Errorf("%s: empty input released %v", m, res.Items)
		}
	}
}

// TestBoundingIsUniform: a user with more than Δ0 items contributes a
// uniform Δ0-subset (each of 6 items kept with probability 2/6).
func TestBoundingIsUniform(t *testing.T) {
	o := Defaults()
	o.Mechanism, o.MaxItems = CountGaussian, 2
	r := securerand.NewSeeded(9)
	counts := map[string]int{}
	const trials = 6000
	for i := 0; i < trials; i++ {
		b, _ := NewBuilder(o)
		for k := 0; k < 6; k++ {
			b.Add("only", fmt.Sprintf("i%d", k))
		}
		res := b.Release(r)
		if res.Support != 2 {
			t.Fatalf("support %d, want 2", res.Support)
		}
		for k := 0; k < 6; k++ {
			if res.InSupport(fmt.Sprintf("i%d", k)) {
				counts[fmt.Sprintf("i%d", k)]++
			}
		}
	}
	for it, c := range counts {
		checkBinomial(t, "kept "+it, c, trials, 1.0/3)
	}
}

// TestGreedyOrder: GW spends the budget on the user's most frequent item
// first; GW-KT on the item most frequent in the public table.
func TestGreedyOrder(t *testing.T) {
	for _, m := range []Mechanism{GreedyFrequency, GreedyPublic, GreedyFrequencyUnproven, GreedyPublicUnproven} {
		o := Defaults()
		o.Mechanism, o.AllowUnproven = m, true
		o.Public = map[string]float64{"b": 50}
		b, _ := NewBuilder(o)
		b.Add("u", "a")
		b.Add("u", "a")
		b.Add("u", "a")
		b.Add("u", "b")
		b.Add("u", "c")
		b.Group()
		key := [2]uint64{1, 2}
		h, _ := b.histogram(context.Background(), securerand.NewSeeded(1), key, []uint32{0}, m, b.cal.Gamma, b.cal.MaxItems, nil)
		want := "a"
		if m.publicPriority() {
			want = "b"
		}
		floor := 0.0 // the proven rules give every item η/|W| first
		if m.Proven() {
			floor = GreedyFloor / 3
		}
		for i, w := range h.W {
			name := b.items.String(uint32(i))
			if (name == want && math.Abs(w-(1-2*floor)) > 1e-15) || (name != want && w != floor) {
				t.Errorf("%s: weights %v for items %v, want all budget on %q", m, h.W, b.items.Strings(), want)
				break
			}
		}
	}
}

// TestOptionsErrors: every invalid parameter is refused with a message that
// names it and what is allowed.
func TestOptionsErrors(t *testing.T) {
	base := Defaults()
	cases := []struct {
		mut  func(*Options)
		want string
	}{
		{func(o *Options) { o.Epsilon = 0 }, "epsilon must be a finite number greater than 0"},
		{func(o *Options) { o.Epsilon = math.Inf(1) }, "epsilon must be a finite number greater than 0"},
		{func(o *Options) { o.Epsilon = math.NaN() }, "epsilon"},
		{func(o *Options) { o.Delta = 0 }, "delta must be greater than 0 and less than 1"},
		{func(o *Options) { o.Delta = 1 }, "delta must be greater than 0 and less than 1"},
		{func(o *Options) { o.MaxItems = -1 }, "max_items must be an integer from 1 to 1000000, or 0"},
		{func(o *Options) { o.Alpha = Float(-1) }, "alpha must be a finite number ≥ 0"},
		{func(o *Options) { o.Rounds = 0 }, "rounds must be an integer from 1 to 100"},
		{func(o *Options) { o.Mechanism = "nope" }, `unknown mechanism "nope": use one of count_laplace`},
		{func(o *Options) { o.Mechanism = GreedyPublic }, "greedy_public needs a public frequency table"},
		{func(o *Options) { o.Mechanism = PolicyGaussianL1 }, "policy_gaussian_l1 is disabled"},
		{func(o *Options) { o.Mechanism = PolicyGaussianL1; o.AllowUnproven = true }, "policy_gaussian_l1 is disabled"},
		{func(o *Options) { o.Mechanism = GreedyFrequencyUnproven }, "greedy_frequency_unproven is unproven"},
	}
	for _, c := range cases {
		o := base
		c.mut(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
		if _, err := NewBuilder(o); err == nil {
			t.Errorf("NewBuilder accepted invalid options (%q)", c.want)
		}
	}
	if err := base.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	if m, err := ParseMechanism(" Policy_Gaussian_L2 "); err != nil || m != PolicyGaussianL2 {
		t.Errorf("ParseMechanism is not case-insensitive: %v %v", m, err)
	}
}

// TestCalibrateAll: every enabled mechanism calibrates to finite values, and
// Γ = ρ + α·scale for those with a cutoff.
func TestCalibrateAll(t *testing.T) {
	for _, m := range Mechanisms() {
		o := Defaults()
		o.Mechanism = m
		o.Public = map[string]float64{}
		if _, err := Calibrate(o); m.Proven() != (err == nil) {
			t.Errorf("%s: proven %v, but Calibrate without AllowUnproven returned %v", m, m.Proven(), err)
		}
		o.AllowUnproven = true
		c, err := Calibrate(o)
		if m.Disabled() != nil {
			if err == nil {
				t.Errorf("%s: calibrated a disabled mechanism", m)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if math.IsNaN(c.Rho) || math.IsInf(c.Rho, 0) || c.Rho <= 0 || c.Noise != m.Noise() {
			t.Errorf("%s: %+v", m, c)
		}
		if m.HasCutoff() && math.Abs(c.Gamma-(c.Rho+c.Alpha*c.Scale)) > 1e-12 {
			t.Errorf("%s: Γ %v ≠ ρ + α·scale", m, c.Gamma)
		}
	}
}
