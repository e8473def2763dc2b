package setunion

import (
	"hash/maphash"
	"math"
	"math/bits"
	"strings"
	"sync/atomic"
)

// Interner maps byte strings to dense ids 0, 1, 2, … in the order they were
// first interned, and back. It is the builder's table for privacy units and
// items, and the n-gram extractor's for tokens.
//
// The ids depend only on the sequence of strings interned, never on the hash
// function or its seed: a string's id is the number of distinct strings
// interned before its first occurrence. The release's randomness is consumed
// in id order, so this is what keeps a seeded release a function of the input
// alone.
//
// It is an open-addressing table with linear probing whose slots hold the
// upper 32 bits of a string's hash next to its id (so most probes that miss
// never touch the string bytes), over an arena of byte chunks that are never
// moved: no allocation per string, no copying as the arena grows, and no
// pointers for the garbage collector to scan. A lookup costs one hash of the
// key and usually one slot and one comparison. Memory is 8 bytes per slot at
// a load of at most 3/4, 12 bytes of location per string and the strings'
// bytes (chunks of up to 1 MiB, filled but for the tail a string did not fit).
//
// An Interner is not safe for concurrent use; the zero value is ready to use.
type Interner struct {
	seed  maphash.Seed
	slots []uint64 // hash>>32 << 32 | id+1; 0 is empty
	shift uint     // 64 − log2(len(slots))
	// chunks hold the strings' bytes; chunks[cur] is being filled. A chunk
	// is never reallocated, so Bytes stays valid.
	chunks [][]byte
	cur    int
	locs   []loc // string id is chunks[locs[id].chunk][off:off+len]
	// shared is set once a View was published: slots are then written
	// with atomic stores, as views read them concurrently.
	shared bool
}

type loc struct{ chunk, off, len uint32 }

const (
	firstChunk = 4 << 10
	maxChunk   = 1 << 20
)

// store copies s into the arena and returns its location.
func (t *Interner) store(s []byte) loc {
	for t.cur < len(t.chunks) {
		c := t.chunks[t.cur]
		if cap(c)-len(c) >= len(s) {
			t.chunks[t.cur] = append(c, s...)
			return loc{uint32(t.cur), uint32(len(c)), uint32(len(s))}
		}
		if t.cur+1 == len(t.chunks) {
			break
		}
		t.cur++
	}
	size := firstChunk
	if n := len(t.chunks); n > 0 {
		size = min(2*cap(t.chunks[n-1]), maxChunk)
	}
	if uint64(len(s)) > math.MaxUint32 {
		panic("setunion: a string of 4 GiB or more cannot be interned")
	}
	c := make([]byte, len(s), max(size, len(s)))
	copy(c, s)
	t.chunks = append(t.chunks, c)
	t.cur = len(t.chunks) - 1
	return loc{uint32(t.cur), 0, uint32(len(s))}
}

// Len returns the number of distinct strings interned.
func (t *Interner) Len() int { return len(t.locs) }

// Bytes returns the string with id i. The slice is the interner's own: do not
// modify it; it keeps its bytes until Reset.
func (t *Interner) Bytes(i uint32) []byte {
	l := t.locs[i]
	return t.chunks[l.chunk][l.off : l.off+l.len : l.off+l.len]
}

// String returns the string with id i.
func (t *Interner) String(i uint32) string { return string(t.Bytes(i)) }

// Strings returns every interned string, indexed by id, sharing one
// allocation.
func (t *Interner) Strings() []string {
	var b strings.Builder
	for i := range t.locs {
		b.Write(t.Bytes(uint32(i)))
	}
	all := b.String()
	out := make([]string, len(t.locs))
	start := 0
	for i, l := range t.locs {
		out[i] = all[start : start+int(l.len)]
		start += int(l.len)
	}
	return out
}

// Reset forgets every string but keeps memory for reuse: the table and the
// largest chunk.
func (t *Interner) Reset() {
	clear(t.slots)
	if len(t.chunks) > 0 {
		big := t.chunks[0]
		for _, c := range t.chunks[1:] {
			if cap(c) > cap(big) {
				big = c
			}
		}
		clear(t.chunks)
		t.chunks = append(t.chunks[:0], big[:0])
	}
	t.cur = 0
	t.locs = t.locs[:0]
}

// minSlots is the size of a new table; it must be a power of two.
const minSlots = 64

// hash returns the 64-bit hash of s. A slot's position is the hash's top
// log2(len(slots)) bits and its tag the top 32 bits, so that growing the
// table re-places entries from their tags without hashing the strings again
// (tables are at most 2³² slots).
func (t *Interner) hash(s []byte) uint64 {
	t.init()
	return maphash.Bytes(t.seed, s)
}

// init makes the table of a new interner, and its seed unless one was set
// (Dictionary's shards share the dictionary's).
//
// It is called once per string hashed or interned, so it is kept small
// enough to inline: the table is made out of line, once.
func (t *Interner) init() {
	if t.slots == nil {
		t.makeTable()
	}
}

func (t *Interner) makeTable() {
	if t.seed == (maphash.Seed{}) {
		t.seed = maphash.MakeSeed()
	}
	t.slots = make([]uint64, minSlots)
	t.shift = 64 - uint(bits.TrailingZeros(minSlots))
}

// Lookup returns the id of s, if s was interned.
func (t *Interner) Lookup(s []byte) (id uint32, ok bool) {
	if len(t.locs) == 0 {
		return 0, false
	}
	h := t.hash(s)
	tag := h >> 32 << 32
	mask := uint64(len(t.slots) - 1)
	for p := h >> t.shift; ; p = (p + 1) & mask {
		e := t.slots[p]
		if e == 0 {
			return 0, false
		}
		if e&^0xffffffff == tag {
			if i := uint32(e) - 1; string(t.Bytes(i)) == string(s) {
				return i, true
			}
		}
	}
}

// ID returns the id of s, interning a copy of s if it is new (added is then
// true).
func (t *Interner) ID(s []byte) (id uint32, added bool) {
	return t.idHash(s, t.hash(s))
}

// idHash is ID for a string whose hash under t's seed is h.
func (t *Interner) idHash(s []byte, h uint64) (id uint32, added bool) {
	t.init()
	tag := h >> 32 << 32
	mask := uint64(len(t.slots) - 1)
	p := h >> t.shift
	for ; ; p = (p + 1) & mask {
		e := t.slots[p]
		if e == 0 {
			break
		}
		if e&^0xffffffff == tag {
			if i := uint32(e) - 1; string(t.Bytes(i)) == string(s) {
				return i, false
			}
		}
	}
	n := len(t.locs)
	if n == maxInterned {
		panic("setunion: more than 3·2³⁰ distinct strings interned")
	}
	t.locs = append(t.locs, t.store(s))
	if t.shared {
		atomic.StoreUint64(&t.slots[p], tag|uint64(n+1))
	} else {
		t.slots[p] = tag | uint64(n+1)
	}
	if 4*uint64(n+1) > 3*uint64(len(t.slots)) {
		t.grow()
	}
	return uint32(n), true
}

// reserve makes room for the locations of n more strings, at least doubling
// the capacity when it grows: append grows a large slice by a quarter, so
// interning m strings one at a time would copy the locations about 4m
// times instead of 2m (AddBatch, which knows a batch's items, reserves
// before interning them).
func (t *Interner) reserve(n int) {
	if need := len(t.locs) + n; need > cap(t.locs) {
		t.locs = append(make([]loc, 0, max(need, 2*cap(t.locs))), t.locs...)
	}
}

// maxInterned keeps the table within 2³² slots (at a load of at most 3/4),
// where a slot's tag holds every bit of its position.
const maxInterned = 3<<30 - 1

// grow doubles the table, re-placing every entry by its tag.
func (t *Interner) grow() {
	slots := make([]uint64, 2*len(t.slots))
	mask := uint64(len(slots) - 1)
	shift := t.shift - 1
	for _, e := range t.slots {
		if e == 0 {
			continue
		}
		p := e >> shift // the top bits of the tag, hence of the hash
		for slots[p] != 0 {
			p = (p + 1) & mask
		}
		slots[p] = e
	}
	t.slots, t.shift = slots, shift
}
