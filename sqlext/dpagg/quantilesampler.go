package dpagg

import (
	"errors"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
)

// The quantile's exact sampler, with work that does not depend on the data.
//
// Target. P(j) = w_j/Z over the G+1 candidates, w_j = exp(−λ·e_j) with
// integer energies e_j ≥ 0, min_j e_j = 0 (so 1 ≤ Z ≤ G+1), λ = lamNum/lamDen.
//
// The old sampler proposed j uniformly and accepted with probability w_j:
// (G+1)/Z tries on average, between 1 and 65,537 depending on the data,
// and between neighbouring databases that mean moves by a factor e^(ε_q/2)
// while its geometric tail is not bounded by any factor: a timing channel
// (docs/privacy.md §18). This sampler has a fixed amount of work:
//
//  1. Envelope (G+1 iterations). For every candidate, ŵ_j = math.Exp(−λ̂·e_j)
//     in float64, Ẑ = Σ ŵ_j, the scale s = 2^62·(1 − 2^−34)/Ẑ and the
//     integer c_j = ⌈ŵ_j·s·(1 + 2^−36)⌉ + 1. Claim: c_j ≥ s·w_j for every j,
//     and C = Σ c_j ≤ 2^62. Proof: for λe_j ≤ 4096, λ̂·e_j is within three
//     roundings (3·2^−53 relative) of λe_j and math.Exp is within 1 ulp
//     (its documented accuracy), so ŵ_j ≥ w_j·(1 − 2^−37), and two more
//     roundings leave ŵ_j·s·(1 + 2^−36) ≥ s·w_j; for λe_j > 4096,
//     s·w_j ≤ 2^62·e^−4096 < 1 ≤ c_j. Summing, C ≤ s·Ẑ·(1 + 2^−35) + 2(G+1)
//     (Ẑ is the float sum of G+1 ≤ 2^17 non-negative terms, within 2^−36 of
//     theirs) ≤ 2^62·(1 − 2^−34)(1 + 2^−35) + 2^18 < 2^62. Only the
//     envelope's efficiency, never the output's law, depends on floats.
//  2. Tries (exactly T = 3). Each draws x uniform on [0, 2^62) (one Uint64,
//     exactly uniform), finds by a fixed-step binary search (⌈log2(G+2)⌉
//     steps) the j with C_{j−1} ≤ x < C_j — or none when x ≥ C, a "dummy"
//     proposal that is rejected — then draws V uniform on [0, 1) (two
//     Uint64, its first 128 bits) and accepts iff V < s·w_j/c_j (≤ 1 by 1.).
//     The comparison is exact: w_j is bracketed by expBounds with directed
//     rounding; when the 128 bits do not decide (V's cell meets the
//     bracket, probability ≤ 2^−96: the bracket is within 2^−97 of the threshold, r²/2 below) more bits of V are drawn and the
//     bracket tightened until they do, so the event is exactly V < s·w_j/c_j.
//     A dummy proposal runs the same computation on the last candidate and
//     rejects.
//  3. The output is the first accepted try; the remaining tries are still
//     made. If none of the T accepts, tries continue until one does.
//
// Exactness. Each try outputs j with probability (c_j/2^62)·(s·w_j/c_j) =
// s·w_j/2^62 ∝ w_j, independently, so the first accepted try has exactly
// the law P (rejection sampling; tries after it change nothing).
//
// Work. A try rejects with probability 1 − s·Z/2^62 ≤ 2^−33, so all T = 3
// reject with probability ≤ 2^−99, and a try refines with probability
// ≤ 2^−96. Outside these events the sampler makes exactly 3·3 = 9 draws,
// G+1 iterations of each envelope pass, 3 searches of fixed length and 3
// pairs of expBounds with fixed loop counts: a function of G, λ and the
// level only. Hence for every database the count of draws and iterations
// equals that constant with probability ≥ 1 − 2^−94 per key: the joint law
// of (output, work) is within total variation 2^−94 of (output, constant),
// which is (ε, δ + (1 + e^ε)·2^−94)-DP whenever the output is (ε, δ)-DP.
// The pass that reads the key's kept values (to count, for each candidate,
// the values below and at it) takes n steps, as every aggregate reads its
// input; it is the documented "a release's time grows with its data" of
// docs/privacy.md §12 and one user moves it by at most m steps.
//
// Not covered: the time of individual float and big-float operations
// (math.Exp, big.Float multiplication) is not constant at the instruction
// level; their number is.
const (
	samplerTries = 3  // T
	proposalBits = 62 // proposals are uniform on [0, 2^62)
	expCap       = 256
	expHalvings  = 18 // 256/2^18 = 2^−10: the series argument of the capped path
	expPrec      = 128
	expMaxArg    = 1 << 30 // refinements refuse λ·e beyond (≈ 10^9 values under one key)
)

// samplerWork counts the sampler's work. Everything but Input, Refine and
// Extra is a function of the grid, λ and the level (TestQuantileSamplerWork).
type samplerWork struct {
	Draws  int // Uint64 draws
	Input  int // steps reading the key's kept values (n for n values)
	Grid   int // envelope iterations
	Search int // binary-search steps
	Tries  int
	BigOps int // big.Float operations of the exact comparisons
	Refine int // refinements (probability ≤ 2^−96 per try)
	Extra  int // tries beyond samplerTries (probability ≤ 2^−99)
}

// samplerBufs is one sampler's scratch: energies, float weights and prefix
// sums of the envelope, (G+1)·24 bytes, and its big numbers. A release
// keeps one for all its keys (Pipeline.qbufs); it is not shared across
// releases, whose first allocation would then depend on other analysts'
// quantiles (a warm pool).
type samplerBufs struct {
	e   []uint64
	w   []float64
	pre []uint64
	x   *bigScratch
}

// sample draws a grid index j with probability ∝ exp(−λ·e_j), exactly,
// with data-independent work (see above).
func (q *quantileNoise) sample(rng *rand.Rand, vals []uint32) (int, error) {
	return q.sampleWith(rng, vals, new(samplerBufs), nil)
}

// sampleCounted is sample, adding its work to w.
func (q *quantileNoise) sampleCounted(rng *rand.Rand, vals []uint32, w *samplerWork) (int, error) {
	return q.sampleWith(rng, vals, new(samplerBufs), w)
}

// sampleWith is sample with scratch b, adding its work to w when w is not
// nil.
func (q *quantileNoise) sampleWith(rng *rand.Rand, vals []uint32, b *samplerBufs, w *samplerWork) (int, error) {
	if w == nil {
		w = new(samplerWork)
	}
	env, err := q.envelope(vals, b, w)
	if err != nil {
		return 0, err
	}
	if b.x == nil {
		b.x = newBigScratch()
	}
	out := -1
	for t := 0; t < samplerTries || out < 0; t++ {
		if t >= samplerTries {
			w.Extra++
		}
		j, ok, err := env.try(rng, b.x, w)
		if err != nil {
			return 0, err
		}
		if ok && out < 0 {
			out = j
		}
	}
	return out, nil
}

// envelopeOf is step 1's result.
type envelopeOf struct {
	q   *quantileNoise
	e   []uint64 // e_j
	pre []uint64 // pre[0] = 0, pre[j+1] = c_0 + … + c_j
	s   float64
}

// envelope computes the energies and the envelope of step 1 in G+1
// iterations (plus n steps reading vals, sorted).
func (q *quantileNoise) envelope(vals []uint32, b *samplerBufs, w *samplerWork) (*envelopeOf, error) {
	g := int(q.cands)
	n := int64(len(vals))
	if n > math.MaxInt64/4/q.q {
		return nil, errors.New("dpagg: too many values under one key for a quantile")
	}
	b.e = grow(b.e, g)
	b.w = grow(b.w, g)
	b.pre = grow(b.pre, g+1)
	lam, _ := new(big.Rat).SetFrac(q.lamNum, q.lamDen).Float64()
	lo, hi := 0, 0 // #vals < j, #vals ≤ j
	var z float64
	ws := b.w[:g]
	es := b.e[:g]
	for j := range g {
		for lo < len(vals) && int(vals[lo]) < j {
			lo++
		}
		hi = max(hi, lo)
		for hi < len(vals) && int(vals[hi]) <= j {
			hi++
		}
		e := uint64(max(0, q.p*n-q.q*int64(hi), q.q*int64(lo)-q.p*n))
		es[j] = e
		ws[j] = math.Exp(-lam * float64(e))
		z += ws[j]
	}
	s := math.Ldexp(1-0x1p-34, proposalBits) / z
	pre := b.pre[:g+1]
	pre[0] = 0
	for j, wj := range ws {
		pre[j+1] = pre[j] + uint64(math.Ceil(wj*s*(1+0x1p-36))) + 1
	}
	w.Input += 2 * len(vals) // each value is passed by lo and by hi
	w.Grid += 2 * g
	if b.pre[g] > 1<<proposalBits {
		return nil, errors.New("dpagg: internal error: quantile envelope exceeds 2^62")
	}
	return &envelopeOf{q: q, e: b.e, pre: b.pre, s: s}, nil
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// search returns the number of entries of a (non-decreasing) that are
// ≤ x, in ⌈log2(len(a)+1)⌉ steps whatever x and a are.
func search(a []uint64, x uint64, w *samplerWork) int {
	pos := 0
	for step := 1 << (bits.Len(uint(len(a))) - 1); step > 0; step >>= 1 {
		w.Search++
		if pos+step <= len(a) && a[pos+step-1] <= x {
			pos += step
		}
	}
	return pos
}

// try is one try of step 2: the proposed index and whether it is accepted.
func (v *envelopeOf) try(rng *rand.Rand, x *bigScratch, w *samplerWork) (int, bool, error) {
	w.Tries++
	w.Draws += 3
	u := rng.Uint64() >> (64 - proposalBits)
	g := len(v.e)
	j := search(v.pre[1:], u, w) // C_{j−1} ≤ u < C_j; g when u ≥ C
	dummy := j == g
	j = min(j, g-1)
	c := v.pre[j+1] - v.pre[j]
	vhi, vlo := rng.Uint64(), rng.Uint64()
	ok, err := v.q.accept(rng, v.e[j], c, v.s, vhi, vlo, x, w)
	return j, ok && !dummy, err
}

// bigScratch is the big numbers of one sampler, reused across tries.
type bigScratch struct {
	v, cb, vc, one      big.Int
	num                 big.Int
	nf, df, ylo, yhi    big.Float
	a, bb, sf, tlo, thi big.Float
	cf                  big.Float
	yc, f, er, sq       big.Float
	one1, capf, integer big.Float
	lo, hi, lo2, hi2    big.Float
}

func newBigScratch() *bigScratch {
	x := new(bigScratch)
	x.one.SetInt64(1)
	x.one1.SetInt64(1)
	x.capf.SetInt64(expCap)
	return x
}

// accept reports whether V < s·exp(−λ·e)/c for V uniform on [0, 1) whose
// first 128 bits are vhi:vlo, drawing further bits only when these do not
// decide.
func (q *quantileNoise) accept(rng *rand.Rand, e, c uint64, s float64, vhi, vlo uint64, x *bigScratch, w *samplerWork) (bool, error) {
	v := x.v.SetUint64(vhi)
	v.Lsh(v, 64).Or(v, x.vc.SetUint64(vlo))
	nbits, prec := uint(128), uint(expPrec)
	cb := x.cb.SetUint64(c)
	sf := x.sf.SetFloat64(s)
	for {
		var wlo, whi *big.Float
		if nbits == 128 {
			wlo, whi = q.expBoundsTable(e, x, w)
		} else {
			var err error
			if wlo, whi, err = q.expBoundsSeries(e, prec, w); err != nil {
				return false, err
			}
		}
		// V ∈ [v, v+1)/2^nbits; accept iff V·c < s·w.
		ip := nbits + 64
		a := x.a.SetPrec(ip).SetInt(x.vc.Mul(v, cb))
		bb := x.bb.SetPrec(ip).SetInt(x.vc.Add(&x.vc, cb))
		tlo := x.tlo.SetPrec(prec).SetMode(big.ToNegativeInf).Mul(sf, wlo)
		thi := x.thi.SetPrec(prec).SetMode(big.ToPositiveInf).Mul(sf, whi)
		// The envelope's claim c ≥ s·w_j, checked on every proposal.
		if tlo.Cmp(x.cf.SetInt(cb)) > 0 {
			return false, errors.New("dpagg: internal error: quantile envelope below its weight")
		}
		tlo.SetMantExp(tlo, int(nbits))
		thi.SetMantExp(thi, int(nbits))
		w.BigOps += 2
		if bb.Cmp(tlo) <= 0 {
			return true, nil
		}
		if a.Cmp(thi) >= 0 {
			return false, nil
		}
		w.Refine++
		w.Draws++
		v.Lsh(v, 64).Or(v, x.vc.SetUint64(rng.Uint64()))
		nbits += 64
		prec += 64
	}
}

// expBoundsTable returns lo ≤ exp(−λ·e) ≤ hi in a fixed number of
// operations (the first comparison of every try): y = λ·e is bracketed by
// directed division and each end is evaluated by expNegTable.
func (q *quantileNoise) expBoundsTable(e uint64, x *bigScratch, w *samplerWork) (lo, hi *big.Float) {
	num := x.num.Mul(q.lamNum, x.vc.SetUint64(e))
	nf := x.nf.SetPrec(max(expPrec, uint(num.BitLen()))).SetInt(num)
	df := x.df.SetPrec(max(expPrec, uint(q.lamDen.BitLen()))).SetInt(q.lamDen)
	ylo := x.ylo.SetPrec(expPrec).SetMode(big.ToNegativeInf).Quo(nf, df)
	yhi := x.yhi.SetPrec(expPrec).SetMode(big.ToPositiveInf).Quo(nf, df)
	w.BigOps += 2
	return expNegTable(yhi, false, &x.lo, &x.lo2, x, w), expNegTable(ylo, true, &x.hi, &x.hi2, x, w)
}

// expBoundsSeries returns lo ≤ exp(−λ·e) ≤ hi at precision prec
// (refinements): y = λ·e is halved until below 2^−10 and exp(y) =
// exp(y/2^r)^(2^r) with exp(z) = Σ_{k≤N} z^k/k! (+ the tail bound
// 2·z^(N+1)/(N+1)! for z ≤ 1/2 in the upper bound), every operation
// rounded down for the lower bound and up for the upper one; then
// exp(−y) ∈ [1/upper, 1/lower].
func (q *quantileNoise) expBoundsSeries(e uint64, prec uint, w *samplerWork) (lo, hi *big.Float, err error) {
	num := new(big.Int).Mul(q.lamNum, new(big.Int).SetUint64(e))
	nf := new(big.Float).SetPrec(max(prec, uint(num.BitLen()))).SetInt(num)
	df := new(big.Float).SetPrec(max(prec, uint(q.lamDen.BitLen()))).SetInt(q.lamDen)
	ylo := new(big.Float).SetPrec(prec).SetMode(big.ToNegativeInf).Quo(nf, df)
	yhi := new(big.Float).SetPrec(prec).SetMode(big.ToPositiveInf).Quo(nf, df)
	if yhi.Cmp(new(big.Float).SetInt64(expMaxArg)) > 0 {
		return nil, nil, errors.New("dpagg: quantile energy too large for exact sampling")
	}
	lo, hi = expSeries(ylo, yhi, prec, w)
	return lo, hi, nil
}

// expSeries returns lo ≤ exp(−y) ≤ hi for every y ∈ [ylo, yhi], yhi ≥ 0.
func expSeries(ylo, yhi *big.Float, prec uint, w *samplerWork) (lo, hi *big.Float) {
	r := uint(10)
	if ex := yhi.MantExp(nil); ex > 0 {
		r += uint(ex)
	}
	terms := int(prec/10) + 2
	up := expPosBound(yhi, r, prec, terms, true, w)    // ≥ exp(y)
	down := expPosBound(ylo, r, prec, terms, false, w) // ≤ exp(y)
	lo = new(big.Float).SetPrec(prec).SetMode(big.ToNegativeInf).Quo(big.NewFloat(1), up)
	hi = new(big.Float).SetPrec(prec).SetMode(big.ToPositiveInf).Quo(big.NewFloat(1), down)
	w.BigOps += 2
	return lo, hi
}

// expTableBytes is the number of bytes of y's fraction read from tables;
// the rest r < 2^−48 is bounded by 1 − r ≤ e^−r ≤ 1 − r + r²/2.
const expTableBytes = 6

// expTables holds brackets of exp(−i), i = 0 … expCap, and of
// exp(−b·2^(−8(k+1))), b < 256, k < expTableBytes, at precision expPrec,
// rounded outwards. They are computed when the package is initialised
// (about 2,000 big-float operations), not at the first quantile: a first
// use that paid for them would tell an analyst whether anyone had released
// a quantile since the server started.
var expTab = newExpTables()

type expTablesT struct{ ilo, ihi, flo, fhi [][]*big.Float }

func expTables() *expTablesT { return expTab }

// newExpTables computes the tables as powers of a bracketed base: entry b
// of a table is base^b, with every product rounded down for the lower
// bound and up for the upper one (the base exp(−1) or exp(−2^(−8(k+1)))
// bracketed by expSeries), at 32 bits more than expPrec.
func newExpTables() *expTablesT {
	const prec = expPrec + 32
	w := new(samplerWork)
	powers := func(n int, shift uint) (lo, hi []*big.Float) {
		y := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(1), -int(shift)) // exact
		blo, bhi := expSeries(y, y, prec, w)
		l := new(big.Float).SetPrec(prec).SetMode(big.ToNegativeInf).SetInt64(1)
		h := new(big.Float).SetPrec(prec).SetMode(big.ToPositiveInf).SetInt64(1)
		for range n {
			lo = append(lo, new(big.Float).SetPrec(expPrec).SetMode(big.ToNegativeInf).Set(l))
			hi = append(hi, new(big.Float).SetPrec(expPrec).SetMode(big.ToPositiveInf).Set(h))
			l = new(big.Float).SetPrec(prec).SetMode(big.ToNegativeInf).Mul(l, blo)
			h = new(big.Float).SetPrec(prec).SetMode(big.ToPositiveInf).Mul(h, bhi)
		}
		return lo, hi
	}
	t := new(expTablesT)
	ilo, ihi := powers(expCap+1, 0)
	t.ilo, t.ihi = [][]*big.Float{ilo}, [][]*big.Float{ihi}
	for k := range expTableBytes {
		flo, fhi := powers(256, uint(8*(k+1)))
		t.flo, t.fhi = append(t.flo, flo), append(t.fhi, fhi)
	}
	return t
}

// expNegTable bounds exp(−y) from above (up) or below, y ≥ 0 of precision
// expPrec, in a fixed number of operations: y = i + f, i = min(⌊y⌋, 256),
// f's first 48 bits b_1 … b_6 and its rest r; exp(−y) = exp(−i) ·
// Π_k exp(−b_k·2^(−8k)) · e^(−r). Beyond 256 the lower bound is 0 and the
// upper one exp(−256)'s.
func expNegTable(y *big.Float, up bool, out, tmp *big.Float, x *bigScratch, w *samplerWork) *big.Float {
	t := expTables()
	mode := big.ToNegativeInf
	tab, ftab := t.ilo, t.flo
	if up {
		mode = big.ToPositiveInf
		tab, ftab = t.ihi, t.fhi
	}
	over := y.Cmp(&x.capf) >= 0
	yc := x.yc.SetPrec(expPrec + 16).Set(y) // exact
	if over {
		yc.SetInt64(expCap)
	}
	ii, _ := yc.Int64()                                          // ⌊y⌋ (y ≥ 0)
	f := x.f.SetPrec(expPrec+16).Sub(yc, x.integer.SetInt64(ii)) // exact
	f.SetMantExp(f, 8*expTableBytes)
	fb, _ := f.Uint64() // the table bytes
	f.Sub(f, x.integer.SetUint64(fb))
	rest := f.SetMantExp(f, -8*expTableBytes) // exact, < 2^−48
	out.SetPrec(expPrec).SetMode(mode).Set(tab[0][ii])
	tmp.SetPrec(expPrec).SetMode(mode)
	for k := range expTableBytes { // (not in place: big.Float would allocate)
		b := (fb >> (8 * (expTableBytes - 1 - k))) & 0xff
		out, tmp = tmp.Mul(out, ftab[k][b]), out
	}
	// e^(−r) ∈ [1 − r, 1 − r + r²/2].
	er := x.er.SetPrec(expPrec).SetMode(mode).Sub(&x.one1, rest)
	sq := x.sq.SetPrec(expPrec).SetMode(mode).Mul(rest, rest)
	sq.SetMantExp(sq, -1)
	if !up {
		sq.SetInt64(0) // the same count of operations
	}
	er.Add(er, sq)
	out = tmp.Mul(out, er)
	w.BigOps += expTableBytes + 8
	if over && !up {
		out.SetInt64(0)
	}
	return out
}

// expPosBound bounds exp(y) from above (up) or below, y ≥ 0 with
// y/2^r ≤ 2^−10, in exactly terms·2 + r (+2 when up) operations.
func expPosBound(y *big.Float, r uint, prec uint, terms int, up bool, w *samplerWork) *big.Float {
	mode := big.ToNegativeInf
	if up {
		mode = big.ToPositiveInf
	}
	z := new(big.Float).SetPrec(prec).SetMode(mode).SetMantExp(y, -int(r)) // exact
	sum := new(big.Float).SetPrec(prec).SetMode(mode).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetMode(mode).SetInt64(1)
	k := new(big.Float)
	for i := 1; i <= terms; i++ {
		term.Mul(term, z)
		term.Quo(term, k.SetInt64(int64(i)))
		sum.Add(sum, term)
		w.BigOps += 3
	}
	if up {
		term.Mul(term, z)
		term.Quo(term, k.SetInt64(int64(terms+1)))
		term.Mul(term, big.NewFloat(2))
		sum.Add(sum, term)
		w.BigOps += 4
	}
	for range r {
		sum.Mul(sum, sum)
		w.BigOps++
	}
	return sum
}
