package ngrams

import (
	"context"
	"math/bits"
	"slices"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Bigrams of a frozen corpus
//
// A release over a Corpus (the server's DP_NGRAMS) used to find level 2's
// candidates as every extraction does: a pass over every token position that
// looks each valid bigram up in a map (prune), then, user by user, the
// bigrams at the user's positions, sorted and deduplicated (histogram). The
// corpus does not change, so its bigrams are interned once, when it is
// frozen: corpusBigrams numbers the distinct bigrams (two tokens at
// consecutive positions of one row) in the order of their first position,
// rows in order and positions ascending, which is the order in which prune
// meets them, and keeps each user's distinct bigram ids ascending.
//
// At level 2 a position's bigram is valid iff both of its tokens are in the
// released unigrams S_1 (cur[p] ≥ 0 and cur[p+1] ≥ 0 with cur[p] the S_1 id
// of token p): validity is a property of the bigram, not of the position. So
// the valid bigrams, taken in corpus id order, are met by prune in that same
// order: numbering them densely in corpus id order gives exactly prune's ids
// and keys, and a user's valid bigrams, mapped in ascending corpus id order,
// come out ascending and distinct, exactly the list histogram builds by
// sorting. level, given the bigrams, therefore computes the same candidates, the same
// histogram and the same number of pairs, and draws from rng exactly as
// level does (the user order, then one SampleInPlace per user with a valid
// bigram, in that order): a seeded run releases the same n-grams
// (TestCorpusSameRelease). Its work is one pass over the corpus's
// distinct bigrams and one over the users' distinct (user, bigram) pairs,
// instead of a map operation per token position and a sort per user. The
// work still depends on the data as the old passes did (the corpus's size),
// not on anything else; see docs/privacy.md on timing.
//
// It is used when level 2 is the last level (max_n = 2, the server's usual
// DP_NGRAMS): a level after it needs the bigram at each position (cur),
// which the general path computes.
type bigrams struct {
	// first and second are bigram g's tokens.
	first, second []uint32
	// The distinct bigrams of user u, ascending, are ids[off[u]:off[u+1]].
	off []uint32
	ids []uint32
}

// bytes returns the memory b holds.
func (b *bigrams) bytes() int64 {
	return 4 * int64(len(b.first)+len(b.second)+len(b.off)+len(b.ids))
}

// corpusBigrams interns c's bigrams in first-position order and lists each
// user's distinct bigrams.
func corpusBigrams(c *corpus) *bigrams {
	b := &bigrams{off: make([]uint32, c.users()+1)}
	ids := make(map[uint64]uint32)
	at := make([]uint32, len(c.tokens)) // bigram id at position p (p+1 in the row)
	for r := range c.rowEnd {
		s, end := c.span(uint32(r))
		for p := s; p+2 <= end; p++ {
			key := uint64(c.tokens[p])<<32 | uint64(c.tokens[p+1])
			id, ok := ids[key]
			if !ok {
				id = uint32(len(b.first))
				ids[key] = id
				b.first = append(b.first, c.tokens[p])
				b.second = append(b.second, c.tokens[p+1])
			}
			at[p] = id
		}
	}
	// seen[g] is 1 + the last user listed with bigram g.
	seen := make([]uint32, len(b.first))
	var mine []uint32
	for u := range c.users() {
		mine = mine[:0]
		for _, r := range c.rowsOf(uint32(u)) {
			s, end := c.span(r)
			for p := s; p+2 <= end; p++ {
				if g := at[p]; seen[g] != uint32(u)+1 {
					seen[g] = uint32(u) + 1
					mine = append(mine, g)
				}
			}
		}
		slices.Sort(mine)
		b.ids = append(b.ids, mine...)
		b.off[u+1] = uint32(len(b.ids))
	}
	return b
}

// candidates numbers the valid bigrams of level 2 in corpus id order, as
// prune numbers them: it returns their keys (the S_1 ids of their two
// tokens) and valid, the set of valid corpus bigrams with the rank that
// gives each its candidate id (candidateSet.id). s1id maps a token to its id in
// S_1, or −1.
//
// The pass over the corpus's distinct bigrams is without a branch on
// validity, which a release's S_1 makes unpredictable: v is 1 iff x and y
// are both ≥ 0 (their sign bits both 0), gathered 64 bigrams to a word.
// The keys are then read off the set bits in ascending order. The set
// takes 12 bytes per 64 bigrams where the dense array it replaces took 4
// bytes a bigram (1.9 MB for the demo's 486,000 distinct bigrams, written
// and then read at random by every user's list): the keys and candidate
// ids are those of a pass that appends the valid bigrams' keys in order
// (TestCandidatesAsAppend, TestCorpusSameRelease), and the work is the
// same function of the corpus and S_1.
func (b *bigrams) candidates(s1id []int32) (keys []uint64, valid candidateSet) {
	g := len(b.first)
	valid = make(candidateSet, (g+63)/64)
	n := uint32(0)
	for w := range valid {
		lo := w * 64
		first, second := b.first[lo:min(lo+64, g)], b.second[lo:min(lo+64, g)]
		var word uint64
		for j, t := range first {
			x, y := s1id[t], s1id[second[j]]
			word |= uint64(uint32(^(x|y))>>31) << j
		}
		valid[w] = rankWord{bits: word, base: n}
		n += uint32(bits.OnesCount64(word))
	}
	keys = make([]uint64, 0, n)
	for w, rw := range valid {
		for word := rw.bits; word != 0; word &= word - 1 {
			g := w*64 + bits.TrailingZeros64(word)
			keys = append(keys, pack(s1id[b.first[g]], s1id[b.second[g]]))
		}
	}
	return keys, valid
}

// candidateSet is a set of corpus bigram ids with ranks: word w holds ids
// 64w … 64w+63 and the number of members below 64w.
type candidateSet []rankWord

type rankWord struct {
	bits uint64
	base uint32
}

// id returns bigram g's candidate id (its rank among the members) and 1 if
// g is a member, or an unspecified id and 0 if it is not.
func (v candidateSet) id(g uint32) (id uint32, in int) {
	rw := v[g>>6]
	bit := uint64(1) << (g & 63)
	return rw.base + uint32(bits.OnesCount64(rw.bits&(bit-1))), int(rw.bits>>(g&63)) & 1
}

// histogram is corpus.histogram at level 2 from the users' bigram lists:
// for each user in order, the user's valid bigrams (ascending and distinct,
// as corpus.histogram sorts them) bounded by bound and added with rule's
// update. It returns H_2 and the number of distinct (user, valid bigram)
// pairs before bounding.
func (b *bigrams) histogram(ctx context.Context, rule setunion.Mechanism, gamma float64, n int, order []uint32, valid candidateSet, bound func(u uint32, items []uint32) []uint32) (*setunion.Histogram, int64, error) {
	h := setunion.NewHistogram(rule, gamma, n)
	var items []uint32
	var pairs int64
	for i, u := range order {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		// Without a branch on validity: about a fifth of the pairs are
		// valid, in no predictable pattern.
		list := b.ids[b.off[u]:b.off[u+1]]
		items = slices.Grow(items[:0], len(list))[:len(list)]
		m := 0
		for _, g := range list {
			id, in := valid.id(g)
			items[m] = id
			m += in
		}
		items = items[:m]
		if len(items) == 0 {
			continue
		}
		pairs += int64(len(items))
		h.Update(bound(u, items), nil)
	}
	return h, pairs, nil
}
