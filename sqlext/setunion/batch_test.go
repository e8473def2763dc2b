package setunion

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// pairsOf draws n (user, item) pairs shaped like text: users' rows mostly
// together, scattered now and then, skewed item frequencies, empty users and
// empty items.
func pairsOf(r *rand.Rand, n, users, items int) [][2]string {
	out := make([][2]string, n)
	u := 0
	for k := range out {
		if r.IntN(8) == 0 {
			u = r.IntN(users)
		}
		user := fmt.Sprintf("u%d", u)
		if r.IntN(200) == 0 {
			user = ""
		}
		item := fmt.Sprintf("i%d", int(r.ExpFloat64()*float64(items)/5)%items)
		if r.IntN(300) == 0 {
			item = ""
		}
		out[k] = [2]string{user, item}
	}
	return out
}

// builderState is everything a release reads from a grouped builder.
type builderState struct {
	users, items []string
	lists        [][]uint64
	stats        Stats
}

func stateOf(b *Builder) builderState {
	st := b.Group()
	return builderState{b.users.Strings(), b.items.Strings(), b.lists, st}
}

func (s builderState) equal(o builderState) bool {
	return slices.Equal(s.users, o.users) && slices.Equal(s.items, o.items) && s.stats == o.stats &&
		slices.EqualFunc(s.lists, o.lists, func(a, b []uint64) bool { return slices.Equal(a, b) })
}

// batchesOf adds pairs to a new builder in batches cut at random points,
// with a user id looked up once per run of equal users as the commands do.
// mode 0 uses a zero Batch, 1 one from NewBatch (its items interned in the
// builder's dictionary), 2 as 1 with some runs of pairs added one by one
// between batches, and the first batch made after a first pair was added.
func batchesOf(t *testing.T, r *rand.Rand, o Options, pairs [][2]string, mode int) *Builder {
	b, err := NewBuilder(o)
	if err != nil {
		t.Fatal(err)
	}
	var bt Batch
	k := 0
	if mode == 2 && len(pairs) > 0 {
		b.Add(pairs[0][0], pairs[0][1])
		k = 1
	}
	if mode > 0 {
		bt = *b.NewBatch()
	}
	for k < len(pairs) {
		end := min(len(pairs), k+1+r.IntN(len(pairs)/3+1))
		if mode == 2 && r.IntN(3) == 0 {
			for ; k < end; k++ {
				b.Add(pairs[k][0], pairs[k][1])
			}
			continue
		}
		for ; k < end; k++ {
			if r.IntN(2) == 0 {
				bt.AddBytes([]byte(pairs[k][0]), []byte(pairs[k][1]))
			} else if u, ok := bt.UserID([]byte(pairs[k][0])); ok {
				bt.AddID(u, []byte(pairs[k][1]))
			}
		}
		if r.IntN(2) == 0 {
			bt.Group()
		}
		b.AddBatch(&bt)
		bt.Reset()
	}
	return b
}

// TestAddBatchEqualsAdd: for random inputs cut into random batches, the
// grouped builder (ids, lists, counts, statistics) and the seeded release of
// every mechanism are exactly those of adding the pairs one by one.
func TestAddBatchEqualsAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	mechs := []Mechanism{DPSIPS, WeightedGaussian, PolicyGaussianL2, GreedyFrequency, CountGaussian, SingleItem}
	for trial := range 40 {
		pairs := pairsOf(r, 1+r.IntN(20000), 1+r.IntN(400), 1+r.IntN(3000))
		o := Defaults()
		o.Epsilon, o.Delta = 3, 1e-6
		o.Mechanism = mechs[trial%len(mechs)]
		if trial%3 == 0 && o.Mechanism == DPSIPS {
			o.MaxItems = 0 // chosen privately
		}
		if o.Mechanism == SingleItem {
			o.MaxItems = 1
		}
		one, err := NewBuilder(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pairs {
			one.Add(p[0], p[1])
		}
		mode := trial % 3
		many := batchesOf(t, r, o, pairs, mode)
		if a, b := stateOf(one), stateOf(many); !a.equal(b) {
			t.Fatalf("trial %d (batch mode %d): grouped state differs: %+v vs %+v", trial, mode, a.stats, b.stats)
		}
		seed := r.Uint64()
		ra := one.Release(rand.New(rand.NewPCG(seed, 1)))
		rb := many.Release(rand.New(rand.NewPCG(seed, 1)))
		if !slices.Equal(ra.Items, rb.Items) || ra.Stats != rb.Stats || ra.Missing != rb.Missing || ra.Support != rb.Support {
			t.Fatalf("trial %d (%s): releases differ: %d vs %d items", trial, o.Mechanism, len(ra.Items), len(rb.Items))
		}
	}
}

// TestAddCountSaturates: merged counts saturate at 2³²−1.
func TestAddCountSaturates(t *testing.T) {
	e := uint64(7)<<32 | 0xfffffff0
	if got := addCount(e, 100); got != uint64(7)<<32|0xffffffff {
		t.Fatalf("addCount = %x", got)
	}
}

// TestBatchesConcurrent fills batches on several goroutines and adds them in
// order on one, as the batch commands do (run with -race), with 1, 2 and 5
// workers and GOMAXPROCS 1 and 2: the grouped builder is always the same.
func TestBatchesConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pairs := pairsOf(r, 60000, 500, 4000)
	o := Defaults()
	want := func() builderState {
		b, _ := NewBuilder(o)
		for _, p := range pairs {
			b.Add(p[0], p[1])
		}
		return stateOf(b)
	}()
	for _, procs := range []int{1, 2} {
		for _, workers := range []int{1, 2, 5} {
			for _, dict := range []bool{false, true} {
				prev := runtime.GOMAXPROCS(procs)
				b, _ := NewBuilder(o)
				const size = 777
				n := (len(pairs) + size - 1) / size
				bound := make([]*Batch, n) // made on the builder's goroutine
				for k := range bound {
					bound[k] = b.NewBatch()
				}
				batches := make([]*Batch, n)
				done := make([]chan struct{}, n)
				for k := range done {
					done[k] = make(chan struct{})
				}
				jobs := make(chan int)
				var wg sync.WaitGroup
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for k := range jobs {
							bt := new(Batch)
							if dict {
								bt = bound[k]
							}
							for _, p := range pairs[k*size : min(len(pairs), (k+1)*size)] {
								bt.AddBytes([]byte(p[0]), []byte(p[1]))
							}
							bt.Group()
							batches[k] = bt
							close(done[k])
						}
					}()
				}
				go func() {
					for k := range n {
						jobs <- k
					}
					close(jobs)
				}()
				for k := range n {
					<-done[k]
					b.AddBatch(batches[k])
				}
				wg.Wait()
				runtime.GOMAXPROCS(prev)
				if got := stateOf(b); !got.equal(want) {
					t.Fatalf("GOMAXPROCS %d, %d workers, dictionary %v: grouped state differs", procs, workers, dict)
				}
			}
		}
	}
}

// BenchmarkGrouping adds 2M pairs shaped like tokenised text (a user's rows
// in runs of about 150 tokens, 30,000 users, Zipf-distributed words out of
// 200,000) and groups them: one by one (AddBytes), or in batches of 30,000
// pairs filled on GOMAXPROCS goroutines and added in order (AddBatch), as
// the batch commands do.
func BenchmarkGrouping(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	z := rand.NewZipf(r, 1.1, 2, 200000-1)
	pairs := make([][2][]byte, 2_000_000)
	var user []byte
	for i := range pairs {
		if r.IntN(150) == 0 || user == nil {
			user = fmt.Appendf(nil, "%016x", r.IntN(30000)*2654435761)
		}
		pairs[i] = [2][]byte{user, fmt.Appendf(nil, "w%d", z.Uint64())}
	}
	o := Defaults()
	b.Run("add", func(b *testing.B) {
		for b.Loop() {
			bu, _ := NewBuilder(o)
			for _, p := range pairs {
				bu.AddBytes(p[0], p[1])
			}
			bu.Group()
		}
		b.ReportMetric(float64(len(pairs)*b.N)/b.Elapsed().Seconds(), "pairs/s")
	})
	b.Run("batches", func(b *testing.B) {
		const size = 30000
		n := (len(pairs) + size - 1) / size
		for b.Loop() {
			bu, _ := NewBuilder(o)
			batches := make([]Batch, n)
			done := make([]chan struct{}, n)
			next := make(chan int, n)
			for k := range n {
				done[k] = make(chan struct{})
				next <- k
			}
			close(next)
			for range runtime.GOMAXPROCS(0) {
				go func() {
					for k := range next {
						for _, p := range pairs[k*size : min(len(pairs), (k+1)*size)] {
							batches[k].AddBytes(p[0], p[1])
						}
						batches[k].Group()
						close(done[k])
					}
				}()
			}
			for k := range n {
				<-done[k]
				bu.AddBatch(&batches[k])
				batches[k] = Batch{}
			}
			bu.Group()
		}
		b.ReportMetric(float64(len(pairs)*b.N)/b.Elapsed().Seconds(), "pairs/s")
	})
}

// TestGroupParallel: a builder with more than parallelGroupMin entries left
// to sort groups on several goroutines (GOMAXPROCS 2) exactly as on one
// (run with -race).
func TestGroupParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	pairs := pairsOf(r, 4*parallelGroupMin, 20000, 5000)
	build := func(procs int) builderState {
		prev := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(prev)
		b, _ := NewBuilder(Defaults())
		var bt Batch
		for k, p := range pairs {
			bt.AddBytes([]byte(p[0]), []byte(p[1]))
			if k%5000 == 4999 {
				b.AddBatch(&bt)
				bt.Reset()
			}
		}
		b.AddBatch(&bt)
		dirty := len(b.pend.buf)
		for u, l := range b.lists {
			dirty += len(l) - int(b.clean[u])
		}
		if dirty < parallelGroupMin {
			t.Fatalf("only %d entries left to sort: the parallel path is not exercised", dirty)
		}
		return stateOf(b)
	}
	if one, two := build(1), build(2); !one.equal(two) {
		t.Fatal("grouping on two goroutines differs from one")
	}
}

// TestAddBatchFlushEarly: with pending entries merged into the lists after
// every few batches (flushMin small), and pairs added one by one between
// batches, the grouped builder is still that of adding the pairs one by one.
func TestAddBatchFlushEarly(t *testing.T) {
	defer func(n int) { flushMin = n }(flushMin)
	r := rand.New(rand.NewPCG(9, 10))
	for trial := range 12 {
		flushMin = []int{1, 50, 3000}[trial%3]
		pairs := pairsOf(r, 1+r.IntN(20000), 1+r.IntN(400), 1+r.IntN(3000))
		o := Defaults()
		one, _ := NewBuilder(o)
		for _, p := range pairs {
			one.Add(p[0], p[1])
		}
		mode := trial % 3
		many := batchesOf(t, r, o, pairs, mode)
		if a, b := stateOf(one), stateOf(many); !a.equal(b) {
			t.Fatalf("trial %d (batch mode %d, flushMin %d): grouped state differs: %+v vs %+v", trial, mode, flushMin, a.stats, b.stats)
		}
	}
}
