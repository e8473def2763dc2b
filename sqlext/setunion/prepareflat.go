package setunion

import (
	"fmt"
	"math"
)

// FlatGrouped is a Grouped whose lists lie end to end in one array: user
// u's entries (GroupedEntry(item, count), strictly ascending item, count
// ≥ 1) are Entries[Off[u]:Off[u+1]]. A caller that makes many groupings
// per second (dpsql's release index, once per release with a filter on
// the privacy unit) lays them out so, in three allocations instead of one
// per user.
type FlatGrouped struct {
	Users       []string
	Items       []string
	Entries     []uint64
	Off         []int // len(Users)+1 offsets, Off[0] = 0
	Occurrences int64
}

// PrepareFlat is Prepare for grouped pairs laid out flat whose users, and
// whose items, are known to be distinct: a subset of the users and items
// of a Grouped that Prepare accepted (a filter on the privacy unit keeps
// some of its users, and the items they hold). That is not checked (it
// would hash every name); the rest of Prepare's checks are made (non-empty
// users; lists of strictly ascending item ids below len(Items), counts
// ≥ 1). The Prepared is the one Prepare gives for the Grouped whose Lists
// are the users' slices of f.Entries: the same lists, sums, sizes and
// statistics, hence the same releases. It shares f's slices.
func PrepareFlat(f FlatGrouped) (*Prepared, error) {
	users := len(f.Users)
	if len(f.Off) != users+1 || f.Off[0] != 0 || f.Off[users] != len(f.Entries) {
		return nil, fmt.Errorf("flat grouped input: %d users need %d offsets from 0 to the %d entries", users, users+1, len(f.Entries))
	}
	if len(f.Items) >= math.MaxUint32 || users >= math.MaxUint32 {
		return nil, fmt.Errorf("grouped input: too many users or items")
	}
	pairs := len(f.Entries)
	p := &Prepared{itemUsers: make([]uint32, len(f.Items)), itemOcc: make([]uint64, len(f.Items))}
	fl := flatLists{ids: make([]uint32, pairs), off: f.Off}
	lists := make([][]uint64, users)
	longest, items := 0, uint64(len(f.Items))
	for u := range users {
		if f.Users[u] == "" {
			return nil, fmt.Errorf("grouped input: user %d is empty", u)
		}
		lo, hi := f.Off[u], f.Off[u+1]
		if hi < lo || hi > pairs {
			return nil, fmt.Errorf("flat grouped input: the offsets of user %d decrease or pass the entries", u)
		}
		prev := int64(-1)
		for n := lo; n < hi; n++ {
			e := f.Entries[n]
			i, c := e>>32, e&0xffffffff
			if c == 0 || i >= items || int64(i) <= prev {
				return nil, fmt.Errorf("grouped input: the list of user %d is not ascending distinct item ids with counts ≥ 1", u)
			}
			prev = int64(i)
			fl.ids[n] = uint32(i)
			p.itemUsers[i]++
			p.itemOcc[i] += c
			p.occ += c
		}
		lists[u] = f.Entries[lo:hi:hi]
		longest = max(longest, hi-lo)
	}
	p.g = Grouped{Users: f.Users, Items: f.Items, Lists: lists, Occurrences: f.Occurrences}
	p.flatL = fl
	p.sizes = sortedSizes(f.Off, longest)
	p.stats = Stats{Occurrences: f.Occurrences, Users: users, Pairs: int64(pairs), DistinctItems: len(f.Items)}
	return p, nil
}

// sortedSizes returns the lengths off[u+1] − off[u], ascending, by a
// counting sort (every length is at most longest).
func sortedSizes(off []int, longest int) []int {
	count := make([]int, longest+1)
	for u := 1; u < len(off); u++ {
		count[off[u]-off[u-1]]++
	}
	sizes := make([]int, 0, len(off)-1)
	for n, c := range count {
		for range c {
			sizes = append(sizes, n)
		}
	}
	return sizes
}

// FlatParts are the sums PrepareFlat computes from a FlatGrouped, for a
// caller that computes them in its own pass over the entries: IDs[n] is
// the item id of Entries[n], ItemUsers[i] the number of users holding
// item i, ItemOcc[i] the sum of their counts, Longest the longest list.
//
// Entries, when not nil, lays out the FlatGrouped's entries for a
// FlatGrouped given without them (Entries nil): the lists, with their
// counts, are read only by the greedy mechanisms (and Grouped), so the
// Prepared calls it once, on the first such read. It must return what
// the FlatGrouped's Entries would have been.
type FlatParts struct {
	IDs       []uint32
	ItemUsers []uint32
	ItemOcc   []uint64
	Longest   int
	Entries   func() []uint64
}

// PreparedFromParts returns the Prepared that PrepareFlat(f) returns,
// from parts computed by the caller instead of a pass of its own, and
// without PrepareFlat's checks: the caller vouches for f's shape and for
// parts (dpsql's release index builds both in one pass, and its tests
// compare the result with Prepare's). It shares f's and parts' slices.
// f.Entries may be nil when parts.Entries lays them out on demand.
func PreparedFromParts(f FlatGrouped, parts FlatParts) *Prepared {
	users := len(f.Users)
	p := &Prepared{itemUsers: parts.ItemUsers, itemOcc: parts.ItemOcc}
	for _, c := range parts.ItemOcc {
		p.occ += c
	}
	p.g = Grouped{Users: f.Users, Items: f.Items, Occurrences: f.Occurrences}
	if f.Entries != nil || parts.Entries == nil {
		p.g.Lists = splitLists(f.Entries, f.Off)
	} else {
		entries, off := parts.Entries, f.Off
		p.lazyLists = func() [][]uint64 { return splitLists(entries(), off) }
	}
	p.flatL = flatLists{ids: parts.IDs, off: f.Off}
	p.sizes = sortedSizes(f.Off, parts.Longest)
	p.stats = Stats{Occurrences: f.Occurrences, Users: users, Pairs: int64(len(parts.IDs)), DistinctItems: len(f.Items)}
	return p
}

// splitLists returns the users' slices of entries laid out by off.
func splitLists(entries []uint64, off []int) [][]uint64 {
	lists := make([][]uint64, len(off)-1)
	for u := range lists {
		lo, hi := off[u], off[u+1]
		lists[u] = entries[lo:hi:hi]
	}
	return lists
}
