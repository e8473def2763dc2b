package setunion

import (
	"context"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Summing an additive histogram on several cores.
//
// The additive rules (the counts, single_item, the weighted rules and every
// round of dp_sips) add to each of a user's items the same weight c(n), a
// function of the user's number n of (bounded) items only. H[i] is then the
// sum of c(n_v) over the users v holding item i, added in the users' order.
// Floating-point addition is not associative, so to give the same bits as
// one goroutine (and so the same seeded release), the sum of each item must
// be taken in that order: the goroutines split the items, not the users.
// Goroutine j of P owns a contiguous range of item ids (its ends multiples
// of 8, so no two goroutines write one 64-byte cache line of H), chosen so
// that the ranges hold about as many pairs each, and reads every user in
// order. Every list is strictly ascending by item id (the builder's lists
// after Group, and prepared input, which Prepare checks), so a goroutine
// finds the part of a user's list in its range by binary search and reads
// only that part: each pair is read once in all, not once per goroutine,
// and no branch asks whose item it is. The random part of a round, the
// uniform sample of the users with more than Δ0 items, is drawn before, on
// one goroutine, in the users' order and with the same words, so the rng is
// consumed exactly as by Histogram.Update over the users one by one: only
// the swap targets are drawn there (securerand.SampleSwaps; they depend on
// a user's count and Δ0 alone), and the swaps, which read the lists, are
// made on all cores, each sample then split by the goroutines' ranges.

// parallelHistogramMin is the number of (user, item) pairs from which an
// additive histogram is summed on all cores.
const parallelHistogramMin = 1 << 18

// additive reports whether m's update adds the same weight, additiveWeight,
// to each of a user's items.
func (m Mechanism) additive() bool {
	switch m {
	case CountLaplace, CountGaussian, SingleItem, WeightedLaplace, WeightedGaussian, DPSIPS:
		return true
	}
	return false
}

// additiveWeight is the weight an additive rule m adds to each item of a
// user with n > 0 items: 1/n for weighted_laplace (ℓ1 norm 1), 1/√n for the
// Gaussian weighted rules (ℓ2 norm 1), 1 for the counts and single_item.
func additiveWeight(m Mechanism, n int) float64 {
	switch m {
	case WeightedLaplace:
		return 1 / float64(n)
	case WeightedGaussian, DPSIPS:
		return 1 / math.Sqrt(float64(n))
	}
	return 1
}

// SetHistogramWorkers lets Release sum the additive histograms (the
// counts, single_item, the weighted rules and every round of dp_sips) of
// inputs with at least 2^18 (user, item) pairs on up to n goroutines (the
// largest power of two not above n). The release is the same bit for bit
// for every n. Each pair is still read once, but every goroutine walks all
// the users (a binary search in each list) and the samples are drawn on
// one goroutine first, so it costs more CPU than one goroutine and, on
// git_python_ecosystem, also more wall time: `dpsql union` does not use it
// (docs/performance.md, 27 November 2026). The default is one goroutine.
func (b *Builder) SetHistogramWorkers(n int) { b.histWorkers = n }

// histogramWorkers returns how many goroutines sum an additive histogram of
// pairs (user, item) pairs when up to n may: a power of two, 1 below
// parallelHistogramMin pairs.
func histogramWorkers(n, pairs int) int {
	if pairs < parallelHistogramMin || n < 2 {
		return 1
	}
	return 1 << (bits.Len(uint(n)) - 1)
}

// userLists reads the users' item ids: from prepared input's flat ids when
// flat is not nil, else from the builder's lists (item id in the high 32
// bits of each entry).
type userLists struct {
	flat  *flatLists
	lists [][]uint64
}

// raw returns user u's ids (flat input) or entries (lists); the other is nil.
func (l userLists) raw(u uint32) ([]uint32, []uint64) {
	if l.flat != nil {
		return l.flat.ids[l.flat.off[u]:l.flat.off[u+1]], nil
	}
	return nil, l.lists[u]
}

// flatUsers returns the number of users of flat input, 0 for lists.
func (l userLists) flatUsers() int {
	if l.flat == nil {
		return 0
	}
	return len(l.flat.off) - 1
}

// pairs returns the number of (user, item) pairs.
func (l userLists) pairs() int {
	if l.flat != nil {
		return len(l.flat.ids)
	}
	n := 0
	for _, e := range l.lists {
		n += len(e)
	}
	return n
}

// idOf is the item id of a flat id (shift 0) or a list entry (shift 32).
func idOf[E uint32 | uint64](e E, shift uint) uint32 { return uint32(uint64(e) >> shift) }

// excluded reports whether item i is in the bitset exclude (nil: none).
func excluded(exclude []uint64, i uint32) bool {
	return exclude != nil && exclude[i>>6]&(1<<(i&63)) != 0
}

// countLeft returns how many of ids are not excluded.
func countLeft[E uint32 | uint64](ids []E, shift uint, exclude []uint64) int32 {
	if exclude == nil {
		return int32(len(ids))
	}
	c := int32(0)
	for _, e := range ids {
		i := idOf(e, shift)
		c += int32(^exclude[i>>6]>>(i&63)) & 1
	}
	return c
}

// appendLeft appends the ids not excluded to dst, in order.
func appendLeft[E uint32 | uint64](dst []uint32, ids []E, shift uint, exclude []uint64) []uint32 {
	for _, e := range ids {
		if i := idOf(e, shift); !excluded(exclude, i) {
			dst = append(dst, i)
		}
	}
	return dst
}

// addSortedIDs adds w to W[i] for the ids i in [lo, hi) not excluded, for
// ids strictly ascending: it reads only the ids in the range, found by
// binary search (none at an end of the item ids, 0 or all).
func addSortedIDs(W []float64, ids []uint32, exclude []uint64, w float64, lo, hi uint32, all bool) {
	if lo > 0 {
		k, _ := slices.BinarySearch(ids, lo)
		ids = ids[k:]
	}
	if !all {
		k, _ := slices.BinarySearch(ids, hi)
		ids = ids[:k]
	}
	for _, i := range ids {
		if !excluded(exclude, i) {
			W[i] += w
		}
	}
}

// addSortedEntries is addSortedIDs for list entries (item id in the high
// 32 bits, a count ≥ 1 in the low ones), which are then ascending as
// numbers too: the first entry of an item ≥ t is the first entry ≥ t<<32.
func addSortedEntries(W []float64, entries []uint64, exclude []uint64, w float64, lo, hi uint32, all bool) {
	if lo > 0 {
		k, _ := slices.BinarySearch(entries, uint64(lo)<<32)
		entries = entries[k:]
	}
	if !all {
		k, _ := slices.BinarySearch(entries, uint64(hi)<<32)
		entries = entries[:k]
	}
	for _, e := range entries {
		if i := uint32(e >> 32); !excluded(exclude, i) {
			W[i] += w
		}
	}
}

// itemRanges splits the item ids 0..items−1 into workers contiguous ranges,
// bounds[j] to bounds[j+1], with about as many pairs each, estimated from
// every 16th user's list; inner bounds are multiples of 8 (one cache line
// of H). The split only balances the goroutines' work: any split gives the
// same sums.
func itemRanges(src userLists, users, items, workers int) []uint32 {
	blocks := (items + 7) / 8
	per := make([]int, blocks)
	total := 0
	for u := 0; u < users; u += 16 {
		ids, entries := src.raw(uint32(u))
		for _, i := range ids {
			per[i>>3]++
		}
		for _, e := range entries {
			per[e>>35]++
		}
		total += len(ids) + len(entries)
	}
	bounds := make([]uint32, workers+1)
	bounds[workers] = uint32(items)
	j, sum := 1, 0
	for blk, c := range per {
		for j < workers && sum >= total*j/workers {
			bounds[j] = uint32(8 * blk)
			j++
		}
		sum += c
	}
	for ; j < workers; j++ {
		bounds[j] = uint32(items)
	}
	return bounds
}

// additiveScratch is the memory of one parallelAdditive call, kept in
// scratchPool for the next (the rounds of dp_sips, the next release): fresh
// pages cost a page fault each (about 10–16 µs on the machines measured in
// docs/performance.md), more than the sums they would hold.
type additiveScratch struct {
	n       []int32  // each user's number of items left, by position in order
	sampled []int32  // the positions of the users above the bound, ascending
	swaps   []uint32 // their swap targets, then their samples, bound each
	cuts    []int32  // where each goroutine's range starts in each sample
}

var scratchPool = sync.Pool{New: func() any { return new(additiveScratch) }}

// parallelAdditive builds h (an additive rule, empty) over users in order
// with workers goroutines, giving the same H, bit for bit, and consuming rng
// exactly as Histogram.Update called on each user in order after the same
// exclusion and bounding to bound items.
func parallelAdditive(ctx context.Context, rng *rand.Rand, h *Histogram, src userLists, order []uint32, bound int, exclude []uint64, workers int) error {
	sc := scratchPool.Get().(*additiveScratch)
	defer scratchPool.Put(sc)
	// 1. Each user's number of items left after exclusion, on all cores
	// (no randomness).
	n := slices.Grow(sc.n[:0], len(order))[:len(order)]
	sc.n = n
	if err := forChunks(ctx, len(order), workers, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			if (k-lo)%checkUsers == 0 && ctx.Err() != nil {
				return
			}
			ids, entries := src.raw(order[k])
			n[k] = countLeft(ids, 0, exclude) + countLeft(entries, 32, exclude)
		}
	}); err != nil {
		return err
	}
	// 2. The uniform samples of the users above the bound. The swap
	// targets SampleIDs would draw are drawn here, in order, with its
	// words (securerand.SampleSwaps): they depend on a user's count and the
	// bound only, so this is the one serial step, about 6 ns a target.
	sampled := sc.sampled[:0]
	for k := range order {
		if int(n[k]) > bound {
			sampled = append(sampled, int32(k))
		}
	}
	sc.sampled = sampled
	swaps := slices.Grow(sc.swaps[:0], len(sampled)*bound)
	for s, k := range sampled {
		if s%checkUsers == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		swaps = securerand.SampleSwaps(rng, int(n[k]), bound, swaps)
		n[k] = int32(bound)
	}
	sc.swaps = swaps
	// The swaps are made on all cores, each user's sample overwriting its
	// targets: swaps[s*bound:(s+1)*bound] is then the sample of the user
	// at position sampled[s], grouped by the goroutine of step 3 whose
	// range of items holds them (a counting sort by range): that
	// goroutine's part starts at cuts[s*(workers+1)+j] and ends where the
	// next one's starts. A user adds the same weight to each of its items
	// once, so the order within a user changes no item's sum.
	bounds := itemRanges(src, len(src.lists)+src.flatUsers(), len(h.W), workers)
	cuts := slices.Grow(sc.cuts[:0], len(sampled)*(workers+1))[:len(sampled)*(workers+1)]
	sc.cuts = cuts
	if err := forChunks(ctx, len(sampled), workers, func(lo, hi int) {
		var buf []uint32
		for s := lo; s < hi; s++ {
			if (s-lo)%checkUsers == 0 && ctx.Err() != nil {
				return
			}
			ids, entries := src.raw(order[sampled[s]])
			buf = appendLeft(appendLeft(buf[:0], ids, 0, exclude), entries, 32, exclude)
			js := swaps[s*bound : (s+1)*bound]
			sample := securerand.ApplySwaps(buf, js)
			splitByRange(js, sample, bounds, cuts[s*(workers+1):(s+1)*(workers+1)])
		}
	}); err != nil {
		return err
	}
	// 3. The sums, each goroutine over its own range of items and every
	// user in order.
	return forChunks(ctx, workers, workers, func(j, _ int) {
		lo, hi := bounds[j], bounds[j+1]
		if lo == hi {
			return
		}
		all := int(hi) == len(h.W) // the last range: no upper search
		next := 0                  // the first user of sampled not yet met
		for k, u := range order {
			if k%checkUsers == 0 && ctx.Err() != nil {
				return
			}
			if next < len(sampled) && int(sampled[next]) == k {
				if bound > 0 {
					w := additiveWeight(h.rule, bound)
					c := cuts[next*(workers+1)+j : next*(workers+1)+j+2]
					addIDs(h.W, swaps[next*bound+int(c[0]):next*bound+int(c[1])], w)
				}
				next++
				continue
			}
			if n[k] == 0 {
				continue
			}
			w := additiveWeight(h.rule, int(n[k]))
			ids, entries := src.raw(u)
			addSortedIDs(h.W, ids, exclude, w, lo, hi, all)
			addSortedEntries(h.W, entries, exclude, w, lo, hi, all)
		}
	})
}

// splitByRange writes the ids of sample to dst (of the same length, not
// overlapping it) grouped by the range bounds[j] ≤ i < bounds[j+1] that
// holds them, in order of j and stable within a range, and sets cut[j] to
// where range j starts in dst (cut[len(bounds)−1] = len(dst)).
func splitByRange(dst, sample []uint32, bounds []uint32, cut []int32) {
	workers := len(bounds) - 1
	clear(cut)
	for _, i := range sample {
		cut[rangeOf(i, bounds, workers)+1]++
	}
	for j := 1; j <= workers; j++ {
		cut[j] += cut[j-1]
	}
	var at [9]int32
	pos := at[:0]
	if workers+1 > len(at) {
		pos = make([]int32, 0, workers)
	}
	pos = append(pos, cut[:workers]...)
	for _, i := range sample {
		r := rangeOf(i, bounds, workers)
		dst[pos[r]] = i
		pos[r]++
	}
}

// rangeOf returns the j with bounds[j] ≤ i < bounds[j+1] (bounds ascending,
// bounds[0] = 0, i below bounds[workers]).
func rangeOf(i uint32, bounds []uint32, workers int) int {
	j := 0
	for j+1 < workers && i >= bounds[j+1] {
		j++
	}
	return j
}

// addIDs adds w to W[i] for each id i.
func addIDs(W []float64, ids []uint32, w float64) {
	for _, i := range ids {
		W[i] += w
	}
}

// forChunks calls f(lo, hi) on workers goroutines for contiguous ranges
// covering 0..n−1 (with n = workers, f(j, j+1) for each j) and waits for
// them; it returns ctx's error if ctx was done when they finished.
func forChunks(ctx context.Context, n, workers int, f func(lo, hi int)) error {
	var wg sync.WaitGroup
	for j := range workers {
		lo, hi := n*j/workers, n*(j+1)/workers
		if lo == hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
	return ctx.Err()
}
