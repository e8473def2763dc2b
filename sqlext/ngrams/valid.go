package ngrams

import (
	"fmt"
	"math/bits"
	"sort"
)

// gramSet is S_k, the k-grams released at level k, as ids 0..len−1.
//
// An element e of S_k with k ≥ 2 is the pair (pre[e], suf[e]) of the ids in
// S_{k−1} of its (k−1)-token prefix and suffix. Both exist because every
// released k-gram lies in V_k (real ones are pruned to V_k, spurious ones are
// drawn from it), and the pair identifies the k-gram. last[e] is its last
// token id. For k = 1, pre and suf are nil: every unigram has the empty
// 0-gram as prefix and suffix, id 0; last[e] is the token.
type gramSet struct {
	k        int
	pre, suf []int32
	last     []uint32
}

func (s *gramSet) len() int { return len(s.last) }

// prefix returns the id in S_{k−1} of element e's (k−1)-token prefix.
func (s *gramSet) prefix(e int32) int32 {
	if s.k == 1 {
		return 0
	}
	return s.pre[e]
}

// suffix returns the id in S_{k−1} of element e's (k−1)-token suffix.
func (s *gramSet) suffix(e int32) int32 {
	if s.k == 1 {
		return 0
	}
	return s.suf[e]
}

// maxValid bounds |V_k|: the spurious count is drawn from a binomial whose
// trial count must be exact in a float64.
const maxValid = 1 << 53

// validSet indexes V_{k} = { w : w[:−1] ∈ S_{k−1} and w[1:] ∈ S_{k−1} }
// (docs/privacy.md §8) without materialising it.
//
// A k-gram x·m·z (x, z tokens, m a (k−2)-gram) is valid iff a = x·m and
// b = m·z are both in S_{k−1}; so V_k is the disjoint union over the middles
// m of L(m) × R(m), where L(m) are the elements of S_{k−1} whose suffix is m
// and R(m) those whose prefix is m, and |V_k| = Σ_m |L(m)|·|R(m)| exactly.
// Middles are ids in S_{k−2} (for k = 2, the single empty 0-gram), because
// every prefix and suffix of an element of S_{k−1} is in S_{k−2}.
//
// Indices enumerate V_k middle by middle, then a ∈ L(m), then b ∈ R(m):
// index(a, b) = off[m] + pos_L(a)·|R(m)| + pos_R(b).
type validSet struct {
	size uint64
	// off[m] is the index of the first k-gram with middle m; off[nMid] = size.
	off []uint64
	// L(m) = left[leftStart[m]:leftStart[m+1]], R(m) likewise; leftPos[a] and
	// rightPos[b] are positions within their lists.
	left, right           []int32
	leftStart, rightStart []uint32
	leftPos, rightPos     []uint32
	prev                  *gramSet
}

// newValidSet indexes V_k from prev = S_{k−1}; nMid = |S_{k−2}| (1 if k = 2).
func newValidSet(prev *gramSet, nMid int) (*validSet, error) {
	n := prev.len()
	v := &validSet{
		prev:       prev,
		off:        make([]uint64, nMid+1),
		left:       make([]int32, n),
		right:      make([]int32, n),
		leftStart:  make([]uint32, nMid+1),
		rightStart: make([]uint32, nMid+1),
		leftPos:    make([]uint32, n),
		rightPos:   make([]uint32, n),
	}
	// Counting sort of S_{k−1} by suffix (L) and by prefix (R).
	for e := range n {
		v.leftStart[prev.suffix(int32(e))]++
		v.rightStart[prev.prefix(int32(e))]++
	}
	var ls, rs uint32
	for m := range nMid {
		cl, cr := v.leftStart[m], v.rightStart[m]
		v.leftStart[m], v.rightStart[m] = ls, rs
		ls += cl
		rs += cr
		hi, lo := bits.Mul64(uint64(cl), uint64(cr))
		sum, carry := bits.Add64(v.off[m], lo, 0)
		if hi != 0 || carry != 0 || sum > maxValid {
			return nil, fmt.Errorf("level %d has more than 2^53 valid %d-grams; lower max_n, epsilon or max_items", prev.k+1, prev.k+1)
		}
		v.off[m+1] = sum
	}
	v.leftStart[nMid], v.rightStart[nMid] = ls, rs
	fillL := append([]uint32(nil), v.leftStart[:nMid]...)
	fillR := append([]uint32(nil), v.rightStart[:nMid]...)
	for e := range n {
		m := prev.suffix(int32(e))
		v.leftPos[e] = fillL[m] - v.leftStart[m]
		v.left[fillL[m]] = int32(e)
		fillL[m]++
		m = prev.prefix(int32(e))
		v.rightPos[e] = fillR[m] - v.rightStart[m]
		v.right[fillR[m]] = int32(e)
		fillR[m]++
	}
	v.size = v.off[nMid]
	return v, nil
}

// index returns the index in V_k of the k-gram whose prefix is a and suffix
// is b (ids in S_{k−1}); ok is false if a and b do not overlap (then a·b is
// not a k-gram).
func (v *validSet) index(a, b int32) (idx uint64, ok bool) {
	m := v.prev.suffix(a)
	if v.prev.prefix(b) != m {
		return 0, false
	}
	nr := uint64(v.rightStart[m+1] - v.rightStart[m])
	return v.off[m] + uint64(v.leftPos[a])*nr + uint64(v.rightPos[b]), true
}

// at returns the prefix and suffix ids of the k-gram with index i < size.
func (v *validSet) at(i uint64) (a, b int32) {
	// The middle m whose range [off[m], off[m+1]) holds i.
	m := sort.Search(len(v.off)-1, func(m int) bool { return v.off[m+1] > i })
	q := i - v.off[m]
	nr := uint64(v.rightStart[m+1] - v.rightStart[m])
	return v.left[uint64(v.leftStart[m])+q/nr], v.right[uint64(v.rightStart[m])+q%nr]
}
