package release

import (
	"math"
	"math/bits"
	"slices"

	"github.com/dpsql/dpsql/internal/radix"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// # A unit filter over the index, in linear time
//
// A release with a filter on the privacy unit reads the pairs of the
// users the filter keeps, renumbered as the filtered scan meets them
// ("The release index", index.go: users in their order, items by their
// first row among the kept users' rows, lists ascending; the tests keep
// the former comparison-sorting version, filtered, as the reference).
// filteredPrepared lays them out for setunion.PrepareFlat
// without a sort per user or an allocation per user: three passes over
// the kept users' entries and one radix sort of the items they hold.
//
//  1. Per item, its first row among the kept users' entries, its
//     number of kept holders and their occurrences (one record per item,
//     so an entry updates one cache line); per kept user, its number of
//     entries.
//  2. The items held, by that first row (a stable radix sort of
//     (first row, id) on the first row's bits: ties, which one key
//     column cannot give since a row holds one value, go by id), give
//     the new ids; each kept entry goes to its new item's bucket, the
//     buckets in new-id order, each filled by ascending kept user.
//  3. Reading the buckets in new-id order and appending each item's id
//     to its holders' lists gives every list in ascending new-id order:
//     the sorted lists, without sorting them. A bucket holds the kept
//     user's ordinal only (4 bytes), and only the flat item ids are laid
//     out: the entries with their counts, which only the greedy
//     mechanisms read, are made on demand (entries), so a release of
//     the other mechanisms writes 8 bytes per kept pair instead of 20.
//
// The work is linear in the kept entries plus the items (the sort it
// replaces added a logarithm per entry), reads only the index and keep,
// and allocates a fixed number of arrays sized by the index's items and
// the kept users and entries: like the regrouping before it, its time
// depends on the data only through the pairs of the users the filter
// keeps (docs/privacy.md §12.1, "the index path's per-user filter
// evaluation and per-pair regrouping", and §32).

// filteredPrepared returns filtered(view, keep) prepared for releases:
// the same Grouped, laid out flat, with the Prepared's sums computed in
// the regrouping's passes (setunion.PreparedFromParts). The lists' entries
// with their counts, which only the greedy mechanisms read, are laid out
// when a release first asks for them (entries), not by every release.
func (x *Index) filteredPrepared(view int, keep []bool) (*setunion.Prepared, error) {
	valueView := view == ValueView
	var order []uint32
	skip := uint64(math.MaxUint64) // an item id no entry has
	if valueView && x.null >= 0 {
		order, skip = x.nnOrder, uint64(x.null)
	}
	s := x.scanKept(order, skip, keep)
	keys := s.byFirstRow()
	items, newID, start, occ := x.renumber(keys, s.per, valueView)
	bucket := x.bucketByItem(s, skip, newID, start)
	parts := s.lists(bucket, start, len(keys))
	parts.ItemOcc = occ
	parts.Entries = func() []uint64 { return x.entries(s, skip, newID) }
	users := make([]string, len(s.kept))
	for k, u := range s.kept {
		users[k] = x.users[u]
	}
	// Ascending lists of ids below len(items) with counts ≥ 1 (the
	// index's), distinct users and items (a subset of the index's): the
	// shape PrepareFlat checks, by construction (and
	// TestFilteredPreparedAsReference).
	f := setunion.FlatGrouped{Users: users, Items: items, Off: s.off, Occurrences: s.occ}
	return setunion.PreparedFromParts(f, parts), nil
}

// itemKept is step 1's record of an index item: its first row among the
// kept users' entries (as its complement, so that the zeroed record
// means "none yet" and a max keeps the least row, with no pass setting
// every record first), its number of kept holders and the sum of their
// counts, together so that an entry's update touches one cache line.
type itemKept struct {
	notFirst, holders uint32
	occ               uint64
}

// firstRow returns the item's first row among the kept users' entries;
// held reports whether it has one.
func (k *itemKept) firstRow() (row uint32, held bool) { return ^k.notFirst, k.holders > 0 }

// keptScan is step 1 of filteredPrepared: per item its first row, kept
// holders and occurrences, the kept users with entries and their list
// offsets.
type keptScan struct {
	per           []itemKept
	kept          []uint32
	off           []int
	occ           int64
	held, longest int // items with a kept holder; the longest list
}

// scanKept reads the entries of the kept users (in order when it is not
// nil, else every user), skipping the item skip.
func (x *Index) scanKept(order []uint32, skip uint64, keep []bool) *keptScan {
	n := len(x.users)
	if order != nil {
		n = len(order)
	}
	s := &keptScan{per: make([]itemKept, len(x.items))}
	most := 0 // users kept, an upper bound of those with entries
	for _, k := range keep {
		if k {
			most++
		}
	}
	s.kept = make([]uint32, 0, most)
	s.off = make([]int, 1, most+1)
	for k := range n {
		u := uint32(k)
		if order != nil {
			u = order[k]
		}
		if !keep[u] {
			continue
		}
		m := 0
		for j := x.offs[u]; j < x.offs[u+1]; j++ {
			e := x.ents[j]
			it := e >> 32
			if it == skip {
				continue
			}
			p := &s.per[it]
			p.notFirst = max(p.notFirst, ^x.first[j]) // rows < 2³²−1: ^row > 0
			if p.holders == 0 {
				s.held++
			}
			p.holders++
			c := e & 0xffffffff
			p.occ += c
			s.occ += int64(c)
			m++
		}
		if m > 0 {
			s.kept = append(s.kept, u)
			s.off = append(s.off, s.off[len(s.off)-1]+m)
			s.longest = max(s.longest, m)
		}
	}
	return s
}

// byFirstRow is step 2's order: the held items as (first row, id) keys,
// sorted by first row.
func (s *keptScan) byFirstRow() []uint64 {
	keys := make([]uint64, 0, s.held)
	var last uint32
	for i := range s.per {
		if f, held := s.per[i].firstRow(); held {
			keys = append(keys, uint64(f)<<32|uint64(i))
			last = max(last, f)
		}
	}
	sortByHigh(keys, bits.Len32(last))
	return keys
}

// renumber gives the held items their new ids in keys' order: their
// texts, the new id of each old id, each new id's bucket start and
// occurrences.
func (x *Index) renumber(keys []uint64, per []itemKept, valueView bool) (items []string, newID, start []uint32, occ []uint64) {
	items = make([]string, len(keys))
	newID = make([]uint32, len(x.items))
	start = make([]uint32, len(keys)+1)
	occ = make([]uint64, len(keys))
	for id, key := range keys {
		i := uint32(key)
		newID[i] = uint32(id)
		start[id+1] = start[id] + per[i].holders
		occ[id] = per[i].occ
		items[id] = x.items[i]
		if valueView {
			items[id], _ = itemText(x.items[i])
		}
	}
	return items, newID, start, occ
}

// bucketByItem puts every kept entry in its new item's bucket, as its
// user's kept ordinal, the buckets filled by ascending kept user.
func (x *Index) bucketByItem(s *keptScan, skip uint64, newID, start []uint32) []uint32 {
	bucket := make([]uint32, s.off[len(s.off)-1])
	pos := slices.Clone(start[:len(start)-1])
	for k, u := range s.kept {
		for j := x.offs[u]; j < x.offs[u+1]; j++ {
			it := x.ents[j] >> 32
			if it == skip {
				continue
			}
			id := newID[it]
			bucket[pos[id]] = uint32(k)
			pos[id]++
		}
	}
	return bucket
}

// lists is step 3: the buckets in new-id order make every user's list
// ascending; the same pass gives the flat ids and the items' holders.
func (s *keptScan) lists(bucket []uint32, start []uint32, items int) setunion.FlatParts {
	parts := setunion.FlatParts{IDs: make([]uint32, len(bucket)), ItemUsers: make([]uint32, items), Longest: s.longest}
	fill := make([]int, len(s.kept))
	copy(fill, s.off)
	for id := range items {
		bs := bucket[start[id]:start[id+1]]
		parts.ItemUsers[id] = uint32(len(bs))
		for _, k := range bs {
			parts.IDs[fill[k]] = uint32(id)
			fill[k]++
		}
	}
	return parts
}

// entries lays out the kept users' entries (new id, count) end to end,
// each user's ascending by new id, as the flat ids of lists: for the
// releases that read counts (the greedy mechanisms), once per release.
func (x *Index) entries(s *keptScan, skip uint64, newID []uint32) []uint64 {
	ents := make([]uint64, 0, s.off[len(s.off)-1])
	for _, u := range s.kept {
		lo := len(ents)
		for j := x.offs[u]; j < x.offs[u+1]; j++ {
			e := x.ents[j]
			if it := e >> 32; it != skip {
				ents = append(ents, uint64(newID[it])<<32|e&0xffffffff)
			}
		}
		slices.Sort(ents[lo:])
	}
	return ents
}

// sortByHigh sorts keys, which come in ascending order of their low 32
// bits, by their top 32 bits, of which only the low width bits may be
// set, keeping the order of equal ones: an LSD radix sort, 11 bits a
// pass (short inputs are sorted whole, which orders equal ones by their
// low bits: the same).
func sortByHigh(keys []uint64, width int) {
	if len(keys) < 512 {
		slices.Sort(keys) // (high, low): equal highs keep their ascending lows
		return
	}
	radix.SortBits(keys, 32, width)
}
