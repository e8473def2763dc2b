package setunion

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"sync"
)

// Prepared is a Grouped checked and indexed once, for many releases: a
// caller that keeps its grouped pairs between releases (dpsql's release
// index) prepares them once with Prepare and starts every release with
// NewPreparedBuilder, which costs O(1) instead of the O(users + items +
// pairs) of checking g again (NewGroupedBuilder).
//
// A Prepared is immutable once Prepare returns (the parts computed on
// demand are computed once, under a sync.Once), so any number of
// concurrent releases may share it. It shares g's slices: the caller must
// not modify them afterwards.
type Prepared struct {
	g     Grouped
	stats Stats
	// itemUsers[i] is the number of users holding item i and itemOcc[i]
	// the sum of their counts: the missing mass of a release is then a sum
	// over the released items.
	itemUsers []uint32
	itemOcc   []uint64
	occ       uint64 // Σ itemOcc, saturating counts as in the lists

	sizes []int // users' distinct-item counts, ascending (private Δ0)

	flatL flatLists

	indexOnce sync.Once
	index     map[string]uint32 // item → id (Result.InSupport)

	// lazyLists, when not nil, lays out g.Lists, which PreparedFromParts
	// was given without: once, on the first read (lists).
	lazyLists func() [][]uint64
	listsOnce sync.Once
}

// Prepare checks g's shape (as NewGroupedBuilder does: lists of strictly
// ascending item ids with counts ≥ 1, distinct non-empty users, distinct
// items) and returns it prepared for releases. It reads every entry once.
func Prepare(g Grouped) (*Prepared, error) {
	if len(g.Lists) != len(g.Users) {
		return nil, fmt.Errorf("grouped input: %d users but %d lists", len(g.Users), len(g.Lists))
	}
	if len(g.Items) >= math.MaxUint32 || len(g.Users) >= math.MaxUint32 {
		return nil, fmt.Errorf("grouped input: too many users or items")
	}
	// One pass over the entries checks them and builds the flat ids and
	// the per-item sums.
	var pairs int
	for _, l := range g.Lists {
		pairs += len(l)
	}
	p := &Prepared{g: g, itemUsers: make([]uint32, len(g.Items)), itemOcc: make([]uint64, len(g.Items))}
	fl := flatLists{ids: make([]uint32, pairs), off: make([]int, len(g.Lists)+1)}
	n, items := 0, uint64(len(g.Items))
	for u, l := range g.Lists {
		if g.Users[u] == "" {
			return nil, fmt.Errorf("grouped input: user %d is empty", u)
		}
		prev := int64(-1)
		for _, e := range l {
			i, c := e>>32, e&0xffffffff
			if c == 0 || i >= items || int64(i) <= prev {
				return nil, fmt.Errorf("grouped input: the list of user %d is not ascending distinct item ids with counts ≥ 1", u)
			}
			prev = int64(i)
			fl.ids[n] = uint32(i)
			n++
			p.itemUsers[i]++
			p.itemOcc[i] += c
			p.occ += c
		}
		fl.off[u+1] = n
	}
	if u := firstRepeat(g.Users); u >= 0 {
		return nil, fmt.Errorf("grouped input: user %d repeats an earlier one", u)
	}
	if i := firstRepeat(g.Items); i >= 0 {
		return nil, fmt.Errorf("grouped input: item %d repeats an earlier one", i)
	}
	p.flatL = fl
	// Computed here, not at the first release that needs them: a Prepared
	// of a server-built index is shared by every analyst, and a first use
	// that paid for the sort would tell an analyst whether another had
	// released from it (docs/privacy.md §12.2).
	p.sizes = make([]int, len(g.Lists))
	for u, l := range g.Lists {
		p.sizes[u] = len(l)
	}
	slices.Sort(p.sizes)
	p.stats = Stats{Occurrences: g.Occurrences, Users: len(g.Users), Pairs: int64(pairs), DistinctItems: len(g.Items)}
	return p, nil
}

// Grouped returns the grouped input p was prepared from.
func (p *Prepared) Grouped() Grouped {
	g := p.g
	g.Lists = p.lists()
	return g
}

// lists returns the users' lists, laid out on the first call when p was
// prepared without them (PreparedFromParts). Only a Prepared made for one
// release is: one shared by releases has its lists from the start, so
// whether they are laid out shows nothing about other releases.
func (p *Prepared) lists() [][]uint64 {
	if p.lazyLists != nil {
		p.listsOnce.Do(func() { p.g.Lists = p.lazyLists() })
	}
	return p.g.Lists
}

// listsFor returns p's lists for a builder of mechanism m: nil when m
// reads only the flat item ids and p has not laid out its lists.
func (p *Prepared) listsFor(m Mechanism) [][]uint64 {
	if m.greedy() {
		return p.lists()
	}
	if p.lazyLists != nil {
		return nil // not read, and possibly being laid out by a greedy release
	}
	return p.g.Lists
}

// Stats returns the input statistics of every release from p
// (operator-only; see Stats).
func (p *Prepared) Stats() Stats { return p.stats }

// userSizes returns every user's number of distinct items, ascending.
func (p *Prepared) userSizes() []int { return p.sizes }

// flatLists holds every user's item ids consecutively: user u's are
// ids[off[u]:off[u+1]], ascending, as in its list.
type flatLists struct {
	ids []uint32
	off []int
}

// flat returns p's lists as flat item ids (4 bytes per pair): the
// histograms of a release read them several times, and reading half the
// bytes from one array costs far less than following every user's list.
func (p *Prepared) flat() *flatLists { return &p.flatL }

// BuildLookup builds the item → id map that Result.InSupport reads. A
// Prepared shared across analysts (a server-built corpus) must build it
// before its first release: built lazily, its cost would tell an analyst
// whether another had released from it.
func (p *Prepared) BuildLookup() { p.lookup("") }

// LookupBuilt reports whether the item → id map is built.
func (p *Prepared) LookupBuilt() bool { return p.index != nil }

// lookup returns the id of item.
func (p *Prepared) lookup(item string) (uint32, bool) {
	p.indexOnce.Do(func() {
		p.index = make(map[string]uint32, len(p.g.Items))
		for i, s := range p.g.Items {
			p.index[s] = uint32(i)
		}
	})
	i, ok := p.index[item]
	return i, ok
}

// missing returns the missing mass of a release of the item ids released:
// the same integers as Builder.missing's pass over every list, from the
// per-item sums.
func (p *Prepared) missing(released []uint32) Missing {
	var m Missing
	if p.stats.Pairs == 0 {
		return m
	}
	var keptPairs, keptOcc uint64
	for _, i := range released {
		keptPairs += uint64(p.itemUsers[i])
		keptOcc += p.itemOcc[i]
	}
	m.Pairs = float64(uint64(p.stats.Pairs)-keptPairs) / float64(p.stats.Pairs)
	m.Occurrences = float64(p.occ-keptOcc) / float64(p.occ)
	return m
}

// firstRepeat returns the index of the first string of names equal to an
// earlier one, or −1: an open-addressing set of indexes at a load of at most
// 1/2, keyed by maphash, so that checking a Grouped does not copy its
// strings.
func firstRepeat(names []string) int {
	if len(names) < 2 {
		return -1
	}
	size := 1 << bits.Len(uint(2*len(names)-1))
	slots := make([]uint32, size) // index+1; 0 is empty
	mask := uint64(size - 1)
	seed := maphash.MakeSeed()
	for k, s := range names {
		for h := maphash.String(seed, s) & mask; ; h = (h + 1) & mask {
			e := slots[h]
			if e == 0 {
				slots[h] = uint32(k + 1)
				break
			}
			if names[e-1] == s {
				return k
			}
		}
	}
	return -1
}

// NewPreparedBuilder returns a builder that releases p with options o,
// exactly as NewGroupedBuilder(o, p.Grouped()) would, without checking or
// copying p: every release reads p's lists, names and sums and never
// writes to them. Pairs added afterwards (Add, AddBatch, …) make the
// builder copy p's users, items and list headers first (O(users + items)),
// as NewGroupedBuilder did.
func NewPreparedBuilder(o Options, p *Prepared) (*Builder, error) {
	cal, err := Calibrate(o)
	if err != nil {
		return nil, err
	}
	return &Builder{opts: o, cal: cal, prep: p, lists: p.listsFor(cal.Mechanism), occurrences: p.g.Occurrences}, nil
}

// own turns a builder of prepared input into one that owns its state, as
// if every pair of the input had been added to it, before it is changed:
// users and items interned in the input's order, list headers copied with
// their capacity clipped so that an append copies.
func (b *Builder) own() {
	p := b.prep
	if p == nil {
		return
	}
	b.prep = nil
	g := p.Grouped()
	b.lists = make([][]uint64, len(g.Lists))
	b.clean = make([]int32, len(g.Lists))
	b.last = make([]lastSeen, len(g.Items))
	for _, name := range g.Users {
		b.users.ID([]byte(name))
	}
	for i, name := range g.Items {
		b.items.ID([]byte(name))
		b.last[i] = lastSeen{u: noUser}
	}
	for u, l := range g.Lists {
		b.lists[u] = l[:len(l):len(l)]
		b.clean[u] = int32(len(l))
	}
}

// The builder's names, from its interners or its prepared input.

func (b *Builder) numUsers() int {
	if b.prep != nil {
		return len(b.prep.g.Users)
	}
	return b.users.Len()
}

func (b *Builder) numItems() int {
	if b.prep != nil {
		return len(b.prep.g.Items)
	}
	return b.items.Len()
}

// itemHash returns UserHash(key, item i's bytes), the greedy rules' tie key.
func (b *Builder) itemHash(key [2]uint64, i uint32) uint64 {
	if b.prep != nil {
		return UserHash(key, []byte(b.prep.g.Items[i]))
	}
	return UserHash(key, b.items.Bytes(i))
}

// publicFrequency returns greedy_public's priority of item i.
func (b *Builder) publicFrequency(i uint32) float64 {
	var f float64
	var ok bool
	if b.prep != nil {
		f, ok = b.opts.Public[b.prep.g.Items[i]]
	} else {
		f, ok = b.opts.Public[string(b.items.Bytes(i))]
	}
	if !ok {
		f = 1
	}
	return f
}

// itemString returns item i.
func (b *Builder) itemString(i uint32) string {
	if b.prep != nil {
		return b.prep.g.Items[i]
	}
	return b.items.String(i)
}

// orderAll returns every user id in keyed order (orderUsers).
func (b *Builder) orderAll(key [2]uint64) []uint32 {
	if b.prep != nil {
		return OrderUsers(key, b.prep.g.Users)
	}
	return orderUsers(key, b.users.Len(), b.users.Bytes)
}
