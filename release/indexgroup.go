package release

import (
	"runtime"
	"slices"
	"sync"
)

// grouping is what an index build makes of the rows it records: the
// state a setunion.Builder reaches from the same (unit, item) pairs fed in
// row order, with each pair's first row.
type grouping struct {
	users []string // units' texts, in order of first row
	items []string // keyItem of the values, in order of first row
	// Unit u's pairs are ents[offs[u]:offs[u+1]]:
	// setunion.GroupedEntry(item, rows), ascending item, with the ordinal of
	// the pair's first recorded row in first.
	offs  []uint32
	ents  []uint64
	first []uint32
	occ   int64 // rows recorded
	// nullOcc counts the rows whose value is NULL, and nnOrder lists the
	// units in order of their first non-NULL value.
	nullOcc int64
	nnOrder []uint32
}

// groupWords groups the recorded rows laid out by unit: unit u's rows are
// words[start[u]:start[u+1]], in row order, each word item<<32 | row
// (item < items). It returns per unit its distinct items, ascending, with
// their row counts and first rows (grouping's offs, ents and first), on
// all cores. It overwrites words.
//
// A unit's rows are deduplicated in row order with an array indexed by
// item (so the first row of a pair is the first one met), and only its
// distinct items are sorted: fewer than its rows, and no map per pair.
func groupWords(start []uint32, words []uint64, items int) (offs []uint32, ents []uint64, first []uint32) {
	nu := len(start) - 1
	counts := make([]uint32, len(words))
	pairs := make([]uint32, nu)
	parallelUnits(start, func(lo, hi int) {
		d := deduper{slot: make([]uint32, items)}
		for u := lo; u < hi; u++ {
			pairs[u] = uint32(d.dedupe(words[start[u]:start[u+1]], counts[start[u]:start[u+1]]))
		}
	})
	offs = make([]uint32, nu+1)
	for u := range nu {
		offs[u+1] = offs[u] + pairs[u]
	}
	ents = make([]uint64, offs[nu])
	first = make([]uint32, offs[nu])
	parallelUnits(start, func(lo, hi int) {
		for u := lo; u < hi; u++ {
			w, c := words[start[u]:start[u]+pairs[u]], counts[start[u]:]
			e, f := ents[offs[u]:offs[u+1]], first[offs[u]:offs[u+1]]
			for j, x := range w {
				e[j] = x>>32<<32 | uint64(c[j])
				f[j] = uint32(x)
			}
		}
	})
	return offs, ents, first
}

// deduper is one worker's scratch space for groupWords.
type deduper struct {
	slot []uint32 // per item: 0, or 1 + its index in cnt and fr while the unit is grouped
	loc  []uint64 // the unit's distinct items: item<<32 | index in cnt and fr
	cnt  []uint32 // per distinct item, its rows
	fr   []uint32 // per distinct item, its first row
}

// dedupe groups the words w of one unit (item<<32 | row, ascending row): it
// rewrites w[:n] as the unit's n distinct items, ascending, each as
// item<<32 | its first row, and c[:n] as their row counts, and returns n.
// The counts cannot overflow: a build records fewer than 2³² − 1 rows.
func (d *deduper) dedupe(w []uint64, c []uint32) int {
	d.loc, d.cnt, d.fr = d.loc[:0], d.cnt[:0], d.fr[:0]
	for _, x := range w {
		it := x >> 32
		if s := d.slot[it]; s != 0 {
			d.cnt[s-1]++
			continue
		}
		n := uint32(len(d.cnt))
		d.slot[it] = n + 1
		d.loc = append(d.loc, it<<32|uint64(n))
		d.cnt = append(d.cnt, 1)
		d.fr = append(d.fr, uint32(x))
	}
	slices.Sort(d.loc)
	for j, e := range d.loc {
		n := uint32(e)
		w[j] = e>>32<<32 | uint64(d.fr[n])
		c[j] = d.cnt[n]
		d.slot[e>>32] = 0
	}
	return len(d.loc)
}

// parallelUnits calls f for contiguous ranges [lo, hi) of the units that
// together cover them all, of about equal rows (start[u]:start[u+1] are
// unit u's rows), one range per core, each in a goroutine of its own.
func parallelUnits(start []uint32, f func(lo, hi int)) {
	nu := len(start) - 1
	workers := min(runtime.GOMAXPROCS(0), max(nu, 1))
	total := int(start[nu])
	if workers <= 1 || total < 1<<16 {
		f(0, nu)
		return
	}
	var wg sync.WaitGroup
	lo := 0
	for w := range workers {
		hi := nu
		if w < workers-1 {
			target := uint32(total / workers * (w + 1))
			hi, _ = slices.BinarySearch(start[:nu+1], target)
			hi = max(hi, lo)
		}
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, hi)
		lo = hi
	}
	wg.Wait()
}
