package dpagg

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// energiesAt returns e_j of the kept values of every key at the grid
// indexes js (sorted copies; the pipeline's lists are left as they are).
func energiesAt(q *quantileNoise, perKey map[string][]uint32, js []int) map[string][]uint64 {
	out := map[string][]uint64{}
	for key, vals := range perKey {
		v := slices.Clone(vals)
		slices.Sort(v)
		es := make([]uint64, len(js))
		for i, j := range js {
			es[i], _ = q.energy(v, j)
		}
		out[key] = es
	}
	return out
}

// keptQuantile returns aggregate ai's kept values per key after bound.
func keptQuantile(p *Pipeline, ai int) map[string][]uint32 {
	out := map[string][]uint32{}
	if p.quant == nil || p.quant[ai] == nil {
		return out
	}
	for k, vals := range p.quant[ai].perKey {
		out[p.keyNames[k]] = vals
	}
	return out
}

// TestQuantileNeighbourSensitivity: on many random neighbouring databases
// (D and D plus all rows of one user, interleaved at random; values with
// NULL, NaN, ±Inf and 1e300), the energy e_j of every grid point moves by
// at most the plan's Units = m·max(P, Q−P) on every key, on at most Δ0
// keys, for medians and other levels, per key and global. The energies are
// piecewise constant between the data's grid indexes, so checking every
// index a value takes (and its neighbours, and both ends) checks them all.
func TestQuantileNeighbourSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	iters := iterations(1500, 200)
	levels := []float64{0.5, 0, 1, 0.9, 0.1, 0.25, 0.333333, 0.999}
	worst := 0.0
	for it := range iters {
		o := Defaults()
		o.Global = it%4 == 3
		o.MaxGroupsContributed = 1 + r.IntN(4)
		o.MaxRowsPerGroup = 1 + r.IntN(4)
		lo := (r.Float64() - 0.5) * 100
		lvl := levels[it%len(levels)]
		o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: lvl, Lower: lo, Upper: lo + 0.001 + r.Float64()*80},
			{Kind: CountRows}, {Kind: Quantile, Quantile: 0.5, Lower: -3, Upper: 3}}
		nKeys := 2 + r.IntN(6)
		if o.Global {
			nKeys = 1
		}
		rows, withExtra := neighbourDBs(r, 3+r.IntN(25), nKeys, len(o.Aggregates), o.Global)
		seed := r.Uint64()
		pa, pb := feed(t, o, rows), feed(t, o, withExtra)
		boundFixed(pa, seed)
		boundFixed(pb, seed)
		for _, ai := range []int{0, 2} {
			st := pa.plan.Aggregates[ai].Stats[0]
			ka, kb := keptQuantile(pa, ai), keptQuantile(pb, ai)
			set := map[int]bool{0: true, 1 << QuantileGridBits: true}
			for _, m := range []map[string][]uint32{ka, kb} {
				for _, vals := range m {
					for _, v := range vals {
						for d := -1; d <= 1; d++ {
							if j := int(v) + d; j >= 0 && j <= 1<<QuantileGridBits {
								set[j] = true
							}
						}
					}
				}
			}
			var js []int
			for j := range set {
				js = append(js, j)
			}
			sort.Ints(js)
			ea, eb := energiesAt(st.quant, ka, js), energiesAt(st.quant, kb, js)
			changed := 0
			for key, vb := range eb {
				va := ea[key]
				if va == nil {
					va = make([]uint64, len(js)) // a key absent from D: n = 0, every e_j = 0
				}
				moved := false
				for i := range js {
					d := math.Abs(float64(vb[i]) - float64(va[i]))
					if d > float64(st.Units) {
						t.Fatalf("iter %d (p=%v, m=%d): key %q grid %d: energy moved %v, sensitivity %d", it, pa.plan.Aggregates[ai].Quantile, o.MaxRowsPerGroup, key, js[i], d, st.Units)
					}
					worst = max(worst, d/float64(st.Units))
					moved = moved || d > 0
				}
				if moved {
					changed++
				}
			}
			if changed > pa.plan.MaxGroupsContributed {
				t.Fatalf("iter %d: %d keys changed, Δ0 = %d", it, changed, pa.plan.MaxGroupsContributed)
			}
			// Every kept list has at most m values per user: the bounded
			// database of D' minus the added user is D's.
			for key, vals := range ka {
				if len(kb[key]) < len(vals) || len(kb[key]) > len(vals)+o.MaxRowsPerGroup {
					t.Fatalf("iter %d key %q: %d kept values in D, %d in D'", it, key, len(vals), len(kb[key]))
				}
			}
		}
	}
	t.Logf("%d neighbouring pairs; worst |Δe_j| / Δu = %.3f", iters, worst)
}

// TestQuantileSamplerExact: on a small grid, the sampler's release
// frequencies over 200,000 draws fit the exact exponential-mechanism
// distribution P(j) ∝ exp(−λ·e_j) (χ² test), for several data sets,
// levels and temperatures, including λ·e_j beyond 1 (the BernoulliExp
// integer part) and an empty key (uniform).
func TestQuantileSamplerExact(t *testing.T) {
	// -short: 10,000 draws (every bin merged to ≥ 20 expected draws, as
	// in the full run) check the same law with less power; the full run's
	// 200,000 stay the test of record.
	draws := 200000
	if testing.Short() {
		draws = 10000
	}
	rng := securerand.NewSeeded(43)
	for _, c := range []struct {
		vals     []uint32
		p, q     int64
		num, den int64 // λ per unit of energy
	}{
		{[]uint32{1, 2, 2, 3, 7}, 1, 2, 1, 2},
		{[]uint32{0, 0, 0, 8, 8}, 1, 2, 3, 4},
		{[]uint32{4, 4, 4, 4}, 9, 10, 1, 10},
		{[]uint32{1, 3, 5, 6, 6, 6, 7, 8, 8}, 1, 4, 1, 1},
		{[]uint32{2, 5}, 1, 2, 5, 7},
		{nil, 1, 2, 1, 1},
		// λ with a power-of-two denominator (the calibrated form: the
		// machine-word path, integer parts of λ·e included).
		{[]uint32{1, 2, 2, 3, 7}, 1, 2, 3, 4},
		{[]uint32{0, 1, 3, 3, 8, 8, 8}, 1, 3, 5, 2},
		{[]uint32{4, 5}, 1, 2, 1, 1},
		// λ·e beyond 256 (the capped bracket's lower bound is 0) and
		// beyond float64's range for far candidates.
		{[]uint32{4, 4, 4, 4}, 1, 2, 100, 1},
		{[]uint32{2, 6}, 1, 2, 300, 1},
	} {
		q := &quantileNoise{p: c.p, q: c.q, cands: 9, lamNum: big.NewInt(c.num), lamDen: big.NewInt(c.den)}
		if c.den&(c.den-1) == 0 {
			q.lamBits = uint(bits.TrailingZeros64(uint64(c.den)))
		}
		probs := q.probabilities(c.vals)
		obs := make([]int, len(probs))
		for range draws {
			j, err := q.sample(rng, c.vals)
			if err != nil {
				t.Fatal(err)
			}
			obs[j]++
		}
		var o []int
		var e []float64
		accO, accE := 0, 0.0
		for j := range probs {
			accO += obs[j]
			accE += probs[j] * float64(draws)
			if accE >= 20 || j == len(probs)-1 {
				o, e = append(o, accO), append(e, accE)
				accO, accE = 0, 0
			}
		}
		stat, pv := chiSquareP(o, e)
		if pv < 1e-3 {
			t.Errorf("data %v p=%d/%d λ=%d/%d: χ² %.1f over %d bins, p-value %.2g; observed %v, expected %v", c.vals, c.p, c.q, c.num, c.den, stat, len(e), pv, obs, probs)
		}
	}
}

// TestQuantileRelease: a median and a 0.9 quantile per key and global,
// through Release, land near the truth on a table of 2,000 users; keys get
// the values of their own rows; with the bounds left to choose, the
// release chooses them and the value is still close.
func TestQuantileRelease(t *testing.T) {
	var rows []row
	for u := range 2000 {
		key := "a"
		if u%2 == 1 {
			key = "b"
		}
		x := float64(u%100) + 0.5 // uniform on 0.5 … 99.5
		if key == "b" {
			x += 1000
		}
		rows = append(rows, row{unit: fmt.Sprintf("u%d", u), key: key, values: []Value{Float(x), Float(x), Null}})
	}
	for _, nz := range []Noise{Laplace, Gaussian} {
		o := Defaults()
		o.Noise = nz
		o.Epsilon = 5 // a test of where the values come from, not of accuracy
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 1, 1
		o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: 0.5, Lower: 0, Upper: 2000},
			{Kind: Quantile, Quantile: 0.9, Lower: 0, Upper: 2000}, {Kind: CountRows}}
		res, err := feed(t, o, rows).Release(securerand.NewSeeded(44))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 2 {
			t.Fatalf("%s: %d keys released", nz, len(res.Rows))
		}
		want := map[string][2]float64{"a": {50, 90}, "b": {1050, 1090}}
		for _, rr := range res.Rows {
			for i := range 2 {
				if w := want[rr.Key][i]; math.Abs(rr.Values[i]-w) > 4 {
					t.Errorf("%s key %s aggregate %d: %v, want %v ± 4", nz, rr.Key, i, rr.Values[i], w)
				}
			}
		}
	}
	// Global, with every bound chosen privately.
	g := slices.Clone(rows)
	for i := range g {
		g[i].key = ""
	}
	o := Defaults()
	o.Global = true
	o.MaxRowsPerGroup = 0
	o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: 0.5, AutoBounds: true}}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	rng := securerand.NewSeeded(45)
	for _, rw := range g {
		if err := p.AddValues([]byte(rw.unit), rw.values[:1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.ChooseValueBounds(rng); err != nil {
		t.Fatal(err)
	}
	for _, rw := range g {
		if err := p.Add([]byte(rw.unit), nil, rw.values[:1]); err != nil {
			t.Fatal(err)
		}
	}
	res, err := p.Release(rng)
	if err != nil {
		t.Fatal(err)
	}
	// Half the users are below 100, half above 1000: any value in
	// [99.5, 1000.5] is a median; the grid of [0, 2048] has spacing 1/32.
	if v := res.Rows[0].Values[0]; v < 90 || v > 1010 || res.Chosen == nil {
		t.Errorf("global median with chosen bounds: %v (chosen %v)", v, res.Chosen)
	}
	t.Logf("global median %v, chosen %v", res.Rows[0].Values[0], res.Chosen)
}

// TestQuantileEmptyGlobal: a global quantile over no rows is released (a
// uniform grid point of [lower, upper]), as every global aggregate is.
func TestQuantileEmptyGlobal(t *testing.T) {
	o := Defaults()
	o.Global = true
	o.MaxRowsPerGroup = 1
	o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: 0.5, Lower: 10, Upper: 20}}
	res, err := feed(t, o, nil).Release(securerand.NewSeeded(46))
	if err != nil {
		t.Fatal(err)
	}
	if v := res.Rows[0].Values[0]; len(res.Rows) != 1 || v < 10 || v > 20 {
		t.Fatalf("rows %v", res.Rows)
	}
}

// TestQuantileCalibration: the quantile's cost is at most its share
// (Laplace: ε; Gaussian: ρ, summed exactly with the others), the plan
// explains it, and bad levels are refused.
func TestQuantileCalibration(t *testing.T) {
	for _, nz := range []Noise{Laplace, Gaussian} {
		o := Defaults()
		o.Noise = nz
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 10, 3
		o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: 0.5, Lower: 0, Upper: 1}, {Kind: CountRows}}
		p, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		q, c := p.Aggregates[0].Stats[0], p.Aggregates[1].Stats[0]
		if q.Units != 3 || q.quant == nil || q.quant.p != 1 || q.quant.q != 2 {
			t.Fatalf("quantile stat %+v", q)
		}
		// ε_q = 2·Δu·λ; the aggregate's cost is Δ0·ε_q (or Δ0·ε_q²/8).
		lam, _ := new(big.Rat).SetFrac(q.quant.lamNum, q.quant.lamDen).Float64()
		epsQ := 2 * float64(q.Units) * lam
		switch nz {
		case Laplace:
			if got := 10 * epsQ; got > c.Epsilon*(1+1e-12) || got < c.Epsilon*0.999 {
				t.Errorf("laplace: quantile ε %v, count ε %v (equal shares)", got, c.Epsilon)
			}
		case Gaussian:
			if got := 10 * epsQ * epsQ / 8; got > c.Rho*(1+1e-6) || got < c.Rho*0.99 || q.Rho > p.Rho/2 {
				t.Errorf("gaussian: quantile ρ %v (field %v), count ρ %v, total %v", got, q.Rho, c.Rho, p.Rho)
			}
		}
		if q.RankError95 <= 0 || len(p.Lines()) < 4 {
			t.Errorf("no rank error: %+v", q)
		}
		found := false
		for _, f := range p.Facts() {
			if f.Name == "aggregate_1.rank_error_95" {
				found = true
			}
		}
		if !found {
			t.Errorf("DP_EXPLAIN facts lack the quantile's rank error: %v", p.Facts())
		}
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		o := Defaults()
		o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: bad, Lower: 0, Upper: 1}}
		if _, err := Calibrate(o); err == nil {
			t.Errorf("level %v accepted", bad)
		}
	}
}

// TestQuantileThinning: a user with more than m values under a key keeps
// its own order statistics, whatever the order of its rows.
func TestQuantileThinning(t *testing.T) {
	o := Defaults()
	o.Global = true
	o.MaxRowsPerGroup = 3
	o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: 0.5, Lower: 0, Upper: 1 << QuantileGridBits}}
	var rows []row
	for _, x := range []float64{9, 1, 5, 3, 7, 2, 8, 4, 6} {
		rows = append(rows, row{unit: "u", values: []Value{Float(x)}})
	}
	p := feed(t, o, rows)
	boundFixed(p, 1)
	got := keptQuantile(p, 0)[""]
	if want := []uint32{2, 5, 8}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v (positions ⌊(2i+1)·9/6⌋ of 1…9)", got, want)
	}
}

// TestQuantileCumulative: the envelope's one-pass energies equal those of
// the binary searches.
func TestQuantileCumulative(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	q := &quantileNoise{p: 9, q: 10, cands: 1<<QuantileGridBits + 1, lamNum: big.NewInt(1), lamDen: big.NewInt(1 << 20), lamBits: 20}
	vals := make([]uint32, 5000)
	for i := range vals {
		vals[i] = uint32(r.IntN(300)) * 200
	}
	slices.Sort(vals)
	env, err := q.envelope(vals, new(samplerBufs), new(samplerWork))
	if err != nil {
		t.Fatal(err)
	}
	for j := range int(q.cands) {
		a, _ := q.energy(vals, j)
		if a != env.e[j] {
			t.Fatalf("grid %d: energy %d by search, %d by the envelope's pass", j, a, env.e[j])
		}
	}
}

// BenchmarkQuantileSample measures one exact draw for keys of n values
// spread over the grid, at temperatures from mild to sharp (λ per unit of
// energy; Q = 2, so λ·2 per rank): the worst case is many values and a
// sharp temperature, where about every grid point is tried.
func BenchmarkQuantileSample(b *testing.B) {
	rng := securerand.NewSeeded(1)
	for _, n := range []int{100, 10000, 1000000} {
		vals := make([]uint32, n)
		for i := range vals {
			vals[i] = uint32(rng.Uint64N(1<<QuantileGridBits + 1))
		}
		slices.Sort(vals)
		for _, lam := range []int64{1, 8, 64} {
			q := &quantileNoise{p: 1, q: 2, cands: 1<<QuantileGridBits + 1, lamNum: big.NewInt(lam), lamDen: big.NewInt(64), lamBits: 6}
			b.Run(fmt.Sprintf("n=%d/lambda=%d_64", n, lam), func(b *testing.B) {
				for range b.N {
					if _, err := q.sample(rng, vals); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestQuantileAddRows: n identical rows given at once (AddRows, the
// push-down path) rank n values, as n calls of Add do: same kept values,
// same release for the same seed.
func TestQuantileAddRows(t *testing.T) {
	o := Defaults()
	o.MaxRowsPerGroup = 3
	o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: 0.5, Lower: 0, Upper: 10}, {Kind: CountRows}}
	r := rand.New(rand.NewPCG(5, 6))
	one, _ := New(o)
	grouped, _ := New(o)
	for u := range 300 {
		for k := range 1 + r.IntN(4) {
			vals := []Value{genValue(r), Null}
			n := int64(1 + r.IntN(5))
			unit, key := []byte(fmt.Sprint("u", u)), []byte(fmt.Sprint("k", (u+k)%7))
			for range n {
				if err := one.Add(unit, key, vals); err != nil {
					t.Fatal(err)
				}
			}
			if err := grouped.AddRows(unit, key, vals, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	boundFixed(one, 9)
	boundFixed(grouped, 9)
	ka, kb := keptQuantile(one, 0), keptQuantile(grouped, 0)
	if len(ka) == 0 || len(ka) != len(kb) {
		t.Fatalf("%d keys by Add, %d by AddRows", len(ka), len(kb))
	}
	for key, va := range ka {
		if !slices.Equal(va, kb[key]) {
			t.Fatalf("key %s: kept %v by Add, %v by AddRows", key, va, kb[key])
		}
	}
}
