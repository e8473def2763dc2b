package setunion

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestTruncatedStatSensitivity: on 10,000 random pairs of neighbouring
// databases (one user added, with any number of items), the statistic
// T_g = N_{>g} − f·N of every grid value g moves by at most max(f, 1 − f) ≤ 1,
// the sensitivity the private choice of Δ0 is calibrated to.
func TestTruncatedStatSensitivity(t *testing.T) {
	r := securerand.NewSeeded(41)
	for trial := 0; trial < 10_000; trial++ {
		n := r.IntN(200)
		sizes := make([]int, n)
		for i := range sizes {
			sizes[i] = 1 + int(r.ExpFloat64()*float64(1+r.IntN(3000)))
		}
		slices.Sort(sizes)
		extra := 1 + r.IntN(70000)
		with := append(slices.Clone(sizes), extra)
		slices.Sort(with)
		f := r.Float64() / 2
		for _, g := range maxItemsGrid {
			d := math.Abs(truncatedStat(with, g, f) - truncatedStat(sizes, g, f))
			if d > max(f, 1-f)+1e-12 {
				t.Fatalf("trial %d: g=%d f=%v: T moved by %v", trial, g, f, d)
			}
		}
	}
}

// outcomeDistribution is the exact distribution of privateMaxItems: the
// probability of every path of the binary search.
func outcomeDistribution(sorted []int, f, sigma float64) map[int]float64 {
	out := map[int]float64{}
	var walk func(lo, hi int, p float64)
	walk = func(lo, hi int, p float64) {
		if lo >= hi {
			out[maxItemsGrid[lo]] += p
			return
		}
		mid := (lo + hi) / 2
		pass := noise.Phi(-truncatedStat(sorted, maxItemsGrid[mid], f) / sigma)
		walk(lo, mid, p*pass)
		walk(mid+1, hi, p*(1-pass))
	}
	walk(0, len(maxItemsGrid)-1, 1)
	return out
}

// TestPrivateMaxItemsDistribution: the chosen Δ0 follows the exact
// distribution of the noisy binary search (seeded runs, binomial check per
// outcome), and every path takes MaxItemsTests tests.
func TestPrivateMaxItemsDistribution(t *testing.T) {
	var sizes []int
	for u := 0; u < 300; u++ {
		sizes = append(sizes, 1+u%40) // 1..40 items; 3% truncated near 39
	}
	slices.Sort(sizes)
	const f, sigma = 0.03, 4.0
	want := outcomeDistribution(sizes, f, sigma)
	total := 0.0
	for _, p := range want {
		total += p
	}
	if math.Abs(total-1) > 1e-12 {
		t.Fatalf("outcome probabilities sum to %v", total)
	}
	if math.Log2(float64(len(maxItemsGrid))) != MaxItemsTests {
		t.Fatalf("grid of %d values is not searched in %d tests", len(maxItemsGrid), MaxItemsTests)
	}
	r := securerand.NewSeeded(3)
	const trials = 20000
	got := map[int]int{}
	for i := 0; i < trials; i++ {
		got[privateMaxItems(r, sizes, f, sigma)]++
	}
	for g, p := range want {
		if p*trials >= 5 {
			checkBinomial(t, fmt.Sprintf("Δ0 = %d", g), got[g], trials, p)
		}
	}
}

// TestAutoMaxItems: the private choice of Δ0 spends exactly its share of the
// Gaussian budget, adapts to the data (one item per user: Δ0 = 1 and one
// round; 30 items per user: Δ0 near 30), and the release is recalibrated for
// the chosen Δ0.
func TestAutoMaxItems(t *testing.T) {
	o := Defaults()
	o.Epsilon, o.Delta = 2, 1e-6
	cal, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	if cal.Auto == nil || cal.MaxItems != AutoMaxItemsCap {
		t.Fatalf("default calibration %+v: want a private Δ0 planned at the cap", cal)
	}
	deltaG, _ := o.Mechanism.DeltaSplit(o.Delta)
	sigmaStar, _ := noise.GaussianSigma(o.Epsilon, deltaG, 1)
	mu2 := float64(cal.Auto.Tests) / (cal.Auto.TestSigma * cal.Auto.TestSigma)
	for _, rd := range cal.Rounds {
		mu2 += 1 / (rd.Sigma * rd.Sigma)
	}
	if math.Abs(mu2*sigmaStar*sigmaStar-1) > 1e-9 {
		t.Errorf("Gaussian budget μ²·σ*² = %v, want 1", mu2*sigmaStar*sigmaStar)
	}
	for _, c := range []struct {
		per    int
		lo, hi int
		rounds int
	}{{1, 1, 1, 1}, {30, 23, 45, 3}} {
		b, _ := NewBuilder(o)
		for u := 0; u < 2000; u++ {
			for k := 0; k < c.per; k++ {
				b.Add(fmt.Sprintf("u%d", u), fmt.Sprintf("i%d", (u+k)%500))
			}
		}
		res := b.Release(securerand.NewSeeded(5))
		got := b.Calibration()
		if got.Auto == nil || got.MaxItems != got.Auto.Chosen || got.MaxItems < c.lo || got.MaxItems > c.hi || len(got.Rounds) != c.rounds {
			t.Errorf("%d items per user: chose Δ0 = %d with %d rounds, want %d..%d and %d rounds", c.per, got.MaxItems, len(got.Rounds), c.lo, c.hi, c.rounds)
		}
		if len(res.Items) == 0 {
			t.Errorf("%d items per user: nothing released", c.per)
		}
	}
	// Mechanisms that cannot pay from a Gaussian budget use FixedMaxItems.
	o.Mechanism = PolicyLaplace
	if cal, _ := Calibrate(o); cal.Auto != nil || cal.MaxItems != FixedMaxItems {
		t.Errorf("policy_laplace with max_items 0: %+v", cal)
	}
}
