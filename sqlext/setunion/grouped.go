package setunion

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
// It is NewPreparedBuilder(o, Prepare(g)): the builder reads g and never
// writes to it, so several builders (concurrent releases) may share one
// Grouped; it checks g's shape in one pass over its entries. A caller that
// releases the same Grouped many times should Prepare it once instead.
// Pairs added afterwards (Add) are appended to copies.
func NewGroupedBuilder(o Options, g Grouped) (*Builder, error) {
	if _, err := Calibrate(o); err != nil {
		return nil, err
	}
	p, err := Prepare(g)
	if err != nil {
		return nil, err
	}
	return NewPreparedBuilder(o, p)
}

// Grouped groups the builder's pairs (Group) and returns them, sharing the
// builder's slices: a builder from NewGroupedBuilder(o, b.Grouped())
// releases exactly as b would. b must not be used afterwards.
func (b *Builder) Grouped() Grouped {
	if b.prep != nil {
		return b.prep.Grouped()
	}
	b.Group()
	return Grouped{Users: b.users.Strings(), Items: b.items.Strings(), Lists: b.lists, Occurrences: b.occurrences}
}

// NewCalibratedGroupedBuilder is NewGroupedBuilder for a calibration the
// caller computed (NewCalibratedBuilder, whose checks it applies).
func NewCalibratedGroupedBuilder(cal Calibration, g Grouped) (*Builder, error) {
	p, err := Prepare(g)
	if err != nil {
		return nil, err
	}
	return NewCalibratedPreparedBuilder(cal, p)
}

// NewCalibratedPreparedBuilder is NewPreparedBuilder for a calibration the
// caller computed (NewCalibratedBuilder, whose checks it applies): the
// n-gram extractor's level 1 over a stored corpus.
func NewCalibratedPreparedBuilder(cal Calibration, p *Prepared) (*Builder, error) {
	b, err := NewCalibratedBuilder(cal)
	if err != nil {
		return nil, err
	}
	b.prep, b.lists, b.occurrences = p, p.listsFor(cal.Mechanism), p.g.Occurrences
	return b, nil
}
