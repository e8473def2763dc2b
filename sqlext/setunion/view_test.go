package setunion

import (
	"fmt"
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
