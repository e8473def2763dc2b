package setunion

import (
	"hash/maphash"
	"sync/atomic"
)

// A View is a read-only snapshot of an Interner that other goroutines may
// read while the interner's owner goes on interning: the goroutines that
// fill a builder's batches look their items up in a view of the builder's
// items (Builder.NewBatch), so that adding a batch in order hashes only the
// items that are new to the builder.
//
// A view answers for the strings interned before it was published, with the
// ids the interner gave them; ids never change, so the answer stays true. It
// may miss a string interned later: Lookup then says so, and the owner
// interns it as if there were no view.
//
// Why concurrent reads are safe: the owner writes a slot with an atomic
// store once the string's bytes and location are in place, and readers load
// slots atomically; a view holds its own copy of the chunk headers and the
// locations up to its length, and the owner only appends beyond those (a
// chunk's bytes past the view's strings, locations past its length) or
// moves to new arrays (a grown table, a reallocated location slice), which
// the view does not see. The atomic pointer that publishes a view orders
// every write before it ahead of every read through it.
type View struct {
	seed   maphash.Seed
	slots  []uint64 // read with atomic loads
	shift  uint
	chunks [][]byte
	locs   []loc
}

// Publish returns a view of t's strings so far and makes t write its table
// with atomic stores from now on, so that views may be read while t
// changes. Call it on the goroutine that owns t.
func (t *Interner) Publish() *View {
	t.init()
	t.shared = true
	return &View{
		seed:   t.seed,
		slots:  t.slots,
		shift:  t.shift,
		chunks: append([][]byte(nil), t.chunks...),
		locs:   t.locs[:len(t.locs):len(t.locs)],
	}
}

// Lookup returns the id of s in the interner the view was published from,
// if s was interned before the view was published.
func (v *View) Lookup(s []byte) (id uint32, ok bool) {
	if v == nil || len(v.locs) == 0 {
		return 0, false
	}
	return v.lookupTag(s, maphash.Bytes(v.seed, s)>>32)
}

// lookupTag is Lookup for a string whose hash under the view's seed has
// the upper 32 bits tag: a slot's position and tag use no other bits (see
// Interner.hash), so a batch interner seeded like the builder's (NewBatch)
// hands its strings' tags over and nothing is hashed twice.
func (v *View) lookupTag(s []byte, tag32 uint64) (id uint32, ok bool) {
	if v == nil || len(v.locs) == 0 {
		return 0, false
	}
	h := tag32 << 32
	tag := h
	mask := uint64(len(v.slots) - 1)
	for p := h >> v.shift; ; p = (p + 1) & mask {
		e := atomic.LoadUint64(&v.slots[p])
		if e == 0 {
			return 0, false
		}
		if e&^0xffffffff != tag {
			continue
		}
		i := uint32(e) - 1
		if int(i) >= len(v.locs) {
			continue // interned after the view was published
		}
		l := v.locs[i]
		if string(v.chunks[l.chunk][l.off:l.off+l.len]) == string(s) {
			return i, true
		}
	}
}

// lookupAll sets known[i] to 1 + the view's id of t's string i, whose tag
// (the upper 32 bits of its hash under the view's seed) is tags[i], or to 0
// if the view does not hold it: lookupTag for every string of t, with the
// same answers.
//
// The table, the locations and the bytes are larger than a core's cache, so
// a lookup mostly waits for memory; one by one, each string's misses (its
// slot, then its location and bytes, which depend on the slot) wait for the
// previous string's. So it goes in passes over all the strings, each pass
// with loads that do not depend on one another, which the processor
// overlaps: first every string's first slot with its tag (a candidate) or
// empty (absent), probing from its home slot, then the location and first
// byte of every candidate, then the comparisons, now mostly in cache. A
// string whose candidate differs is looked up by lookupTag from the start,
// and so is one whose candidate was interned after the view. The return
// value only keeps the compiler from dropping the second pass's loads;
// store it where it is not shared.
func (v *View) lookupAll(t *Interner, tags, known []uint32) (sink byte) {
	if v == nil || len(v.locs) == 0 {
		clear(known)
		return 0
	}
	mask := uint64(len(v.slots) - 1)
	for i, tag := range tags {
		// The first slot from home with tag or empty: mostly in the
		// home slot's cache line.
		p := uint64(tag) << 32 >> v.shift
		e := atomic.LoadUint64(&v.slots[p])
		for e != 0 && uint32(e>>32) != tag {
			p = (p + 1) & mask
			e = atomic.LoadUint64(&v.slots[p])
		}
		known[i] = uint32(e) // 1 + a candidate id, or 0: absent
	}
	for _, c := range known {
		if c-1 < uint32(len(v.locs)) { // c ≠ 0, c−1 published
			if l := v.locs[c-1]; l.len > 0 {
				sink ^= v.chunks[l.chunk][l.off]
			}
		}
	}
	for i, c := range known {
		if c == 0 {
			continue
		}
		s := t.Bytes(uint32(i))
		if c-1 < uint32(len(v.locs)) {
			l := v.locs[c-1]
			if string(v.chunks[l.chunk][l.off:l.off+l.len]) == string(s) {
				continue
			}
		}
		id, ok := v.lookupTag(s, uint64(tags[i]))
		known[i] = 0
		if ok {
			known[i] = id + 1
		}
	}
	return sink
}
