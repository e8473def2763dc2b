package ngrams

import (
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestValidSetBruteForce checks V_k against its definition on small random
// S_{k−1}: |V_k| is exact, index and at are inverse bijections between
// [0, |V_k|) and the k-grams w with w[:−1] ∈ S_{k−1} and w[1:] ∈ S_{k−1}, and
// index rejects pairs that do not overlap.
func TestValidSetBruteForce(t *testing.T) {
	rng := securerand.NewSeeded(1)
	for trial := range 300 {
		vocab := 2 + rng.IntN(4)
		k := 2 + rng.IntN(3) // 2..4
		top := randomTuples(rng, vocab, k-1, 1+rng.IntN(12))
		h := newHierarchy(top)
		v := h.validSet(t)

		// Brute force over every k-tuple of the vocabulary.
		want := map[string]bool{}
		var all func(prefix []uint32)
		all = func(w []uint32) {
			if len(w) == k {
				if h.id(w[:k-1]) >= 0 && h.id(w[1:]) >= 0 {
					want[tupleKey(w)] = true
				}
				return
			}
			for x := range uint32(vocab) {
				all(append(slices.Clone(w), x))
			}
		}
		all(nil)
		if v.size != uint64(len(want)) {
			t.Fatalf("trial %d (k=%d, S_{k-1}=%v): |V_k| = %d, brute force %d", trial, k, top, v.size, len(want))
		}
		seen := map[string]bool{}
		for i := range v.size {
			a, b := v.at(i)
			w := h.decode(a, b)
			if !want[tupleKey(w)] {
				t.Fatalf("trial %d: at(%d) = %v is not in V_k", trial, i, w)
			}
			if seen[tupleKey(w)] {
				t.Fatalf("trial %d: at(%d) = %v twice", trial, i, w)
			}
			seen[tupleKey(w)] = true
			if j, ok := v.index(a, b); !ok || j != i {
				t.Fatalf("trial %d: index(at(%d)) = %d, %v", trial, i, j, ok)
			}
		}
		// Pairs of S_{k−1} that do not overlap are not k-grams.
		n := h.sets[k-2].len()
		for a := range int32(n) {
			for b := range int32(n) {
				ta, tb := h.tups[k-2][a], h.tups[k-2][b]
				overlap := slices.Equal(ta[1:], tb[:k-2])
				if _, ok := v.index(a, b); ok != overlap {
					t.Fatalf("trial %d: index(%v, %v) ok = %v, overlap %v", trial, ta, tb, ok, overlap)
				}
			}
		}
	}
}

// TestValidSetBigrams: for k = 2, V_2 = S_1 × S_1.
func TestValidSetBigrams(t *testing.T) {
	s := &gramSet{k: 1, last: []uint32{7, 3, 9}}
	v, err := newValidSet(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v.size != 9 {
		t.Fatalf("|V_2| = %d, want 9", v.size)
	}
}

// TestValidSetEmpty: no (k−1)-grams, no k-grams.
func TestValidSetEmpty(t *testing.T) {
	v, err := newValidSet(&gramSet{k: 2}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if v.size != 0 {
		t.Fatalf("|V_3| = %d, want 0", v.size)
	}
}

// TestPruneMatchesValidSet: the k-grams the pruning keeps are exactly the
// windows of the rows that lie in V_k, and none crosses a row.
func TestPruneMatchesValidSet(t *testing.T) {
	rng := securerand.NewSeeded(2)
	for trial := range 100 {
		vocab := 3 + rng.IntN(3)
		k := 2 + rng.IntN(2)
		h := newHierarchy(randomTuples(rng, vocab, k-1, 2+rng.IntN(10)))
		v := h.validSet(t)
		var users [][][]uint32
		for range 1 + rng.IntN(5) {
			var rows [][]uint32
			for range 1 + rng.IntN(3) {
				row := make([]uint32, rng.IntN(7))
				for i := range row {
					row[i] = uint32(rng.IntN(vocab))
				}
				rows = append(rows, row)
			}
			users = append(users, rows)
		}
		c := newTestCorpus(users)
		cur := h.cur(c)
		itemAt := make([]int32, len(c.tokens))
		keys, _ := c.prune(k, cur, itemAt)
		for r := range c.rowEnd {
			s, end := c.span(uint32(r))
			for p := s; p+k <= end; p++ {
				w := c.tokens[p : p+k]
				inV := h.id(w[:k-1]) >= 0 && h.id(w[1:]) >= 0
				if (itemAt[p] >= 0) != inV {
					t.Fatalf("trial %d: window %v at %d kept=%v, in V_k=%v", trial, w, p, itemAt[p] >= 0, inV)
				}
				if itemAt[p] >= 0 {
					a, b := unpack(keys[itemAt[p]])
					if got := h.decode(a, b); !slices.Equal(got, w) {
						t.Fatalf("trial %d: window %v interned as %v", trial, w, got)
					}
					if _, ok := v.index(a, b); !ok {
						t.Fatalf("trial %d: kept window %v has no index in V_k", trial, w)
					}
				}
			}
		}
	}
}
