package setunion

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestParallelHistogramSameBits checks that the additive histograms summed
// on several goroutines (parallelAdditive) equal the one-goroutine
// histogram bit for bit and leave the random source where it leaves it, for
// every additive rule, with and without excluded items, with and without
// bounding, over a builder's lists and over prepared flat ids.
func TestParallelHistogramSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pairs := pairsOf(r, 400_000, 3000, 5000)
	o := Defaults()
	o.Epsilon, o.MaxItems = 4, 5
	lb, err := NewBuilder(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		lb.Add(p[0], p[1])
	}
	lb.Group()
	prep, err := Prepare(groupPairs(pairs))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := NewPreparedBuilder(o, prep)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*Builder{"lists": lb, "prepared": pb} {
		src := userLists{lists: b.lists}
		if b.prep != nil {
			src = userLists{flat: b.prep.flat()}
		}
		// parallelAdditive reads a user's items in a range by binary
		// search: every list must be strictly ascending by item.
		for u := range b.numUsers() {
			ids, entries := src.raw(uint32(u))
			if !slices.IsSortedFunc(entries, func(x, y uint64) int { return cmp.Compare(x>>32, y>>32) }) || !slices.IsSorted(ids) {
				t.Fatalf("%s: user %d's list is not ascending by item", name, u)
			}
		}
		if src.pairs() < parallelHistogramMin {
			t.Fatalf("%s: %d pairs, below the parallel threshold", name, src.pairs())
		}
		order := r.Perm(b.numUsers())
		ord := make([]uint32, len(order))
		for k, u := range order {
			ord[k] = uint32(u)
		}
		exclude := make([]uint64, (b.numItems()+63)/64)
		for i := range exclude {
			exclude[i] = r.Uint64() & r.Uint64() // a quarter of the items
		}
		for _, m := range []Mechanism{CountLaplace, CountGaussian, SingleItem, WeightedLaplace, WeightedGaussian, DPSIPS} {
			for _, bound := range []int{1, 5, math.MaxInt32} {
				for _, ex := range [][]uint64{nil, exclude} {
					seed := r.Uint64()
					want, wantNext := sequentialHistogram(t, b, m, ord, bound, ex, seed)
					b.SetHistogramWorkers(3) // two goroutines, through Builder.histogram
					rng := rand.New(rand.NewPCG(seed, 1))
					h, err := b.histogram(context.Background(), rng, [2]uint64{1, 2}, ord, m, 0, bound, ex)
					b.SetHistogramWorkers(0)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.EqualFunc(h.W, want, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }) || rng.Uint64() != wantNext {
						t.Fatalf("%s %s bound %d exclude %v: Builder.histogram on two goroutines differs", name, m, bound, ex != nil)
					}
					for _, workers := range []int{2, 4, 8} {
						rng := rand.New(rand.NewPCG(seed, 1))
						h := NewHistogram(m, 0, b.numItems())
						if err := parallelAdditive(context.Background(), rng, h, src, ord, bound, ex, workers); err != nil {
							t.Fatal(err)
						}
						for i := range want {
							if math.Float64bits(h.W[i]) != math.Float64bits(want[i]) {
								t.Fatalf("%s %s bound %d exclude %v, %d goroutines: H[%d] = %v, want %v",
									name, m, bound, ex != nil, workers, i, h.W[i], want[i])
							}
						}
						if next := rng.Uint64(); next != wantNext {
							t.Errorf("%s %s bound %d exclude %v, %d goroutines: the random source moved differently",
								name, m, bound, ex != nil, workers)
						}
					}
				}
			}
		}
	}
}

// sequentialHistogram is Builder.histogram with one goroutine: H and the
// next draw of its random source.
func sequentialHistogram(t *testing.T, b *Builder, m Mechanism, order []uint32, bound int, exclude []uint64, seed uint64) ([]float64, uint64) {
	t.Helper()
	defer b.SetHistogramWorkers(b.histWorkers)
	b.SetHistogramWorkers(1)
	rng := rand.New(rand.NewPCG(seed, 1))
	h, err := b.histogram(context.Background(), rng, [2]uint64{1, 2}, order, m, 0, bound, exclude)
	if err != nil {
		t.Fatal(err)
	}
	return h.W, rng.Uint64()
}
