package dpagg

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// topKeys is the comparison sort aggregateKeys used before topsort.go: it
// keeps in idx the d entries with the most rows (rows(i) the row count of
// entry i), ties broken by the smaller tie(i). The reference of
// TestTopEntriesAsSort.
func topKeys(idx []int32, d int, rows, tie func(int32) uint64) []int32 {
	if len(idx) <= d {
		return idx
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmp.Compare(rows(b), rows(a)); c != 0 {
			return c
		}
		return cmp.Compare(tie(a), tie(b))
	})
	return idx[:d]
}

// choiceKeysBySort is the comparison sort choiceKeys used before
// topsort.go, the reference of TestTopEntriesAsSort.
func choiceKeysBySort(p *Pipeline, d int) [][]int32 {
	s := p.stride
	out := make([][]int32, len(p.lists))
	for u, l := range p.lists {
		idx := make([]int32, len(l)/s)
		for i := range idx {
			idx[i] = int32(i)
		}
		if len(idx) > d {
			slices.SortFunc(idx, func(a, b int32) int {
				ra, rb := l[int(a)*s]&0xffffffff, l[int(b)*s]&0xffffffff
				if c := cmp.Compare(rb, ra); c != 0 {
					return c
				}
				return cmp.Compare(p.keyNames[l[int(a)*s]>>32], p.keyNames[l[int(b)*s]>>32])
			})
			idx = idx[:d]
		}
		out[u] = idx
	}
	return out
}

// TestTopEntriesAsSort: choiceKeys and aggregateKeys keep the entries, in
// the order, of the comparison sorts they replace, on random users whose
// key names share long prefixes (so the names' 8-byte prefixes tie), with
// few distinct row counts (so rows tie), for every d.
func TestTopEntriesAsSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		nKeys := 1 + r.IntN(60)
		names := make([]string, nKeys)
		seen := map[string]bool{}
		for k := range names {
			for {
				var b strings.Builder
				b.WriteString(strings.Repeat("\x00a", r.IntN(6)))
				for range r.IntN(4) {
					b.WriteByte(byte(r.IntN(3)))
				}
				if n := b.String(); !seen[n] {
					seen[n], names[k] = true, n
					break
				}
			}
		}
		stride := 1 + r.IntN(3)
		p := &Pipeline{stride: stride, keyNames: names, plan: &Plan{}}
		p.keyTie = make([]uint64, nKeys)
		for k := range p.keyTie {
			p.keyTie[k] = r.Uint64() % 8 // ties of the hash too
			if trial%2 == 0 {
				p.keyTie[k] = tieHash(uint64(trial), names[k])
			}
		}
		for range 1 + r.IntN(8) {
			var l []uint64
			for _, k := range r.Perm(nKeys)[:r.IntN(nKeys+1)] {
				e := make([]uint64, stride)
				e[0] = uint64(k)<<32 | uint64(1+r.IntN(3))
				l = append(l, e...)
			}
			p.lists = append(p.lists, l)
		}
		for d := 1; d <= nKeys+1; d++ {
			if got, want := p.choiceKeys(d), choiceKeysBySort(p, d); !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("trial %d d=%d: choiceKeys %v, the sort %v", trial, d, got, want)
			}
			p.plan.AggregateGroups = d
			for _, l := range p.lists {
				got := slices.Clone(p.aggregateKeys(l, nil))
				idx := make([]int32, len(l)/stride)
				for i := range idx {
					idx[i] = int32(i)
				}
				want := topKeys(idx, d, func(i int32) uint64 { return l[int(i)*stride] & 0xffffffff },
					func(i int32) uint64 { return p.keyTie[l[int(i)*stride]>>32] })
				if !hashTies(p, l, want) && !slices.Equal(got, want) {
					t.Fatalf("trial %d d=%d: aggregateKeys %v, the sort %v", trial, d, got, want)
				}
			}
		}
	}
}

// hashTies reports whether two of the user's entries have equal rows and
// equal tie hashes: the sort before left their order to pdqsort, so only
// the rest is compared.
func hashTies(p *Pipeline, l []uint64, _ []int32) bool {
	type rt struct{ r, t uint64 }
	seen := map[rt]bool{}
	for i := 0; i < len(l); i += p.stride {
		k := rt{l[i] & 0xffffffff, p.keyTie[l[i]>>32]}
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// BenchmarkChoiceKeys compares choiceKeys with the comparison sort it
// replaced on 2,000 users whose numbers of keys follow a power law (up
// to 2,000 keys, one or two rows each), as the words of a corpus.
//
//	go test -run '^$' -bench ChoiceKeys ./sqlext/dpagg
func BenchmarkChoiceKeys(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const nKeys = 20_000
	names := make([]string, nKeys)
	for k := range names {
		names[k] = "word" + strings.Repeat("x", k%7) + string(rune('a'+k%26)) + string(rune('a'+k/26%26)) + string(rune('a'+k/676%26))
	}
	p := &Pipeline{stride: 1, keyNames: names, plan: &Plan{}}
	for range 2000 {
		n := min(nKeys, int(1/(r.Float64()+0.0005)))
		var l []uint64
		for _, k := range r.Perm(nKeys)[:n] {
			l = append(l, uint64(k)<<32|uint64(1+r.IntN(2)))
		}
		slices.Sort(l)
		p.lists = append(p.lists, l)
	}
	for _, d := range []int{10, 100} {
		b.Run("records/d="+strconv.Itoa(d), func(b *testing.B) {
			for b.Loop() {
				p.choiceKeys(d)
			}
		})
		b.Run("sort/d="+strconv.Itoa(d), func(b *testing.B) {
			for b.Loop() {
				choiceKeysBySort(p, d)
			}
		})
	}
}
