package integration

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// TestPerKeyCapOracle measures heterogeneous per-key caps for COUNT(*)
// (issue 21 target (a); docs/accuracy.md §5, "Fifth look") on the demo's
// top 20 words: user u counts x_uk = min(v_uk, m_k, left·m_k) of key k,
// walking its keys with the most rows first, left starting at d units and
// falling by x_uk/m_k. The scaled vector (x_uk/m_k) has entries ≤ 1 and sum
// ≤ d, so ℓ2 norm ≤ √d, and key k's noise is κ·√d·m_k (κ the default plan's
// σ per unit of ℓ2 sensitivity): the row budget of today is m_k = m for
// every key. The caps tried, each with an oracle over d and its parameter
// (the truth used where a release would use a DP output):
//
//   - m_k = c·N_k (N_k the key's rows): a relative cap;
//   - m_k = c·U_k (U_k the key's users, what key selection counts);
//   - m_k = the r-th largest v_uk of key k (the per-key tail rank where the
//     rows a step of the cap loses, r users, equal the noise it adds,
//     √(2/π)·κ·√d; an upper bound: no release knows it).
//
// Run with DPSQL_ORACLE=1.
func TestPerKeyCapOracle(t *testing.T) {
	if os.Getenv("DPSQL_ORACLE") == "" {
		t.Skip("set DPSQL_ORACLE=1 for the per-key caps' oracle on the demo")
	}
	per := demoPer(t)
	perKeyOracle(t, "demo top 20", per, 20)
}

// TestPerKeyCapOraclePython is TestPerKeyCapOracle on git_python_ecosystem's
// words, top 20 and top 100. Run with DPSQL_ORACLE=1.
func TestPerKeyCapOraclePython(t *testing.T) {
	if os.Getenv("DPSQL_ORACLE") == "" {
		t.Skip("set DPSQL_ORACLE=1 for the per-key caps' oracle on git_python_ecosystem")
	}
	per := pythonPer(t)
	perKeyOracle(t, "git_python_ecosystem top 20", per, 20)
	perKeyOracle(t, "git_python_ecosystem top 100", per, 100)
}

// pkUser is one user's rows per key, descending, with the key's id.
type pkUser struct {
	c   []float64
	key []int
}

// pkData is the per-key oracle's input.
type pkData struct {
	us     []pkUser
	n, u   []float64   // rows and users per key id
	vs     [][]float64 // per key id, its users' rows, descending
	topIdx []int       // key id → index among the top keys, or −1
	truth  []float64
	kappa  float64
	r      *rand.Rand
}

func newPKData(per map[string]map[string]int, topN int, kappa float64) *pkData {
	ids := map[string]int{}
	var n []float64
	for _, m := range per {
		for w, c := range m {
			i, ok := ids[w]
			if !ok {
				i = len(n)
				ids[w] = i
				n = append(n, 0)
			}
			n[i] += float64(c)
		}
	}
	order := make([]int, len(n))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return n[order[a]] > n[order[b]] })
	d := &pkData{n: n, u: make([]float64, len(n)), vs: make([][]float64, len(n)), topIdx: make([]int, len(n)), kappa: kappa, r: rand.New(rand.NewPCG(5, 6))}
	for i := range d.topIdx {
		d.topIdx[i] = -1
	}
	for j, k := range order[:topN] {
		d.topIdx[k] = j
		d.truth = append(d.truth, n[k])
	}
	for _, m := range per {
		var u pkUser
		for w, c := range m {
			u.c = append(u.c, float64(c))
			u.key = append(u.key, ids[w])
		}
		o := make([]int, len(u.c))
		for i := range o {
			o[i] = i
		}
		sort.Slice(o, func(a, b int) bool { return u.c[o[a]] > u.c[o[b]] })
		c, k := slices.Clone(u.c), slices.Clone(u.key)
		for i, j := range o {
			u.c[i], u.key[i] = c[j], k[j]
			d.u[k[j]]++
			d.vs[k[j]] = append(d.vs[k[j]], c[j])
		}
		d.us = append(d.us, u)
	}
	for k := range d.vs {
		slices.Sort(d.vs[k])
		slices.Reverse(d.vs[k])
	}
	return d
}

// eval returns the mean over draws of the median relative error over the
// top keys, and the same without noise, for caps mk (per key id) and d
// units per user.
func (p *pkData) eval(mk []float64, d float64, draws int) (float64, float64) {
	out := make([]float64, len(p.truth))
	for _, u := range p.us {
		left := d
		for i, v := range u.c {
			if left <= 0 {
				break
			}
			m := mk[u.key[i]]
			x := min(v, m, left*m)
			left -= x / m
			if j := p.topIdx[u.key[i]]; j >= 0 {
				out[j] += x
			}
		}
	}
	sig := make([]float64, len(p.truth))
	for k, j := range p.topIdx {
		if j >= 0 {
			sig[j] = p.kappa * math.Sqrt(d) * mk[k]
		}
	}
	return p.score(out, sig, draws)
}

// score returns the mean over draws of the median relative error over the
// top keys of out with Gaussian noise of standard deviation sig[j] on top
// key j, and the same without noise.
func (p *pkData) score(out, sig []float64, draws int) (e, bias float64) {
	rel := make([]float64, len(p.truth))
	med := func() float64 {
		slices.Sort(rel)
		n := len(rel)
		return (rel[(n-1)/2] + rel[n/2]) / 2
	}
	for j := range rel {
		rel[j] = math.Abs(out[j]-p.truth[j]) / p.truth[j]
	}
	bias = med()
	for range draws {
		for j := range rel {
			rel[j] = math.Abs(out[j]+sig[j]*p.r.NormFloat64()-p.truth[j]) / p.truth[j]
		}
		e += med() / float64(draws)
	}
	return e, bias
}

// evalGlobal is eval with a uniform cap m and each user walking its keys in
// the order of the keys' total rows (most first; in a release, an order a
// DP output fixes, such as the selection's noisy counts), not its own.
func (p *pkData) evalGlobal(m, d float64, draws int) (float64, float64) {
	out := make([]float64, len(p.truth))
	var ks []int
	for _, u := range p.us {
		ks = append(ks[:0], u.key...)
		cs := map[int]float64{}
		for i, k := range u.key {
			cs[k] = u.c[i]
		}
		sort.Slice(ks, func(a, b int) bool { return p.n[ks[a]] > p.n[ks[b]] })
		left := d * m
		for _, k := range ks {
			if left <= 0 {
				break
			}
			x := min(cs[k], m, left)
			left -= x
			if j := p.topIdx[k]; j >= 0 {
				out[j] += x
			}
		}
	}
	sig := make([]float64, len(p.truth))
	for j := range sig {
		sig[j] = p.kappa * math.Sqrt(d) * m
	}
	return p.score(out, sig, draws)
}

func perKeyOracle(t *testing.T, name string, per map[string]map[string]int, topN int) {
	o := dpagg.Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
	o.Aggregates = []dpagg.Aggregate{{Kind: dpagg.CountRows}}
	plan, err := dpagg.Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	p := newPKData(per, topN, plan.UnitSigma)
	t.Logf("%s: %d users, %d keys, unit σ %.3f", name, len(p.us), len(p.n), p.kappa)
	ds := []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}
	type rule struct {
		name   string
		params []float64
		caps   func(par float64) []float64
	}
	var cs, ms []float64
	for k := -40; k <= 0; k++ {
		cs = append(cs, math.Pow(2, float64(k)/2))
	}
	rs := []float64{1, 2, 4, 8, 12, 17, 24, 32, 48, 64, 128}
	for k := 0; k <= 20; k++ {
		ms = append(ms, math.Round(math.Pow(2, float64(k)/2)))
	}
	rules := []rule{
		{"uniform m (today's row budget)", ms, func(m float64) []float64 {
			out := make([]float64, len(p.n))
			for k := range out {
				out[k] = m
			}
			return out
		}},
		{"m_k = c·N_k", cs, func(c float64) []float64 {
			out := make([]float64, len(p.n))
			for k := range out {
				out[k] = max(1, c*p.n[k])
			}
			return out
		}},
		{"m_k = c·U_k", cs, func(c float64) []float64 {
			out := make([]float64, len(p.n))
			for k := range out {
				out[k] = max(1, c*p.u[k])
			}
			return out
		}},
		{"m_k = r-th heaviest writer of k", rs, func(r float64) []float64 {
			out := make([]float64, len(p.n))
			for k := range out {
				out[k] = max(1, p.vs[k][min(int(r)-1, len(p.vs[k])-1)])
			}
			return out
		}},
	}
	{
		best, bd, bm, bb := math.Inf(1), 0.0, 0.0, 0.0
		byD := ""
		for _, d := range ds {
			bestD, bmD := math.Inf(1), 0.0
			for _, m := range ms {
				e, b := p.evalGlobal(m, d, 100)
				if e < bestD {
					bestD, bmD = e, m
				}
				if e < best {
					best, bd, bm, bb = e, d, m, b
				}
			}
			byD += fmt.Sprintf(" d=%v: %.3f (m %v);", d, bestD, bmD)
		}
		t.Logf("%s, uniform m, budget walked in the keys' global order: best d %v, m %v: error %.3f, bias %.3f; per d:%s", name, bd, bm, best, bb, byD)
	}
	for _, ru := range rules {
		best, bd, bp, bb := math.Inf(1), 0.0, 0.0, 0.0
		byD := ""
		for _, d := range ds {
			bestD, bpD := math.Inf(1), 0.0
			for _, par := range ru.params {
				e, b := p.eval(ru.caps(par), d, 100)
				if e < bestD {
					bestD, bpD = e, par
				}
				if e < best {
					best, bd, bp, bb = e, d, par, b
				}
			}
			byD += fmt.Sprintf(" d=%v: %.3f (%.4g);", d, bestD, bpD)
		}
		if ru.name == "m_k = c·N_k" {
			for _, d := range []float64{32, 64, 128} {
				line := ""
				for _, c := range cs[18:34] {
					e, _ := p.eval(ru.caps(c), d, 100)
					line += fmt.Sprintf(" %.4g: %.3f;", c, e)
				}
				t.Logf("%s, m_k = c·N_k, d = %v, error per c:%s", name, d, line)
			}
		}
		e, b := p.eval(ru.caps(bp), bd, 1000)
		t.Logf("%s, %s: best d %v, parameter %.4g: error %.3f (re-drawn %.3f), bias %.3f/%.3f; per d:%s", name, ru.name, bd, bp, best, e, bb, b, byD)
	}
}
