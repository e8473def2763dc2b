package ngrams

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCandidatesAsAppend compares candidates with the plain numbering it
// replaces: the valid bigrams (both tokens in S_1) appended in corpus id
// order, their keys, and each valid bigram's candidate id; on random bigram
// tables of every length around the 64-bit words and random S_1 of every
// density.
func TestCandidatesAsAppend(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for trial := range 300 {
		tokens := 1 + r.IntN(200)
		g := r.IntN(400)
		if trial < 10 {
			g = []int{0, 1, 63, 64, 65, 127, 128, 129, 191, 192}[trial]
		}
		b := &bigrams{first: make([]uint32, g), second: make([]uint32, g)}
		for i := range g {
			b.first[i], b.second[i] = uint32(r.IntN(tokens)), uint32(r.IntN(tokens))
		}
		s1id := make([]int32, tokens)
		density, next := r.Float64(), int32(0)
		for i := range s1id {
			s1id[i] = -1
			if r.Float64() < density {
				s1id[i] = next
				next++
			}
		}
		var want []uint64
		wantID := make([]int, g)
		for i := range g {
			wantID[i] = -1
			if x, y := s1id[b.first[i]], s1id[b.second[i]]; x >= 0 && y >= 0 {
				wantID[i] = len(want)
				want = append(want, pack(x, y))
			}
		}
		keys, valid := b.candidates(s1id)
		if !slices.Equal(keys, want) {
			t.Fatalf("trial %d: keys differ", trial)
		}
		for i := range g {
			id, in := valid.id(uint32(i))
			if (in == 1) != (wantID[i] >= 0) || in == 1 && int(id) != wantID[i] {
				t.Fatalf("trial %d, bigram %d: id %d in %d, want %d", trial, i, id, in, wantID[i])
			}
		}
	}
}
