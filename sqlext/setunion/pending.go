package setunion

import (
	"runtime"
	"slices"
	"sync"
)

// pending holds the grouped entries of the batches added since the last
// flush: AddBatch maps a batch's users and items to the builder's ids and
// appends the batch's entries, in input order, to buf, so that the
// goroutine that adds batches in input order neither grows users' lists
// nor deduplicates them. flush, called by AddBatch once flushMin entries
// are pending and by Group, appends them to the users' lists on all cores.
//
// The lists are those that adding the pairs one by one would build, up to
// the order of a list's unsorted tail and the points where it was
// compacted: every list is a sorted, deduplicated prefix and a tail, and
// Group compacts the tails. After Group, user u's list is the union of its
// entries sorted by item, equal items merged by saturating sums of their
// counts, which depends neither on the order of the entries nor on how
// users are split among goroutines; hence neither does the seeded output.
type pending struct {
	buf    []uint64 // entries, item<<32 | count
	pieces []piece
	// scratch[k] is the compaction buffer of flush's k-th goroutine,
	// kept from one flush to the next.
	scratch [][]uint64
	// first, next and order are flush's counting sort of the pieces by
	// user, kept from one flush to the next (a flush with 25k users
	// allocated 0.2 MB for them).
	first, next, order []uint32
}

// A piece is user's entries buf[lo:hi].
type piece struct{ user, lo, hi uint32 }

// flushMin is the number of pending entries from which AddBatch flushes
// them into the lists: 1 MiB of entries, so that pending entries add
// little memory to the lists' (at most about twice the distinct pairs, as
// lists are compacted when they have doubled). With 2 MiB the peak RSS of
// dpsql union on git_python_ecosystem was 3 MiB higher for the same CPU
// (docs/performance.md).
var flushMin = 1 << 17

// keepBatch keeps the grouped entries of a batch whose local user u maps to
// users[u] and local item i to items[i]: the distinct items of local user
// u are entries[start[u]:start[u+1]], local item<<32 | count.
func (b *Builder) keepBatch(users, items, start []uint32, entries []uint64) {
	p := &b.pend
	base := len(p.buf)
	if cap(p.buf) == 0 {
		// Room for flushMin entries and a batch or two: after the
		// first flush the buffer is reused as it is.
		p.buf = make([]uint64, 0, flushMin+flushMin/4)
	}
	p.buf = slices.Grow(p.buf, len(entries))[:base+len(entries)]
	dst := p.buf[base:]
	for k, e := range entries {
		dst[k] = uint64(items[e>>32])<<32 | e&0xffffffff
	}
	for u, gu := range users {
		if lo, hi := start[u], start[u+1]; lo < hi {
			p.pieces = append(p.pieces, piece{user: gu, lo: uint32(base) + lo, hi: uint32(base) + hi})
		}
	}
	if len(p.buf) >= flushMin {
		b.flush()
	}
}

// flush appends the pending pieces to users' lists and compacts a list
// that has doubled since its last compaction (maybeCompact). Users are
// split into contiguous ranges with about the same number of entries, one
// goroutine each (up to GOMAXPROCS), when there are at least
// parallelGroupMin; each user is done by one goroutine, so the lists do not
// depend on the split.
func (b *Builder) flush() {
	p := &b.pend
	if len(p.pieces) == 0 {
		p.buf = p.buf[:0]
		return
	}
	// Counting sort of the pieces by user, stable (a user's pieces stay
	// in input order).
	nu := len(b.lists)
	p.first = resize(p.first, nu+1)
	first := p.first
	clear(first)
	for _, pc := range p.pieces {
		first[pc.user+1]++
	}
	for u := range nu {
		first[u+1] += first[u]
	}
	p.order = resize(p.order, len(p.pieces))
	p.next = resize(p.next, nu)
	order, next := p.order, p.next
	copy(next, first[:nu])
	for k, pc := range p.pieces {
		order[next[pc.user]] = uint32(k)
		next[pc.user]++
	}
	run := func(lo, hi int, scratch *[]uint64) {
		for u := lo; u < hi; u++ {
			if first[u] < first[u+1] {
				b.appendPieces(uint32(u), order[first[u]:first[u+1]], scratch)
			}
		}
	}
	workers := 1
	if total := len(p.buf); total >= parallelGroupMin {
		workers = min(runtime.GOMAXPROCS(0), total/(parallelGroupMin/2))
	}
	if workers <= 1 {
		run(0, nu, &b.scratch)
	} else {
		// Ranges of users with about len(buf)/workers pending entries.
		var ranges [][2]int
		per := len(p.buf) / workers
		start, acc := 0, 0
		for u := range nu {
			for _, k := range order[first[u]:first[u+1]] {
				acc += int(p.pieces[k].hi - p.pieces[k].lo)
			}
			if acc >= per || u == nu-1 {
				ranges = append(ranges, [2]int{start, u + 1})
				start, acc = u+1, 0
			}
		}
		// Each goroutine keeps its compaction buffer for the next
		// flush: the radix sort needs one as long as the longest tail.
		for len(p.scratch) < len(ranges) {
			p.scratch = append(p.scratch, nil)
		}
		var wg sync.WaitGroup
		for k, r := range ranges {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(r[0], r[1], &p.scratch[k])
			}()
		}
		wg.Wait()
	}
	p.buf, p.pieces = p.buf[:0], p.pieces[:0]
}

// appendPieces appends the pieces pieces[ps[k]] of user u to its list and
// compacts the list if it has doubled since its last compaction, with
// scratch as compaction's buffer.
func (b *Builder) appendPieces(u uint32, ps []uint32, scratch *[]uint64) {
	p := &b.pend
	n := 0
	for _, i := range ps {
		n += int(p.pieces[i].hi - p.pieces[i].lo)
	}
	l := slices.Grow(b.lists[u], n)
	for _, i := range ps {
		pc := p.pieces[i]
		l = append(l, p.buf[pc.lo:pc.hi]...)
	}
	if len(l) >= 2*int(b.clean[u])+32 {
		l, *scratch = compact(l, int(b.clean[u]), *scratch)
		b.clean[u] = int32(len(l))
	}
	b.lists[u] = l
}

// reserveItems makes room for n more items in the builder's item interner
// (Interner.reserve).
func (b *Builder) reserveItems(n int) {
	b.items.reserve(n)
}
