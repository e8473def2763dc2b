package setunion

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// groupPairs groups pairs the way a caller outside the package would:
// users and items in order of first occurrence, each user's distinct items
// by ascending id with their multiplicities.
func groupPairs(pairs [][2]string) Grouped {
	var g Grouped
	uid, iid := map[string]int{}, map[string]uint32{}
	var counts []map[uint32]uint32
	for _, p := range pairs {
		if p[0] == "" {
			continue
		}
		g.Occurrences++
		u, ok := uid[p[0]]
		if !ok {
			u = len(g.Users)
			uid[p[0]] = u
			g.Users = append(g.Users, p[0])
			counts = append(counts, map[uint32]uint32{})
		}
		i, ok := iid[p[1]]
		if !ok {
			i = uint32(len(g.Items))
			iid[p[1]] = i
			g.Items = append(g.Items, p[1])
		}
		counts[u][i]++
	}
	for _, c := range counts {
		var l []uint64
		for i, n := range c {
			l = append(l, GroupedEntry(i, n))
		}
		slices.Sort(l)
		g.Lists = append(g.Lists, l)
	}
	return g
}

// TestGroupedBuilderSameRelease checks NewGroupedBuilder's promise: for
// every mechanism and random inputs (repeated pairs, users scattered over
// the input, the empty user), the release from the grouped input equals the
// release from the pairs added one by one, for the same random source.
func TestGroupedBuilderSameRelease(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 1))
	released := 0
	for _, m := range Mechanisms() {
		for trial := range 6 {
			nUsers, nItems := 1+r.IntN(300), 1+r.IntN(200)
			var pairs [][2]string
			for range r.IntN(3000) {
				u := fmt.Sprintf("u%d", r.IntN(nUsers))
				if r.IntN(50) == 0 {
					u = ""
				}
				// Zipf-ish items, so that some cross the threshold.
				pairs = append(pairs, [2]string{u, fmt.Sprintf("w%d", int(float64(nItems)*r.Float64()*r.Float64()))})
			}
			o := Defaults()
			o.Mechanism, o.Epsilon, o.MaxItems, o.AllowUnproven = m, 1+r.Float64()*4, 1+r.IntN(20), true
			if m == GreedyPublic || m == GreedyPublicUnproven {
				o.Public = map[string]float64{"w0": 100, "w1": 50, "w3": 2}
			}
			if trial == 5 {
				o.MaxItems = 0 // chosen privately (where the mechanism allows it)
				if _, err := Calibrate(o); err != nil {
					o.MaxItems = 3
				}
			}
			a, err := NewBuilder(o)
			if err != nil {
				if _, err := NewGroupedBuilder(o, groupPairs(pairs)); err == nil {
					t.Fatalf("%s: NewBuilder refuses the options, NewGroupedBuilder does not", m)
				}
				continue // a disabled mechanism
			}
			for _, p := range pairs {
				a.Add(p[0], p[1])
			}
			g := groupPairs(pairs)
			b, err := NewGroupedBuilder(o, g)
			if err != nil {
				t.Fatal(err)
			}
			// Builder.Grouped gives the same grouping.
			c, _ := NewBuilder(o)
			for _, p := range pairs {
				c.Add(p[0], p[1])
			}
			if got := c.Grouped(); fmt.Sprint(got) != fmt.Sprint(g) {
				t.Fatalf("%s: Builder.Grouped differs from the grouping of the pairs", m)
			}
			seed := r.Uint64()
			ra := a.Release(rand.New(rand.NewPCG(seed, 7)))
			rb := b.Release(rand.New(rand.NewPCG(seed, 7)))
			if !slices.Equal(ra.Items, rb.Items) || ra.Stats != rb.Stats || ra.Support != rb.Support || ra.Missing != rb.Missing {
				t.Fatalf("%s trial %d: pairs released %d items %+v, grouped %d items %+v", m, trial, len(ra.Items), ra.Stats, len(rb.Items), rb.Stats)
			}
			released += len(ra.Items)
			for _, it := range []string{"w0", "w1", "nope"} {
				if ra.InSupport(it) != rb.InSupport(it) {
					t.Fatalf("%s: InSupport(%s) differs", m, it)
				}
			}
		}
	}
	if released == 0 {
		t.Fatal("no trial released anything: the comparison is vacuous")
	}
}

// TestGroupedBuilderShared checks that releases from one Grouped do not
// change it (concurrent releases share it), also when pairs are added.
func TestGroupedBuilderShared(t *testing.T) {
	pairs := [][2]string{{"a", "x"}, {"b", "x"}, {"a", "y"}, {"c", "z"}, {"a", "x"}}
	g := groupPairs(pairs)
	before := fmt.Sprint(g)
	o := Defaults()
	o.MaxItems = 1
	for range 3 {
		b, err := NewGroupedBuilder(o, g)
		if err != nil {
			t.Fatal(err)
		}
		b.Add("a", "new")
		b.Add("d", "x")
		b.AddBytes([]byte("e"), []byte("y"))
		_ = b.Release(rand.New(rand.NewPCG(1, 2)))
	}
	if after := fmt.Sprint(g); after != before {
		t.Fatalf("grouped input changed: %s → %s", before, after)
	}
	// Added pairs count as they would have.
	b, _ := NewGroupedBuilder(o, g)
	b.Add("a", "new")
	a, _ := NewBuilder(o)
	for _, p := range append(pairs, [2]string{"a", "new"}) {
		a.Add(p[0], p[1])
	}
	if sa, sb := a.Group(), b.Group(); sa != sb {
		t.Fatalf("stats: pairs %+v, grouped then added %+v", sa, sb)
	}
}

func TestGroupedBuilderRefusesBadShapes(t *testing.T) {
	for _, g := range []Grouped{
		{Users: []string{"a"}, Items: []string{"x"}},
		{Users: []string{""}, Items: []string{"x"}, Lists: [][]uint64{{GroupedEntry(0, 1)}}},
		{Users: []string{"a"}, Items: []string{"x"}, Lists: [][]uint64{{GroupedEntry(1, 1)}}},
		{Users: []string{"a"}, Items: []string{"x"}, Lists: [][]uint64{{GroupedEntry(0, 0)}}},
		{Users: []string{"a"}, Items: []string{"x", "y"}, Lists: [][]uint64{{GroupedEntry(1, 1), GroupedEntry(0, 1)}}},
		{Users: []string{"a", "b", "a"}, Items: []string{"x"}, Lists: [][]uint64{{GroupedEntry(0, 1)}, {GroupedEntry(0, 1)}, {GroupedEntry(0, 1)}}},
		{Users: []string{"a"}, Items: []string{"x", "y", "z", "y"}, Lists: [][]uint64{{GroupedEntry(0, 1)}}},
	} {
		if _, err := Prepare(g); err == nil {
			t.Errorf("Prepare accepted %+v", g)
		}
		if _, err := NewGroupedBuilder(Defaults(), g); err == nil {
			t.Errorf("accepted %+v", g)
		}
	}
}

// TestPreparedConcurrentReleases runs releases of every usable mechanism
// from one Prepared on several goroutines at once (run with -race: what
// they share must only be read) and checks each equals the release of a
// fresh NewGroupedBuilder with the same seed.
func TestPreparedConcurrentReleases(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	pairs := pairsOf(r, 20_000, 800, 600)
	g := groupPairs(pairs)
	p, err := Prepare(g)
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		o    Options
		seed uint64
	}
	var jobs []job
	for _, m := range Mechanisms() {
		if m.Disabled() != nil {
			continue
		}
		for _, d0 := range []int{AutoMaxItems, 5} {
			o := Defaults()
			o.Mechanism, o.Epsilon, o.MaxItems, o.AllowUnproven = m, 4, d0, true
			o.Public = map[string]float64{"i0": 3}
			jobs = append(jobs, job{o, r.Uint64()})
		}
	}
	got := make([]Result, len(jobs))
	var wg sync.WaitGroup
	for k, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := NewPreparedBuilder(j.o, p)
			if err != nil {
				t.Error(err)
				return
			}
			got[k] = b.Release(rand.New(rand.NewPCG(j.seed, 1)))
			got[k].InSupport("i1") // builds the shared index concurrently
		}()
	}
	wg.Wait()
	for k, j := range jobs {
		b, err := NewGroupedBuilder(j.o, g)
		if err != nil {
			t.Fatal(err)
		}
		want := b.Release(rand.New(rand.NewPCG(j.seed, 1)))
		if !slices.Equal(got[k].Items, want.Items) || got[k].Missing != want.Missing || got[k].Support != want.Support ||
			got[k].InSupport("i1") != want.InSupport("i1") {
			t.Fatalf("%s: concurrent release from Prepared differs", j.o.Mechanism)
		}
	}
	if s := fmt.Sprint(g); s != fmt.Sprint(groupPairs(pairs)) {
		t.Fatal("releases changed the grouped input")
	}
}
