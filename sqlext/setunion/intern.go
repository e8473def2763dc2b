package setunion

import (
	"hash/maphash"
	"math/bits"
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
// never touch the string bytes), over one byte arena for all strings: no
// allocation per string and no pointers for the garbage collector to scan. A
// lookup costs one hash of the key and usually one slot and one comparison.
// Memory is 8 bytes per slot at a load of at most 3/4, 8 bytes of offset per
// string and the strings' bytes.
//
// An Interner is not safe for concurrent use; the zero value is ready to use.
type Interner struct {
	seed  maphash.Seed
	slots []uint64 // hash>>32 << 32 | id+1; 0 is empty
	shift uint     // 64 − log2(len(slots))
	data  []byte
	ends  []int // string id is data[ends[id-1]:ends[id]] (ends[-1] = 0)
}

// Len returns the number of distinct strings interned.
func (t *Interner) Len() int { return len(t.ends) }

// Bytes returns the string with id i. The slice is the interner's own: do not
// modify it; it keeps its bytes until Reset.
func (t *Interner) Bytes(i uint32) []byte {
	start := 0
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.data[start:t.ends[i]:t.ends[i]]
}

// String returns the string with id i.
func (t *Interner) String(i uint32) string { return string(t.Bytes(i)) }

// Strings returns every interned string, indexed by id, sharing one
// allocation.
func (t *Interner) Strings() []string {
	all := string(t.data)
	out := make([]string, len(t.ends))
	start := 0
	for i, end := range t.ends {
		out[i] = all[start:end]
		start = end
	}
	return out
}

// Reset forgets every string but keeps the memory for reuse.
func (t *Interner) Reset() {
	clear(t.slots)
	t.data = t.data[:0]
	t.ends = t.ends[:0]
}

// minSlots is the size of a new table; it must be a power of two.
const minSlots = 64

// hash returns the 64-bit hash of s. A slot's position is the hash's top
// log2(len(slots)) bits and its tag the top 32 bits, so that growing the
// table re-places entries from their tags without hashing the strings again
// (tables are at most 2³² slots).
func (t *Interner) hash(s []byte) uint64 {
	if t.slots == nil {
		t.seed = maphash.MakeSeed()
		t.slots = make([]uint64, minSlots)
		t.shift = 64 - uint(bits.TrailingZeros(minSlots))
	}
	return maphash.Bytes(t.seed, s)
}

// Lookup returns the id of s, if s was interned.
func (t *Interner) Lookup(s []byte) (id uint32, ok bool) {
	if len(t.ends) == 0 {
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
	h := t.hash(s)
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
	n := len(t.ends)
	if n == maxInterned {
		panic("setunion: more than 3·2³⁰ distinct strings interned")
	}
	t.data = append(t.data, s...)
	t.ends = append(t.ends, len(t.data))
	t.slots[p] = tag | uint64(n+1)
	if 4*uint64(n+1) > 3*uint64(len(t.slots)) {
		t.grow()
	}
	return uint32(n), true
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
