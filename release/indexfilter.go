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
	if valueView && x.null >= 0 {
		order = x.nnOrder
	}
	n := len(x.users)
	if order != nil {
		n = len(order)
	}
	skip := uint64(math.MaxUint64) // an item id no entry has
	if valueView && x.null >= 0 {
		skip = uint64(x.null)
	}

	// 1. First rows and holders per item; kept users and their lengths.
	minFirst := make([]uint32, len(x.items))
	for i := range minFirst {
		minFirst[i] = math.MaxUint32
	}
	holders := make([]uint32, len(x.items))
	most := 0 // users kept, an upper bound of those with entries
	for _, k := range keep {
		if k {
			most++
		}
	}
	kept := make([]uint32, 0, most)
	off := make([]int, 1, most+1)
	var occ int64
	held := 0 // items with a kept holder
	longest := 0
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
			minFirst[it] = min(minFirst[it], x.first[j])
			if holders[it] == 0 {
				held++
			}
			holders[it]++
			occ += int64(e & 0xffffffff)
			m++
		}
		if m > 0 {
			kept = append(kept, u)
			off = append(off, off[len(off)-1]+m)
			longest = max(longest, m)
		}
	}
	pairs := off[len(off)-1]

	// 2. New ids by first row; bucket starts in new-id order.
	keys := make([]uint64, 0, held)
	var last uint32
	for i, f := range minFirst {
		if f != math.MaxUint32 {
			keys = append(keys, uint64(f)<<32|uint64(i))
			last = max(last, f)
		}
	}
	sortByHigh(keys, bits.Len32(last))
	items := make([]string, len(keys))
	newID := make([]uint32, len(x.items))
	start := make([]uint32, len(keys)+1)
	for id, key := range keys {
		i := uint32(key)
		newID[i] = uint32(id)
		start[id+1] = start[id] + holders[i]
		items[id] = x.items[i]
		if valueView {
			items[id], _ = itemText(x.items[i])
		}
	}

	// Every kept entry to its new item's bucket: kept ordinal and count.
	bucket := make([]uint64, pairs)
	pos := slices.Clone(start[:len(keys)])
	for k, u := range kept {
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

	// 3. The buckets in new-id order make every list ascending; the same
	// pass gives the flat ids and the per-item sums of the Prepared.
	ents := make([]uint64, pairs)
	parts := setunion.FlatParts{IDs: make([]uint32, pairs), ItemUsers: make([]uint32, len(keys)),
		ItemOcc: make([]uint64, len(keys)), Longest: longest}
	fill := make([]int, len(kept))
	copy(fill, off)
	for id := range keys {
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
	users := make([]string, len(kept))
	for k, u := range kept {
		users[k] = x.users[u]
	}
	// Ascending lists of ids below len(items) with counts ≥ 1 (the
	// index's), distinct users and items (a subset of the index's): the
	// shape PrepareFlat checks, by construction (and
	// TestFilteredPreparedAsReference).
	f := setunion.FlatGrouped{Users: users, Items: items, Entries: ents, Off: off, Occurrences: occ}
	return setunion.PreparedFromParts(f, parts), nil
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
