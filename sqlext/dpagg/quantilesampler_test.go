package dpagg

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// countingSource counts the 64-bit words drawn from a ChaCha8 stream.
type countingSource struct {
	src *rand.ChaCha8
	n   int
}

func (c *countingSource) Uint64() uint64 { c.n++; return c.src.Uint64() }

func newCounting(seed byte) (*rand.Rand, *countingSource) {
	c := &countingSource{src: rand.NewChaCha8([32]byte{seed, 0xd9})}
	return rand.New(c), c
}

// randomQuantileNoise is a mechanism on a grid of g points with a random
// level and λ: dyadic (the calibrated form) or not (tests' form), from
// mild to sharp.
func randomQuantileNoise(r *rand.Rand, g uint64) *quantileNoise {
	levels := [][2]int64{{1, 2}, {1, 4}, {9, 10}, {1, 1000}, {999, 1000}, {0, 1}, {1, 1}}
	l := levels[r.IntN(len(levels))]
	q := &quantileNoise{p: l[0], q: l[1], cands: g}
	if r.IntN(4) == 0 {
		q.lamNum, q.lamDen = big.NewInt(1+r.Int64N(50)), big.NewInt(1+r.Int64N(50))
		return q
	}
	q.lamBits = uint(1 + r.IntN(40))
	q.lamNum = big.NewInt(1 + r.Int64N(int64(1)<<min(q.lamBits+6, 40)))
	q.lamDen = new(big.Int).Lsh(big.NewInt(1), q.lamBits)
	return q
}

// neighbourVals returns the kept grid indexes of a random key (sorted) and
// of its neighbour: the same plus one user's m values (or minus, by
// symmetry of the comparison).
func neighbourVals(r *rand.Rand, g uint64) (a, b []uint32) {
	n := r.IntN(40)
	if r.IntN(5) == 0 {
		n = r.IntN(5000)
	}
	spread := uint64(1 + r.IntN(int(g)))
	base := r.Uint64N(g)
	for range n {
		a = append(a, uint32((base+r.Uint64N(spread))%g))
	}
	b = slices.Clone(a)
	for range 1 + r.IntN(4) { // the victim's m values, anywhere
		b = append(b, uint32(r.Uint64N(g)))
	}
	slices.Sort(a)
	slices.Sort(b)
	return a, b
}

// TestQuantileSamplerWork: on random neighbouring keys (one user's values
// added), with the same random stream, the sampler makes exactly the same
// number of draws, loop iterations and big-float operations — the same
// constant for every database — and needs no refinement and no extra try.
// The old rejection sampler's number of tries, (G+1)/Z on average, fails
// this on the first pair whose Z differs.
func TestQuantileSamplerWork(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	pairs := 600
	if testing.Short() {
		pairs = 150
	}
	for i := range pairs {
		g := uint64(9 + r.IntN(2000))
		if i%20 == 0 {
			g = 1<<QuantileGridBits + 1
		}
		q := randomQuantileNoise(r, g)
		a, b := neighbourVals(r, g)
		var works [2]samplerWork
		var draws [2]int
		for side, vals := range [][]uint32{a, b} {
			rng, src := newCounting(byte(i))
			if _, err := q.sampleCounted(rng, vals, &works[side]); err != nil {
				t.Fatal(err)
			}
			draws[side] = src.n
		}
		wa, wb := works[0], works[1]
		wa.Input, wb.Input = 0, 0 // reading the input: n steps, as every aggregate
		if wa != wb || draws[0] != draws[1] {
			t.Fatalf("pair %d (grid %d, p=%d/%d, λ=%v/%v, n=%d/%d): work %+v and %+v, draws %d and %d",
				i, g, q.p, q.q, q.lamNum, q.lamDen, len(a), len(b), works[0], works[1], draws[0], draws[1])
		}
		want := samplerWork{Draws: 3 * samplerTries, Grid: 2 * int(g), Search: samplerTries * bitsLen(g), Tries: samplerTries, BigOps: wa.BigOps}
		if wa != want || draws[0] != 3*samplerTries || wa.BigOps != samplerTries*(2*expTableBytes+20) {
			t.Fatalf("pair %d: work %+v, draws %d; want %+v with %d big-float operations", i, wa, draws[0], want, samplerTries*(2*expTableBytes+20))
		}
	}
}

func bitsLen(g uint64) int {
	n := 0
	for ; g > 0; g >>= 1 {
		n++
	}
	return n
}

// TestQuantileReleaseDraws: a global quantile released from two
// neighbouring tables draws the same number of words from the stream.
func TestQuantileReleaseDraws(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	for i := range 40 {
		var rows []row
		for u := range 30 + r.IntN(300) {
			for range 1 + r.IntN(3) {
				rows = append(rows, row{unit: fmt.Sprintf("u%d", u), values: []Value{Float(r.NormFloat64()*10 + 50)}})
			}
		}
		victim := []row{{unit: "victim", values: []Value{Float(1e6)}}, {unit: "victim", values: []Value{Float(-3)}}}
		var draws [2]int
		for side, rs := range [][]row{rows, append(slices.Clone(rows), victim...)} {
			o := Defaults()
			o.Global = true
			o.MaxRowsPerGroup = 2
			o.Noise = []Noise{Laplace, Gaussian}[i%2]
			o.Aggregates = []Aggregate{{Kind: Quantile, Quantile: []float64{0.5, 0.1, 0.99}[i%3], Lower: 0, Upper: 100}}
			rng, src := newCounting(byte(i))
			if _, err := feed(t, o, rs).Release(rng); err != nil {
				t.Fatal(err)
			}
			draws[side] = src.n
		}
		if draws[0] != draws[1] {
			t.Fatalf("table %d: %d draws without the victim, %d with", i, draws[0], draws[1])
		}
	}
}

// TestQuantileEnvelopeHolds: c_j ≥ s·w_j for every candidate (checked with
// the rigorous upper bound of w_j), and C ≤ 2^62, on random keys and λ.
func TestQuantileEnvelopeHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(65, 66))
	x := newBigScratch()
	for i := range 60 {
		g := uint64(9 + r.IntN(3000))
		if i%15 == 0 {
			g = 1<<QuantileGridBits + 1
		}
		q := randomQuantileNoise(r, g)
		vals, _ := neighbourVals(r, g)
		w := new(samplerWork)
		env, err := q.envelope(vals, new(samplerBufs), w)
		if err != nil {
			t.Fatal(err)
		}
		if env.pre[g] > 1<<proposalBits {
			t.Fatalf("C = %d", env.pre[g])
		}
		sf := new(big.Float).SetFloat64(env.s)
		for j := range int(g) {
			_, hi := q.expBoundsTable(env.e[j], x, w)
			sw := new(big.Float).SetMode(big.ToPositiveInf).Mul(sf, hi)
			c := env.pre[j+1] - env.pre[j]
			if sw.Cmp(new(big.Float).SetUint64(c)) > 0 {
				t.Fatalf("case %d candidate %d: c %d < s·w %v", i, j, c, sw)
			}
		}
	}
}

// TestQuantileExpBrackets: the fixed-work brackets of exp(−y) contain the
// series' brackets at a higher precision, and are narrower than 2^−90
// relative below y = 256; beyond it the lower bound is 0.
func TestQuantileExpBrackets(t *testing.T) {
	r := rand.New(rand.NewPCG(67, 68))
	x := newBigScratch()
	w := new(samplerWork)
	for range 3000 {
		q := randomQuantileNoise(r, 9)
		e := r.Uint64N(1 << (1 + r.IntN(40)))
		lo, hi := q.expBoundsTable(e, x, w)
		slo, shi, err := q.expBoundsSeries(e, 320, w)
		if err != nil {
			continue // beyond expMaxArg
		}
		if lo.Cmp(shi) > 0 || hi.Cmp(slo) < 0 {
			t.Fatalf("λ=%v/%v e=%d: table [%v, %v], series [%v, %v]", q.lamNum, q.lamDen, e, lo, hi, slo, shi)
		}
		y, _ := new(big.Rat).SetFrac(new(big.Int).Mul(q.lamNum, new(big.Int).SetUint64(e)), q.lamDen).Float64()
		if y < 255 {
			width := new(big.Float).Sub(hi, lo)
			width.Quo(width, hi)
			if f, _ := width.Float64(); f > math.Ldexp(1, -90) {
				t.Fatalf("y=%v: relative width %v", y, f)
			}
		} else if y > 257 && lo.Sign() != 0 {
			t.Fatalf("y=%v: lower bound %v, want 0", y, lo)
		}
	}
}

// TestQuantileAcceptRefines: when V's first 128 bits fall in the cell of
// the threshold s·w/c, accept draws more bits and decides as the exact
// comparison at high precision does.
func TestQuantileAcceptRefines(t *testing.T) {
	r := rand.New(rand.NewPCG(69, 70))
	x := newBigScratch()
	refined := 0
	for i := range 200 {
		q := randomQuantileNoise(r, 9)
		e := r.Uint64N(1 << (1 + r.IntN(12)))
		s := math.Ldexp(1+r.Float64(), 40+r.IntN(20))
		slo, shi, err := q.expBoundsSeries(e, 1024, new(samplerWork))
		if err != nil {
			t.Fatal(err)
		}
		// c ≥ s·w, and v the 128-bit cell holding s·w/c.
		sw := new(big.Float).SetPrec(1024).Mul(new(big.Float).SetFloat64(s), shi)
		cf, _ := sw.Uint64()
		c := cf + 1 + r.Uint64N(3)
		th := new(big.Float).SetPrec(1024).Quo(new(big.Float).SetPrec(1024).Mul(new(big.Float).SetFloat64(s), slo), new(big.Float).SetUint64(c))
		cell, _ := new(big.Float).SetMantExp(th, 128).Int(nil)
		vhi := new(big.Int).Rsh(cell, 64).Uint64()
		vlo := new(big.Int).And(cell, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
		rng, src := newCounting(byte(i))
		w := new(samplerWork)
		got, err := q.accept(rng, e, c, s, vhi, vlo, x, w)
		if err != nil {
			t.Fatal(err)
		}
		if w.Refine == 0 {
			continue
		}
		refined++
		// Replay the extra words: V = cell·2^(−128) + extra bits.
		replay := rand.NewChaCha8([32]byte{byte(i), 0xd9})
		v := new(big.Int).Set(cell)
		for range src.n {
			v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(replay.Uint64()))
		}
		vf := new(big.Float).SetPrec(2048).SetMantExp(new(big.Float).SetPrec(2048).SetInt(v), -128-64*src.n)
		// The exact decision V < s·w/c, with w bracketed at 1024 bits.
		sf := new(big.Float).SetPrec(1024).SetFloat64(s)
		thHi := new(big.Float).SetPrec(1024).Quo(new(big.Float).SetPrec(1024).Mul(sf, shi), new(big.Float).SetUint64(c))
		wantLo, wantHi := vf.Cmp(th) < 0, vf.Cmp(thHi) < 0
		if wantLo == wantHi && got != wantLo {
			t.Fatalf("case %d: accept %v, exact comparison %v", i, got, wantLo)
		}
	}
	if refined < 100 {
		t.Fatalf("only %d of 200 constructed cases refined", refined)
	}
}

// BenchmarkQuantileSamplerNeighbours times one exact draw on two
// neighbouring keys — 2,000 values clustered in a tenth of the grid, and
// the same with one user's value at the far end — at a mild and a sharp
// temperature. The work is the same by construction (TestQuantileSamplerWork);
// the benchmark shows the time follows.
func BenchmarkQuantileSamplerNeighbours(b *testing.B) {
	r := rand.New(rand.NewPCG(71, 72))
	g := uint64(1<<QuantileGridBits + 1)
	without := make([]uint32, 2000)
	for i := range without {
		without[i] = uint32(r.Uint64N(g / 10))
	}
	slices.Sort(without)
	with := append(slices.Clone(without), uint32(g-1))
	rng := securerand.NewSeeded(1)
	for _, lam := range []int64{1, 64} {
		q := &quantileNoise{p: 1, q: 2, cands: g, lamNum: big.NewInt(lam), lamDen: big.NewInt(64), lamBits: 6}
		for _, c := range []struct {
			name string
			vals []uint32
		}{{"without", without}, {"with", with}} {
			b.Run(fmt.Sprintf("lambda=%d_64/%s", lam, c.name), func(b *testing.B) {
				for range b.N {
					if _, err := q.sample(rng, c.vals); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
