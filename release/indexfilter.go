package release

import (
	"math"
	"math/bits"
	"slices"

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
//  1. Per item, its first row among the kept users' entries and its
//     number of kept holders; per kept user, its number of entries.
//  2. The items held, by that first row (a stable radix sort of
//     (first row, id) on the first row's bits: ties, which one key
//     column cannot give since a row holds one value, go by id), give
//     the new ids; each kept entry goes to its new item's bucket, the
//     buckets in new-id order, each filled by ascending kept user.
//  3. Reading the buckets in new-id order and appending each entry to
//     its user's list gives every list in ascending new-id order: the
//     sorted lists, without sorting them.
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
// the regrouping's last pass (setunion.PreparedFromParts).
func (x *Index) filteredPrepared(view int, keep []bool) (*setunion.Prepared, error) {
	valueView := view == ValueView
	var order []uint32
	skip := uint64(math.MaxUint64) // an item id no entry has
	if valueView && x.null >= 0 {
		order, skip = x.nnOrder, uint64(x.null)
	}
	s := x.scanKept(order, skip, keep)
	keys := s.byFirstRow()
	items, newID, start := x.renumber(keys, s.holders, valueView)
	bucket := x.bucketByItem(s, skip, newID, start)
	ents, parts := s.lists(bucket, start, len(keys))
	users := make([]string, len(s.kept))
	for k, u := range s.kept {
		users[k] = x.users[u]
	}
	// Ascending lists of ids below len(items) with counts ≥ 1 (the
	// index's), distinct users and items (a subset of the index's): the
	// shape PrepareFlat checks, by construction (and
	// TestFilteredPreparedAsReference).
	f := setunion.FlatGrouped{Users: users, Items: items, Entries: ents, Off: s.off, Occurrences: s.occ}
	return setunion.PreparedFromParts(f, parts), nil
}

// keptScan is step 1 of filteredPrepared: per item its first row and
// kept holders, the kept users with entries and their list offsets.
type keptScan struct {
	minFirst, holders []uint32
	kept              []uint32
	off               []int
	occ               int64
	held, longest     int // items with a kept holder; the longest list
}

// scanKept reads the entries of the kept users (in order when it is not
// nil, else every user), skipping the item skip.
func (x *Index) scanKept(order []uint32, skip uint64, keep []bool) *keptScan {
	n := len(x.users)
	if order != nil {
		n = len(order)
	}
	s := &keptScan{minFirst: make([]uint32, len(x.items)), holders: make([]uint32, len(x.items))}
	for i := range s.minFirst {
		s.minFirst[i] = math.MaxUint32
	}
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
			s.minFirst[it] = min(s.minFirst[it], x.first[j])
			if s.holders[it] == 0 {
				s.held++
			}
			s.holders[it]++
			s.occ += int64(e & 0xffffffff)
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
	for i, f := range s.minFirst {
		if f != math.MaxUint32 {
			keys = append(keys, uint64(f)<<32|uint64(i))
			last = max(last, f)
		}
	}
	sortByHigh(keys, bits.Len32(last))
	return keys
}

// renumber gives the held items their new ids in keys' order: their
// texts, the new id of each old id, and each new id's bucket start.
func (x *Index) renumber(keys []uint64, holders []uint32, valueView bool) (items []string, newID, start []uint32) {
	items = make([]string, len(keys))
	newID = make([]uint32, len(x.items))
	start = make([]uint32, len(keys)+1)
	for id, key := range keys {
		i := uint32(key)
		newID[i] = uint32(id)
		start[id+1] = start[id] + holders[i]
		items[id] = x.items[i]
		if valueView {
			items[id], _ = itemText(x.items[i])
		}
	}
	return items, newID, start
}

// bucketByItem puts every kept entry in its new item's bucket, as its
// kept ordinal and count, the buckets filled by ascending kept user.
func (x *Index) bucketByItem(s *keptScan, skip uint64, newID, start []uint32) []uint64 {
	bucket := make([]uint64, s.off[len(s.off)-1])
	pos := slices.Clone(start[:len(start)-1])
	for k, u := range s.kept {
		for j := x.offs[u]; j < x.offs[u+1]; j++ {
			e := x.ents[j]
			it := e >> 32
			if it == skip {
				continue
			}
			id := newID[it]
			bucket[pos[id]] = uint64(k)<<32 | e&0xffffffff
			pos[id]++
		}
	}
	return bucket
}

// lists is step 3: the buckets in new-id order make every user's list
// ascending; the same pass gives the flat ids and the per-item sums of
// the Prepared.
func (s *keptScan) lists(bucket []uint64, start []uint32, items int) ([]uint64, setunion.FlatParts) {
	pairs := len(bucket)
	ents := make([]uint64, pairs)
	parts := setunion.FlatParts{IDs: make([]uint32, pairs), ItemUsers: make([]uint32, items),
		ItemOcc: make([]uint64, items), Longest: s.longest}
	fill := make([]int, len(s.kept))
	copy(fill, s.off)
	for id := range items {
		bs := bucket[start[id]:start[id+1]]
		parts.ItemUsers[id] = uint32(len(bs))
		var sum uint64
		for _, b := range bs {
			k, c := b>>32, b&0xffffffff
			ents[fill[k]] = uint64(id)<<32 | c
			parts.IDs[fill[k]] = uint32(id)
			fill[k]++
			sum += c
		}
		parts.ItemOcc[id] = sum
	}
	return ents, parts
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
	const digit = 11
	tmp := make([]uint64, len(keys))
	src, dst := keys, tmp
	var count [1 << digit]int
	for shift := 32; shift < 32+width; shift += digit {
		clear(count[:])
		for _, k := range src {
			count[k>>shift&(1<<digit-1)]++
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, k := range src {
			d := k >> shift & (1<<digit - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}
