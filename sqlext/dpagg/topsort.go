package dpagg

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// # Choosing a user's top entries without a full sort
//
// choiceKeys and aggregateKeys keep, per user, the d entries with the most
// rows, ties broken by a key order (the key's bytes for choiceKeys, the
// release's keyed hash for aggregateKeys). They used to sort all of the
// user's entry indexes with a comparator that read the rows and the tie
// through the user's list, and the key's name, at every comparison:
// scattered loads and, for choiceKeys, a string comparison whenever rows
// are equal (most are: one row per key). Both now read each entry's rows
// and tie once into a record (choiceKeys' tie is the name's first 8 bytes,
// the name itself deciding only between equal prefixes), keep the best d
// records in a heap and sort those d. The order is the same strict total
// order (a user's entries have distinct keys, so distinct names and, but
// for a 64-bit hash collision, distinct hashes, where both versions'
// order is arbitrary), so the d entries and their order are those of the
// comparison sort it replaces (TestTopEntriesAsSort). The work per user
// is, as the sort's was, a function of the user's own entries: O(n log d)
// for n entries instead of O(n log n).

// topEntry is one entry of a user's list for the top-d sort: its rows, its
// tie key and, for ties of tie (key names with 8 equal leading bytes), the
// name itself.
type topEntry struct {
	rows uint64
	tie  uint64
	idx  int32
	name string
}

// namePrefix is the first 8 bytes of s, big-endian, zero-padded: for two
// strings whose prefixes differ, their order is the strings' order (a
// shorter string's padding is 0, not above any byte).
func namePrefix(s string) uint64 {
	if len(s) >= 8 {
		return binary.BigEndian.Uint64([]byte(s[:8]))
	}
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

// compareTop orders entries by rows descending, then tie ascending, then
// name ascending (equal for aggregateKeys, whose tie is the whole order), then
// index.
func compareTop(a, b topEntry) int {
	if c := cmp.Compare(b.rows, a.rows); c != 0 {
		return c
	}
	if c := cmp.Compare(a.tie, b.tie); c != 0 {
		return c
	}
	if c := cmp.Compare(a.name, b.name); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

// sortTop writes into idx, which it returns, the indexes of the first d
// records of es in compareTop's order, in that order. It keeps the d best
// in a heap whose root is the worst of them (each further record costs one
// comparison with the root unless it enters), then sorts those d: O(n log d)
// whatever the records, the same d indexes in the same order as sorting all
// of es (compareTop is a strict total order on a user's records). Below 4d
// records it sorts them all.
func sortTop(es []topEntry, d int, idx []int32) []int32 {
	if 4*d < len(es) { // else sorting all is as cheap
		h := es[:d]
		for i := d/2 - 1; i >= 0; i-- {
			siftWorst(h, i)
		}
		for _, e := range es[d:] {
			if compareTop(e, h[0]) < 0 {
				h[0] = e
				siftWorst(h, 0)
			}
		}
		es = h
	}
	slices.SortFunc(es, compareTop)
	es = es[:min(d, len(es))]
	idx = idx[:len(es)]
	for i := range idx {
		idx[i] = es[i].idx
	}
	return idx
}

// siftWorst restores, below i, the heap order of h with the last record in
// compareTop's order at the root.
func siftWorst(h []topEntry, i int) {
	for {
		w, l := i, 2*i+1
		if l < len(h) && compareTop(h[l], h[w]) > 0 {
			w = l
		}
		if r := l + 1; r < len(h) && compareTop(h[r], h[w]) > 0 {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}
