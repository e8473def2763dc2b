package setunion

import (
	"bytes"
	"slices"
	"sync/atomic"
)

// A Batch collects the (privacy unit, item) pairs of a run of consecutive
// input rows away from the builder, so that tokenising and interning can run
// on several goroutines while one goroutine adds the batches, in input order,
// with Builder.AddBatch.
//
// Adding batches b₁, b₂, … in order leaves the builder exactly as adding
// their pairs one by one (Builder.UserID, AddID, AddBytes in the same order)
// would: the same user and item ids (first occurrence), the same grouped
// lists with the same counts, the same statistics. So a release, seeded or
// not, has the same output, whatever the number of batches or goroutines.
// Proof sketch: a batch interns its users and items in local first-occurrence
// order; AddBatch interns the batch's users, then its items, in local id
// order, so an item new to the builder gets the same id it would get one by
// one (its first occurrence overall lies in the first batch that holds it,
// and new items of a batch are interned in the order of their first
// occurrence there). Grouping is by user and the counts are saturating sums
// of non-negative terms, which do not depend on the order of the terms.
//
// A Batch is not safe for concurrent use; a goroutine fills it, then hands it
// over. The zero value is ready to use.
type Batch struct {
	users, items Interner
	// view, for a batch from Builder.NewBatch, is where Group finds the
	// builder's latest View; it then sets known[i] to 1 + the builder's id
	// of local item i, or 0 if the view does not hold it.
	view  *atomic.Pointer[View]
	known []uint32
	// tags, for a batch from Builder.NewBatch, holds the upper 32 bits of
	// the hash of each local item under the builder's item seed, which the
	// batch's item interner shares: the view lookup and AddBatch reuse them
	// instead of hashing the item again.
	tags     []uint32
	lastUser uint32 // id of the most recent user, if users.Len() > 0
	// raw holds the item of every pair added, in order; runs the users of
	// maximal runs of pairs of one user.
	raw  []uint32
	runs []run

	// After Group: the distinct items of user u are
	// entries[start[u]:start[u+1]], each local item<<32 | count; gItems
	// and gCounts are Group's buffers.
	grouped bool
	start   []uint32
	entries []uint64
	gItems  []uint32
	gCounts []uint32
	stamp   []uint32
	sink    byte // View.lookupAll's
}

// run says that raw[previous run's end:end] are pairs of user.
type run struct{ user, end uint32 }

// UserID interns a privacy unit in the batch and returns its batch-local id
// for AddID. The empty user is not interned; ok is false for it.
func (bt *Batch) UserID(user []byte) (id uint32, ok bool) {
	if len(user) == 0 {
		return 0, false
	}
	// Consecutive rows often share a privacy unit.
	if bt.users.Len() > 0 && bytes.Equal(bt.users.Bytes(bt.lastUser), user) {
		return bt.lastUser, true
	}
	bt.grouped = false
	bt.lastUser, _ = bt.users.ID(user)
	return bt.lastUser, true
}

// AddID records that the user with batch-local id u (from UserID) holds item.
func (bt *Batch) AddID(u uint32, item []byte) {
	h := bt.items.hash(item)
	i, added := bt.items.idHash(item, h)
	if added {
		bt.tags = append(bt.tags, uint32(h>>32))
	}
	if n := len(bt.runs); n == 0 || bt.runs[n-1].user != u {
		bt.runs = append(bt.runs, run{user: u})
	}
	bt.raw = append(bt.raw, i)
	bt.runs[len(bt.runs)-1].end = uint32(len(bt.raw))
	bt.grouped = false
}

// AddBytes records that user holds item. An empty user is ignored.
func (bt *Batch) AddBytes(user, item []byte) {
	if u, ok := bt.UserID(user); ok {
		bt.AddID(u, item)
	}
}

// Reset empties the batch for reuse, keeping its memory.
func (bt *Batch) Reset() {
	bt.users.Reset()
	bt.items.Reset()
	bt.tags = bt.tags[:0]
	bt.raw = bt.raw[:0]
	bt.runs = bt.runs[:0]
	bt.grouped = false
}

// Group groups the batch's pairs by user and merges duplicates, in time
// linear in the pairs (a counting sort by user, then one pass per user that
// marks the items seen). AddBatch calls it if needed; calling it on the
// goroutine that filled the batch moves that work off the goroutine that adds
// batches in order.
func (bt *Batch) Group() {
	if bt.grouped {
		return
	}
	nu, ni := bt.users.Len(), bt.items.Len()
	bt.start = resize(bt.start, nu+1)
	clear(bt.start)
	prev := uint32(0)
	for _, r := range bt.runs {
		bt.start[r.user+1] += r.end - prev
		prev = r.end
	}
	for u := range nu {
		bt.start[u+1] += bt.start[u]
	}
	// Scatter items by user (start[u] is used as u's fill position, then
	// restored from the next user's).
	bt.gItems = resize(bt.gItems, len(bt.raw))
	prev = 0
	for _, r := range bt.runs {
		n := copy(bt.gItems[bt.start[r.user]:], bt.raw[prev:r.end])
		bt.start[r.user] += uint32(n)
		prev = r.end
	}
	copy(bt.start[1:], bt.start[:nu])
	bt.start[0] = 0
	// Deduplicate each user's items in place; stamp[i] = u+1 marks item i
	// as seen for user u, and where[i] its position.
	bt.stamp = resize(bt.stamp, 2*ni)
	clear(bt.stamp[:ni])
	stamp, where := bt.stamp[:ni], bt.stamp[ni:]
	bt.gCounts = resize(bt.gCounts, len(bt.raw))
	w := uint32(0)
	for u := range nu {
		lo, hi := bt.start[u], bt.start[u+1]
		bt.start[u] = w
		mark := uint32(u) + 1
		for k := lo; k < hi; k++ {
			i := bt.gItems[k]
			if stamp[i] == mark {
				if c := &bt.gCounts[where[i]]; *c < 0xffffffff {
					*c++
				}
				continue
			}
			stamp[i], where[i] = mark, w
			bt.gItems[w], bt.gCounts[w] = i, 1
			w++
		}
	}
	bt.start[nu] = w
	bt.entries = slices.Grow(bt.entries[:0], int(w))[:w]
	for k := range bt.entries {
		bt.entries[k] = uint64(bt.gItems[k])<<32 | uint64(bt.gCounts[k])
	}
	if bt.view != nil {
		bt.known = resize(bt.known, ni)
		bt.sink = bt.view.Load().lookupAll(&bt.items, bt.tags, bt.known)
	}
	bt.grouped = true
}

// resize returns s with length n, reallocated with a quarter more room
// when it is too short: a batch's buffers are reused for the next batch,
// whose sizes vary by a few percent, and an exact fit was reallocated
// about 75 times over a run of git_python_ecosystem on one core (10 MiB
// of fresh heap, against 3.4 MiB with the headroom). The contents are not
// kept.
func resize(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n, n+n/4)
	}
	return s[:n]
}

// NewBatch returns an empty batch for b whose Group also looks its items up
// in a View of b's items, on the goroutine that fills the batch: AddBatch
// then hashes only the items the view did not know (items new to b, or new
// since the view). Batches from NewBatch may be filled on several goroutines
// while AddBatch runs; the result of AddBatch is that of a zero Batch with
// the same pairs. Call NewBatch on the goroutine that owns b.
func (b *Builder) NewBatch() *Batch {
	if b.view == nil {
		b.own()
		b.view = new(atomic.Pointer[View])
		b.view.Store(b.items.Publish())
	}
	bt := &Batch{view: b.view}
	bt.items.seed = b.items.seed // Publish made it
	return bt
}

// AddBatch adds the pairs of bt as if they were added one by one, in the
// order they were added to bt (see Batch). bt may be reset and reused once
// AddBatch returns.
//
// It only maps the batch's ids to the builder's: it interns the batch's
// users (few: consecutive rows mostly share one) and, for a batch from
// NewBatch, the items its view did not know, reusing their hash tags. The
// batch's grouped entries are kept, and Group builds every
// user's list from them on all cores (pending.go): no list grows and nothing
// is sorted here, on the goroutine that adds batches in order, which only
// copies the entries with the builder's item ids.
func (b *Builder) AddBatch(bt *Batch) {
	bt.Group()
	b.own()
	users := resize(b.batchUsers, bt.users.Len())
	for u := range users {
		users[u] = b.user(bt.users.Bytes(uint32(u)))
	}
	items := resize(b.batchItems, bt.items.Len())
	known := bt.view != nil && bt.view == b.view
	b.reserveItems(newItems(bt, known))
	for i := range items {
		switch {
		case known && bt.known[i] != 0:
			items[i] = bt.known[i] - 1
		case known:
			items[i] = b.itemTag(bt.items.Bytes(uint32(i)), bt.tags[i])
		default:
			items[i] = b.item(bt.items.Bytes(uint32(i)))
		}
	}
	b.batchUsers, b.batchItems = users, items
	b.occurrences += int64(len(bt.raw))
	b.keepBatch(users, items, bt.start, bt.entries)
	if b.view != nil {
		b.view.Store(b.items.Publish())
	}
}

// newItems bounds how many of bt's items AddBatch may intern: those its
// view did not know, or all of them without a view. Reserving room for
// every item of each batch made the builder's item locations grow to
// about twice the items' count (4,200 items a batch, 1,000 of them new).
func newItems(bt *Batch, known bool) int {
	if !known {
		return bt.items.Len()
	}
	n := 0
	for _, k := range bt.known {
		if k == 0 {
			n++
		}
	}
	return n
}
