package ngrams

import (
	"context"
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
// tokens) and dense, each corpus bigram's candidate id + 1, or 0 if it is
// not valid. s1id maps a token to its id in S_1, or −1.
//
// Both passes are without a branch on validity, which a release's S_1
// makes unpredictable (a mispredicted branch per bigram was most of the
// pass's time): the first numbers the valid bigrams (v is 1 iff x and y
// are both ≥ 0, their sign bits both 0), the second writes every bigram's
// key to its slot, the invalid ones to a slot 0 that is dropped. The keys
// and dense are those of a pass that appends the valid bigrams' keys in
// order (TestCorpusSameRelease), and the work is the same function of the
// corpus and S_1.
func (b *bigrams) candidates(s1id []int32) (keys []uint64, dense []uint32) {
	dense = make([]uint32, len(b.first))
	n := uint32(0)
	for g := range dense {
		x, y := s1id[b.first[g]], s1id[b.second[g]]
		v := uint32(^(x | y)) >> 31
		n += v
		dense[g] = n * v
	}
	keys = make([]uint64, n+1)
	for g, d := range dense {
		keys[d] = pack(s1id[b.first[g]], s1id[b.second[g]])
	}
	return keys[1:], dense
}

// histogram is corpus.histogram at level 2 from the users' bigram lists:
// for each user in order, the user's valid bigrams (ascending and distinct,
// as corpus.histogram sorts them) bounded by bound and added with rule's
// update. It returns H_2 and the number of distinct (user, valid bigram)
// pairs before bounding.
func (b *bigrams) histogram(ctx context.Context, rule setunion.Mechanism, gamma float64, n int, order []uint32, dense []uint32, bound func(u uint32, items []uint32) []uint32) (*setunion.Histogram, int64, error) {
	h := setunion.NewHistogram(rule, gamma, n)
	var items []uint32
	var pairs int64
	for i, u := range order {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		items = items[:0]
		for _, g := range b.ids[b.off[u]:b.off[u+1]] {
			if d := dense[g]; d > 0 {
				items = append(items, d-1)
			}
		}
		if len(items) == 0 {
			continue
		}
		pairs += int64(len(items))
		h.Update(bound(u, items), nil)
	}
	return h, pairs, nil
}
