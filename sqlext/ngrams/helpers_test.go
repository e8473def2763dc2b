package ngrams

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// tupleKey renders a token tuple as a map key.
func tupleKey(t []uint32) string { return fmt.Sprint(t) }

// hierarchy is S_1..S_{k−1} built from an arbitrary set of (k−1)-token
// tuples: S_j holds every j-token subsequence (window) of the given tuples,
// so every element's prefix and suffix are in the level below, as in a run.
// V_k depends only on S_{k−1}, which is exactly the given set.
type hierarchy struct {
	sets []*gramSet
	ids  []map[string]int32 // ids[j−1][tupleKey(t)] = id of t in S_j
	tups [][][]uint32       // tups[j−1][id] = tuple
}

func newHierarchy(top [][]uint32) *hierarchy {
	n := len(top[0])
	h := &hierarchy{}
	for j := 1; j <= n; j++ {
		s := &gramSet{k: j}
		ids := map[string]int32{}
		var tups [][]uint32
		for _, t := range top {
			for i := 0; i+j <= n; i++ {
				w := t[i : i+j]
				if _, ok := ids[tupleKey(w)]; ok {
					continue
				}
				ids[tupleKey(w)] = int32(len(tups))
				tups = append(tups, slices.Clone(w))
				s.last = append(s.last, w[j-1])
				if j > 1 {
					s.pre = append(s.pre, h.ids[j-2][tupleKey(w[:j-1])])
					s.suf = append(s.suf, h.ids[j-2][tupleKey(w[1:])])
				}
			}
		}
		h.sets = append(h.sets, s)
		h.ids = append(h.ids, ids)
		h.tups = append(h.tups, tups)
	}
	return h
}

// id returns the id of tuple t in S_len(t), or −1.
func (h *hierarchy) id(t []uint32) int32 {
	if id, ok := h.ids[len(t)-1][tupleKey(t)]; ok {
		return id
	}
	return -1
}

// validSet indexes V_{k} for k = len(top tuples) + 1.
func (h *hierarchy) validSet(tb testing.TB) *validSet {
	tb.Helper()
	top := len(h.sets)
	nMid := 1
	if top > 1 {
		nMid = h.sets[top-2].len()
	}
	v, err := newValidSet(h.sets[top-1], nMid)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// decode returns the k-gram tuple of the pair (a, b) of ids in S_{k−1}.
func (h *hierarchy) decode(a, b int32) []uint32 {
	top := len(h.sets)
	return append(slices.Clone(h.tups[top-1][a]), h.sets[top-1].last[b])
}

// cur returns, per token position of c, the id in S_{k−1} of the (k−1)-gram
// starting there (within its row), or −1.
func (h *hierarchy) cur(c *corpus) []int32 {
	k1 := len(h.sets)
	cur := make([]int32, len(c.tokens))
	for r := range c.rowEnd {
		s, end := c.span(uint32(r))
		for p := s; p < end; p++ {
			cur[p] = -1
			if p+k1 <= end {
				cur[p] = h.id(c.tokens[p : p+k1])
			}
		}
	}
	return cur
}

// randomTuples returns m distinct random tuples of length n over vocab
// tokens (m is capped at vocab^n).
func randomTuples(rng *rand.Rand, vocab, n, m int) [][]uint32 {
	total := int(math.Pow(float64(vocab), float64(n)))
	m = min(m, total)
	var out [][]uint32
	for _, code := range rng.Perm(total)[:m] {
		t := make([]uint32, n)
		for i := n - 1; i >= 0; i-- {
			t[i] = uint32(code % vocab)
			code /= vocab
		}
		out = append(out, t)
	}
	return out
}

// newTestCorpus builds a corpus from users → rows → token ids; user u is
// named "u<u>".
func newTestCorpus(users [][][]uint32) *corpus {
	c := &corpus{userStart: []uint32{0}}
	for u, rows := range users {
		c.names = append(c.names, fmt.Sprintf("u%d", u))
		for _, row := range rows {
			c.tokens = append(c.tokens, row...)
			c.rowEnd = append(c.rowEnd, uint32(len(c.tokens)))
			c.byUser = append(c.byUser, uint32(len(c.rowEnd)-1))
		}
		c.userStart = append(c.userStart, uint32(len(c.byUser)))
	}
	return c
}

// chiSquareP returns the p-value of observed counts against expected counts,
// pooling adjacent cells until each expects at least 5.
func chiSquareP(tb testing.TB, observed, expected []float64) float64 {
	tb.Helper()
	var obs, exp []float64
	var o, e float64
	for i := range observed {
		o += observed[i]
		e += expected[i]
		if e >= 5 {
			obs, exp = append(obs, o), append(exp, e)
			o, e = 0, 0
		}
	}
	if len(exp) == 0 {
		tb.Fatal("chi-square: no cell expects 5 or more")
	}
	obs[len(obs)-1] += o
	exp[len(exp)-1] += e
	if len(exp) < 2 {
		tb.Fatal("chi-square: fewer than two cells after pooling")
	}
	x := 0.0
	for i := range exp {
		d := obs[i] - exp[i]
		x += d * d / exp[i]
	}
	return distuv.ChiSquared{K: float64(len(exp) - 1)}.Survival(x)
}
