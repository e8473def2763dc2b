package ledger

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestLedgerGroupCommit charges from many goroutines at once: concurrent
// charges share commits (fewer commits than charges), every accepted charge
// is in the ledger exactly once, refusals change nothing, and the audit
// chain verifies.
func TestLedgerGroupCommit(t *testing.T) {
	l := openTest(t, t.TempDir())
	// b's budget fits 10 charges of 0.1: its other charges are refused
	// inside groups and run again alone.
	setLimits(t, l, Limit{Analyst: "a", Database: "d", Budget: Amount{1e6, 1e-4}},
		Limit{Analyst: "b", Database: "d", Budget: Amount{1, 1e-4}})
	const workers, each = 16, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string]int{}
	seqs := map[uint64]bool{}
	for w := range workers {
		analyst := []string{"a", "b"}[w%2]
		wg.Go(func() {
			for i := range each {
				r, err := l.Charge(bg, analyst, "d", 0.1, 1e-7, Meta{Description: fmt.Sprintf("w%d/%d", w, i)})
				mu.Lock()
				switch {
				case err == nil:
					accepted[analyst]++
					if seqs[r.Seq] {
						t.Errorf("audit sequence %d given twice", r.Seq)
					}
					seqs[r.Seq] = true
				case analyst == "b" && errors.Is(err, ErrBudgetExceeded):
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if accepted["a"] != workers/2*each || accepted["b"] != 10 {
		t.Errorf("accepted %v, want a: %d, b: 10", accepted, workers/2*each)
	}
	for analyst, n := range accepted {
		if b, _ := l.Balance(analyst, "d"); b.Releases != int64(n) {
			t.Errorf("%s: %d releases in the ledger, %d accepted", analyst, b.Releases, n)
		}
	}
	if err := l.Verify(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls in %d commits", l.grp.calls, l.grp.commits)
	if l.grp.commits >= workers*each {
		t.Errorf("%d commits for %d concurrent charges: no group formed", l.grp.commits, workers*each)
	}
}

// TestGroupFailureRunsAlone: a function that fails or panics in a group
// leaves the others' writes intact, and its caller gets its own error (or
// its own panic) from a transaction of its own.
func TestGroupFailureRunsAlone(t *testing.T) {
	l := openTest(t, t.TempDir())
	g := l.grp
	if err := g.update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("t")); return err }); err != nil {
		t.Fatal(err)
	}
	errMine := errors.New("mine")
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			key := []byte(fmt.Sprint(i))
			switch i % 4 {
			case 1:
				if err := g.update(func(tx *bolt.Tx) error {
					_ = tx.Bucket([]byte("t")).Put(key, []byte("no"))
					return errMine
				}); !errors.Is(err, errMine) {
					t.Errorf("failing call %d: got %v, want its own error", i, err)
				}
			case 2:
				func() {
					defer func() {
						if r := recover(); r != "boom" {
							t.Errorf("panicking call %d: recovered %v, want its own panic", i, r)
						}
					}()
					_ = g.update(func(*bolt.Tx) error { panic("boom") })
					t.Errorf("panicking call %d returned", i)
				}()
			default:
				if err := g.update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("t")).Put(key, []byte("yes")) }); err != nil {
					t.Errorf("call %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	err := l.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("t"))
		for i := range 40 {
			v := b.Get([]byte(fmt.Sprint(i)))
			if want := i%4 == 0 || i%4 == 3; want != (string(v) == "yes") || (!want && v != nil) {
				t.Errorf("key %d: %q", i, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
