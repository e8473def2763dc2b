package ngrams

import (
	"math"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// The statistical tests use fixed seeds, so they are deterministic; the
// p-value bound only documents how unlikely a failure would be by chance.
const minP = 1e-4

// TestUnrank checks unrank against enumeration of the complement.
func TestUnrank(t *testing.T) {
	rng := securerand.NewSeeded(3)
	for range 200 {
		n := uint64(1 + rng.IntN(40))
		var excl []uint64
		for i := range n {
			if rng.IntN(3) == 0 {
				excl = append(excl, i)
			}
		}
		var free []uint64
		for i := range n {
			if !slices.Contains(excl, i) {
				free = append(free, i)
			}
		}
		for r, want := range free {
			if got := unrank(excl, uint64(r)); got != want {
				t.Fatalf("unrank(%v, %d) = %d, want %d", excl, r, got, want)
			}
		}
	}
}

// TestSpuriousUniform checks the spurious draw of a level against its
// definition: every k-gram of V_k \ supp(H_k) is drawn independently with
// probability p, and none of supp(H_k) ever is. V_3 comes from a random S_2;
// per element of the complement, the number of draws over many runs must fit
// Binomial(runs, p) (chi-square over elements), and the number of elements
// drawn per run must fit Binomial(|V_3| − |supp|, p).
func TestSpuriousUniform(t *testing.T) {
	rng := securerand.NewSeeded(5)
	h := newHierarchy(randomTuples(rng, 5, 2, 12))
	v := h.validSet(t)
	if v.size < 10 {
		t.Fatalf("|V_3| = %d, too small for the test", v.size)
	}
	var supp []uint64
	for i := range v.size {
		if rng.IntN(3) == 0 {
			supp = append(supp, i)
		}
	}
	free := v.size - uint64(len(supp))
	const runs = 40000
	const p = 0.1
	perElem := make([]float64, v.size)
	perRun := make([]float64, free+1)
	for range runs {
		got := sampleSpurious(rng, v.size, supp, p)
		perRun[len(got)]++
		seen := map[uint64]bool{}
		for _, idx := range got {
			if idx >= v.size || slices.Contains(supp, idx) || seen[idx] {
				t.Fatalf("spurious index %d: out of range, in supp(H) or repeated (supp %v)", idx, supp)
			}
			seen[idx] = true
			a, b := v.at(idx)
			if j, ok := v.index(a, b); !ok || j != idx {
				t.Fatalf("spurious index %d does not decode to a valid k-gram", idx)
			}
			perElem[idx]++
		}
	}
	var obs, exp []float64
	for i := range v.size {
		if !slices.Contains(supp, i) {
			obs = append(obs, perElem[i])
			exp = append(exp, runs*p)
		}
	}
	if pv := chiSquareP(t, obs, exp); pv < minP {
		t.Errorf("spurious k-grams not uniform over V_k \\ supp(H_k): p = %g (counts %v)", pv, obs)
	}
	exp = make([]float64, free+1)
	for b := range exp {
		exp[b] = runs * binomialPMF(free, uint64(b), p)
	}
	if pv := chiSquareP(t, perRun, exp); pv < minP {
		t.Errorf("number of spurious k-grams does not fit Binomial(%d, %g): p = %g", free, p, pv)
	}
}

// binomialPMF returns P(Binomial(n, p) = k), with log C(n, k) summed term by
// term so that it stays accurate for huge n (log-gamma differences do not).
func binomialPMF(n, k uint64, p float64) float64 {
	if k > n {
		return 0
	}
	l := 0.0
	for i := range k {
		l += math.Log(float64(n-i)) - math.Log(float64(i+1))
	}
	return math.Exp(l + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

// TestZeroWeightReleases checks the draw of the zero-weight k-grams against
// its law, independent Bernoulli(p) trials over ranks 0..n−1: the number of
// releases fits Binomial(n, p) (chi-square against an accurate pmf) and the
// ranks are in range and increasing, in both regimes (direct trials, n ≤
// directTrials; geometric jumps beyond) and for n up to 2^53.
func TestZeroWeightReleases(t *testing.T) {
	rng := securerand.NewSeeded(6)
	cases := []struct {
		n    uint64
		p    float64
		runs int
	}{
		{30, 0.04, 20000},             // direct
		{directTrials, 3e-4, 20000},   // direct, mean 1.2
		{directTrials + 1, 0.3, 2000}, // geometric, large mean
		{200_000, 3e-6, 20000},        // geometric, mean 0.6
		{5_000_000, 2e-6, 20000},      // geometric, mean 10
		{1 << 40, 7e-12, 20000},       // geometric, huge n, mean 7.7
		{maxValid, 1e-15, 20000},      // geometric, largest n, mean 9
	}
	for _, tc := range cases {
		counts := map[uint64]float64{}
		var maxB uint64
		for range tc.runs {
			rs := zeroWeightReleases(rng, tc.n, tc.p)
			for i, r := range rs {
				if r >= tc.n || (i > 0 && rs[i-1] >= r) {
					t.Fatalf("n=%d p=%g: ranks %v out of range or not increasing", tc.n, tc.p, rs)
				}
			}
			b := uint64(len(rs))
			counts[b]++
			maxB = max(maxB, b)
		}
		mean := float64(tc.n) * tc.p
		sd := math.Sqrt(mean * (1 - tc.p))
		lo := uint64(max(0, mean-8*sd-1))
		hi := max(maxB, uint64(mean+8*sd+1))
		var obs, exp []float64
		for b := lo; b <= hi; b++ {
			obs = append(obs, counts[b])
			exp = append(exp, float64(tc.runs)*binomialPMF(tc.n, b, tc.p))
		}
		if pv := chiSquareP(t, obs, exp); pv < minP {
			t.Errorf("n=%d p=%g: number of releases does not fit Binomial: chi-square p = %g", tc.n, tc.p, pv)
		}
	}
	if rs := zeroWeightReleases(rng, 10, 0); len(rs) != 0 {
		t.Errorf("p = 0 released %v", rs)
	}
	if rs := zeroWeightReleases(rng, 10, 1); len(rs) != 10 {
		t.Errorf("p = 1 released %v", rs)
	}
	if rs := zeroWeightReleases(rng, 0, 0.5); len(rs) != 0 {
		t.Errorf("n = 0 released %v", rs)
	}
}

// TestZeroWeightPositions: in the geometric regime every rank is released
// with the same probability (chi-square over rank buckets), and the first
// release is at a geometric distance.
func TestZeroWeightPositions(t *testing.T) {
	rng := securerand.NewSeeded(8)
	const n, p, runs = 100_000, 2e-4, 20000
	const buckets = 50
	perBucket := make([]float64, buckets)
	first := map[uint64]float64{}
	for range runs {
		rs := zeroWeightReleases(rng, n, p)
		for _, r := range rs {
			perBucket[r*buckets/n]++
		}
		if len(rs) > 0 {
			first[rs[0]/1000]++
		} else {
			first[n/1000]++
		}
	}
	exp := make([]float64, buckets)
	for i := range exp {
		exp[i] = runs * float64(n) * p / buckets
	}
	if pv := chiSquareP(t, perBucket, exp); pv < minP {
		t.Errorf("releases not uniform over ranks: p = %g", pv)
	}
	// P(first release in [1000j, 1000(j+1))) = q^(1000j) − q^(1000(j+1)).
	var obs []float64
	exp = exp[:0]
	q := 1 - p
	for j := range uint64(n / 1000) {
		obs = append(obs, first[j])
		exp = append(exp, runs*(math.Pow(q, float64(1000*j))-math.Pow(q, float64(1000*(j+1)))))
	}
	obs = append(obs, first[n/1000])
	exp = append(exp, runs*math.Pow(q, n))
	if pv := chiSquareP(t, obs, exp); pv < minP {
		t.Errorf("first release not geometric: p = %g", pv)
	}
}

// TestLevelSpuriousCount runs whole levels k = 2 many times on a fixed input
// and checks B_k ~ Binomial(|V_k| − |supp H_k|, Φ(−ρ_k/σ_k)) with ρ_k from η.
func TestLevelSpuriousCount(t *testing.T) {
	o := Defaults()
	o.MaxN, o.Eta, o.Epsilon = 2, 0.3, 1
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	// S_1 = 30 tokens, so |V_2| = 900; three users hold 5 distinct bigrams.
	var top [][]uint32
	for x := range uint32(30) {
		top = append(top, []uint32{x})
	}
	h := newHierarchy(top)
	c := newTestCorpus([][][]uint32{
		{{0, 1, 2}}, {{0, 1}, {3, 4}}, {{5, 6, 7}},
	})
	rng := securerand.NewSeeded(7)
	cur0 := h.cur(c)
	const runs = 20000
	counts := map[uint64]float64{}
	var st LevelStats
	for range runs {
		cur := slices.Clone(cur0)
		_, s, err := e.level(t.Context(), rng, c, 2, h.sets[0], 1, cur, make([]int32, len(cur)), nil)
		if err != nil {
			t.Fatal(err)
		}
		st = s
		counts[uint64(s.Spurious)]++
	}
	if *st.Valid != 900 || st.Observed != 5 {
		t.Fatalf("|V_2| = %d, |supp H_2| = %d; want 900, 5", *st.Valid, st.Observed)
	}
	p := noise.Phi(-st.Rho / st.Sigma)
	if want := 0.3 * 30.0 / 900; math.Abs(p-want) > 1e-12 {
		t.Fatalf("Φ(−ρ/σ) = %g, want η·|S_1|/|V_2| = %g", p, want)
	}
	var obs, exp []float64
	for b := range uint64(60) {
		obs = append(obs, counts[b])
		exp = append(exp, runs*binomialPMF(895, b, p))
	}
	if pv := chiSquareP(t, obs, exp); pv < minP {
		t.Errorf("B_2 does not fit Binomial(895, %g): p = %g", p, pv)
	}
}
