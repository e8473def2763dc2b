package setunion

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestViewConcurrent: readers look strings up in the latest View while the
// owner interns more and publishes new views (run with -race). Every hit
// has the id the interner gave, and a view knows every string interned
// before it was published.
func TestViewConcurrent(t *testing.T) {
	const n = 50000
	words := make([][]byte, n)
	for i := range words {
		words[i] = fmt.Appendf(nil, "word-%d-%s", i, string(make([]byte, i%40)))
	}
	var in Interner
	var cur atomic.Pointer[View]
	cur.Store(in.Publish())
	var published atomic.Int64 // strings the latest view must know
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := r; k < 4*n; k += 7 {
				known := published.Load()
				v := cur.Load()
				i := k % n
				id, ok := v.Lookup(words[i])
				if ok && id != uint32(i) {
					errs <- fmt.Sprintf("word %d found with id %d", i, id)
					return
				}
				if !ok && int64(i) < known {
					errs <- fmt.Sprintf("word %d interned before the view was published, not found", i)
					return
				}
			}
		}()
	}
	for i, w := range words {
		if id, _ := in.ID(w); id != uint32(i) {
			t.Fatalf("ID(%q) = %d, want %d", w, id, i)
		}
		if i%97 == 0 {
			cur.Store(in.Publish())
			published.Store(int64(i + 1))
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	v := in.Publish()
	for i, w := range words {
		if id, ok := v.Lookup(w); !ok || id != uint32(i) {
			t.Fatalf("final view: %q = %d, %v", w, id, ok)
		}
	}
	if _, ok := v.Lookup([]byte("absent")); ok {
		t.Error("final view finds a string never interned")
	}
	if _, ok := (*View)(nil).Lookup([]byte("x")); ok {
		t.Error("a nil view finds a string")
	}
}

// TestLookupAllMatchesLookupTag: the batched look-up gives lookupTag's
// answer for every string: strings the view holds, strings interned after
// it was published, strings never interned, and strings given another
// string's tag (a home slot with their tag but other bytes).
func TestLookupAllMatchesLookupTag(t *testing.T) {
	var dict Interner
	for i := range 20000 {
		dict.ID(fmt.Appendf(nil, "w%d", i))
	}
	v := dict.Publish()
	for i := 20000; i < 25000; i++ {
		dict.ID(fmt.Appendf(nil, "w%d", i))
	}
	batch := Interner{seed: dict.seed}
	var tags []uint32
	for i := 0; i < 30000; i += 3 {
		s := fmt.Appendf(nil, "w%d", i)
		if _, added := batch.ID(s); added {
			tags = append(tags, uint32(batch.hash(s)>>32))
		}
	}
	for k := 0; k+1 < len(tags); k += 7 {
		tags[k] = tags[k+1] // another string's tag
	}
	known := make([]uint32, len(tags))
	v.lookupAll(&batch, tags, known)
	found := 0
	for i, tag := range tags {
		id, ok := v.lookupTag(batch.Bytes(uint32(i)), uint64(tag))
		want := uint32(0)
		if ok {
			want, found = id+1, found+1
		}
		if known[i] != want {
			t.Fatalf("string %q: lookupAll gives %d, lookupTag %d (1 + id, 0 if absent)", batch.Bytes(uint32(i)), known[i], want)
		}
	}
	if found < 5000 || found == len(tags) {
		t.Fatalf("%d of %d strings found: the test does not cover both cases", found, len(tags))
	}
	var empty *View
	empty.lookupAll(&batch, tags, known)
	if slices.ContainsFunc(known, func(c uint32) bool { return c != 0 }) {
		t.Fatal("a nil view holds nothing")
	}
}
