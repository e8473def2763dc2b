package setunion

import (
	"fmt"
	"math"
)

// Grouped is a release's input already grouped by privacy unit: the state a
// Builder holds once Group has run. A caller that keeps its pairs grouped
// between releases (dpsql's per-table release index) hands them to
// NewGroupedBuilder instead of adding them again pair by pair.
type Grouped struct {
	// Users are the distinct, non-empty privacy units, in the order of
	// their first pair.
	Users []string
	// Items are the distinct items, in the order of their first pair.
	Items []string
	// Lists[u] are the entries of Users[u]: GroupedEntry(item, count) with
	// item an index of Items, by strictly ascending item, and count ≥ 1
	// the number of times the pair was added (saturating at 2³²−1).
	Lists [][]uint64
	// Occurrences is the number of pairs added, duplicates included
	// (Stats.Occurrences; operator-only).
	Occurrences int64
}

// GroupedEntry is the entry of Grouped.Lists for item id item held count
// times by its user.
func GroupedEntry(item, count uint32) uint64 { return uint64(item)<<32 | uint64(count) }

// NewGroupedBuilder returns a builder that holds g, as if NewBuilder(o) had
// been given every pair of g in an order whose first occurrences of users
// and items follow g.Users and g.Items: the builder's state after Group is
// then identical, and so is its Release for the same random source. The
// builder's mechanism sees exactly what it would see from the pairs one by
// one; nothing about the privacy argument changes.
//
// The builder reads g's lists and never writes to them, so several
// builders (concurrent releases) may share one Grouped; it interns g's
// users and items again (O(users + items)), and checks g's shape in one
// pass over its entries. Pairs added afterwards (Add) are appended to
// copies.
func NewGroupedBuilder(o Options, g Grouped) (*Builder, error) {
	cal, err := Calibrate(o)
	if err != nil {
		return nil, err
	}
	if err := g.check(); err != nil {
		return nil, err
	}
	b := &Builder{
		opts:        o,
		cal:         cal,
		lists:       make([][]uint64, len(g.Lists)),
		clean:       make([]int32, len(g.Lists)),
		last:        make([]lastSeen, len(g.Items)),
		occurrences: g.Occurrences,
	}
	for u, name := range g.Users {
		if id, added := b.users.ID([]byte(name)); !added || id != uint32(u) {
			return nil, fmt.Errorf("grouped input: user %d repeats an earlier one", u)
		}
	}
	for i, name := range g.Items {
		if id, added := b.items.ID([]byte(name)); !added || id != uint32(i) {
			return nil, fmt.Errorf("grouped input: item %d repeats an earlier one", i)
		}
		b.last[i] = lastSeen{u: noUser}
	}
	for u, l := range g.Lists {
		b.lists[u] = l[:len(l):len(l)] // an append copies
		b.clean[u] = int32(len(l))
	}
	return b, nil
}

// check verifies the shape NewGroupedBuilder relies on.
func (g *Grouped) check() error {
	if len(g.Lists) != len(g.Users) {
		return fmt.Errorf("grouped input: %d users but %d lists", len(g.Users), len(g.Lists))
	}
	if len(g.Items) >= math.MaxUint32 || len(g.Users) >= math.MaxUint32 {
		return fmt.Errorf("grouped input: too many users or items")
	}
	for u, l := range g.Lists {
		if g.Users[u] == "" {
			return fmt.Errorf("grouped input: user %d is empty", u)
		}
		for k, e := range l {
			if e&0xffffffff == 0 || e>>32 >= uint64(len(g.Items)) || (k > 0 && e>>32 <= l[k-1]>>32) {
				return fmt.Errorf("grouped input: the list of user %d is not ascending distinct item ids with counts ≥ 1", u)
			}
		}
	}
	return nil
}

// Grouped groups the builder's pairs (Group) and returns them, sharing the
// builder's slices: a builder from NewGroupedBuilder(o, b.Grouped())
// releases exactly as b would. b must not be used afterwards.
func (b *Builder) Grouped() Grouped {
	b.Group()
	return Grouped{Users: b.users.Strings(), Items: b.items.Strings(), Lists: b.lists, Occurrences: b.occurrences}
}

// NewCalibratedGroupedBuilder is NewGroupedBuilder for a calibration the
// caller computed (NewCalibratedBuilder, whose checks it applies): the
// n-gram extractor's level 1 over a stored corpus.
func NewCalibratedGroupedBuilder(cal Calibration, g Grouped) (*Builder, error) {
	cb, err := NewCalibratedBuilder(cal)
	if err != nil {
		return nil, err
	}
	b, err := NewGroupedBuilder(Defaults(), g)
	if err != nil {
		return nil, err
	}
	b.opts, b.cal = cb.opts, cb.cal
	return b, nil
}
