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
