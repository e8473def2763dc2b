package ledger

import (
	"bytes"
	"strconv"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// clock is a settable time source for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openClocked(t *testing.T, dir string) (*Ledger, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	l, err := Open(dir, Options{LockTimeout: 5 * time.Second, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, c
}

// keepCharged charges a release and stores it under key, as the governor
// does.
func keepCharged(t *testing.T, l *Ledger, key []byte, analyst string, data string, window time.Duration) Stored {
	t.Helper()
	rec := mustCharge(t, l, analyst, "demo", 0.5, 1e-6)
	s := Stored{Time: rec.Time, Analyst: analyst, Database: "demo", Data: []byte(data),
		Charges: []StoredCharge{{Seq: rec.Seq, Function: "SELECT DISTINCT", Table: "t", Mechanism: "dp_sips", Epsilon: 0.5, Delta: 1e-6}}}
	if err := l.Keep(bg, key, s, window); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReuseWithinWindowChargesNothing(t *testing.T) {
	l, c := openClocked(t, t.TempDir())
	setLimits(t, l, Limit{Analyst: "alice", Database: "demo", Budget: Amount{1, 1e-5}}, Limit{Analyst: "bob", Database: "demo", Budget: Amount{1, 1e-5}})
	key := []byte("k1")
	keepCharged(t, l, key, "alice", "released\x00bytes", time.Hour)
	before, _ := l.Balance("alice", "demo")

	c.add(59 * time.Minute)
	s, ok, err := l.Reuse(bg, key, "alice", "DEMO", time.Hour, Meta{Description: "SELECT DISTINCT w FROM t LIMIT 1", Connection: 9})
	if err != nil || !ok || string(s.Data) != "released\x00bytes" || s.Charges[0].Seq != 1 {
		t.Fatalf("reuse within the window: %+v, %v, %v", s, ok, err)
	}
	after, _ := l.Balance("alice", "demo")
	if after.Spent != before.Spent || after.Releases != before.Releases || !after.LastCharge.Equal(before.LastCharge) {
		t.Errorf("a reuse charged: before %+v, after %+v", before, after)
	}
	recs, err := l.Audit(AuditFilter{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("audit: %v, %v", recs, err)
	}
	r := recs[1]
	if !r.Reused || r.ReusedSeq != 1 || r.Epsilon != 0.5 || r.Connection != 9 || r.Function != "SELECT DISTINCT" || r.Table != "t" ||
		r.Description != "SELECT DISTINCT w FROM t LIMIT 1" || !r.Time.Equal(c.now()) || recs[0].Reused {
		t.Errorf("reuse record: %+v", r)
	}
	if err := l.Verify(); err != nil {
		t.Errorf("Verify with a reuse record: %v", err)
	}

	// Another analyst with a budget finds it (the key decides the scope);
	// one without a budget, or removed from the configuration, does not.
	if _, ok, _ := l.Lookup(key, "bob", "demo", time.Hour); !ok {
		t.Error("bob does not find the release stored under the key")
	}
	if _, ok, _ := l.Lookup(key, "mallory", "demo", time.Hour); ok {
		t.Error("an analyst without a budget finds a stored release")
	}
	setLimits(t, l, Limit{Analyst: "alice", Database: "demo", Budget: Amount{1, 1e-5}})
	if _, ok, _ := l.Reuse(bg, key, "bob", "demo", time.Hour, Meta{}); ok {
		t.Error("an analyst removed from the configuration reuses")
	}
	// Another database, another key: nothing.
	if _, ok, _ := l.Lookup(key, "alice", "other", time.Hour); ok {
		t.Error("found on another database")
	}
	if _, ok, _ := l.Lookup([]byte("k2"), "alice", "demo", time.Hour); ok {
		t.Error("found under another key")
	}

	// After the window: gone, and pruned by the next Keep.
	c.add(2 * time.Minute)
	if _, ok, _ := l.Reuse(bg, key, "alice", "demo", time.Hour, Meta{}); ok {
		t.Error("reused after the window")
	}
	keepCharged(t, l, []byte("k3"), "alice", "x", time.Hour)
	err = l.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketReuse).Get(key) != nil {
			t.Error("the expired release was not pruned")
		}
		if n := tx.Bucket(bucketReuseTime).Stats().KeyN; n != 1 {
			t.Errorf("%d time index entries, want 1", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Verify(); err != nil {
		t.Error(err)
	}
}

func TestKeepReplacesAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	l, c := openClocked(t, dir)
	setLimits(t, l, Limit{Analyst: "alice", Database: "demo", Budget: Amount{10, 1e-5}})
	key := []byte("k")
	keepCharged(t, l, key, "alice", "old", time.Hour)
	c.add(time.Minute)
	keepCharged(t, l, key, "alice", "new", time.Hour)
	l.Close()

	l2 := openTest(t, dir) // the real clock: years after the test's clock
	if _, ok, _ := l2.Lookup(key, "alice", "demo", 24*time.Hour); ok {
		t.Error("a release from 2025 is fresh within 24h now")
	}
	s, ok, err := l2.Lookup(key, "alice", "demo", 1e6*time.Hour)
	if err != nil || !ok || string(s.Data) != "new" || s.Charges[0].Seq != 2 {
		t.Errorf("after reopen: %+v %v %v", s, ok, err)
	}
	err = l2.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketReuseTime).Stats().KeyN; n != 1 {
			t.Errorf("%d time index entries after a replacement, want 1", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPruneIsBounded(t *testing.T) {
	l, c := openClocked(t, t.TempDir())
	err := l.db.Update(func(tx *bolt.Tx) error {
		rb, tb := tx.Bucket(bucketReuse), tx.Bucket(bucketReuseTime)
		for i := range MaxPrune + 10 {
			k := []byte("k" + strconv.Itoa(i))
			if err := rb.Put(k, []byte(`{}`)); err != nil {
				return err
			}
			if err := tb.Put(timeKey(c.now(), k), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Hour)
	if err := l.Keep(bg, []byte("fresh"), Stored{Time: c.now(), Database: "demo"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	_ = l.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketReuse).Stats().KeyN; n != 11 {
			t.Errorf("%d stored releases after one Keep, want 10 left over and the new one", n)
		}
		return nil
	})
}

func TestLoadGeneration(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir)
	gen := func(db, table, source string) uint64 {
		t.Helper()
		g, err := l.LoadGeneration(db, table, source)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := gen("shop", "events", "file a mtime 1"); g != 1 {
		t.Errorf("first load: generation %d", g)
	}
	if g := gen("SHOP", "Events", "file a mtime 1"); g != 1 {
		t.Errorf("same source: generation %d, want 1", g)
	}
	if g := gen("shop", "events", "file a mtime 2"); g != 2 {
		t.Errorf("touched source: generation %d, want 2", g)
	}
	if g := gen("shop", "events", "file a mtime 1"); g != 3 {
		t.Errorf("a former source again: generation %d, want 3 (generations never go back)", g)
	}
	if g := gen("shop", "other", "file a mtime 1"); g != 1 {
		t.Errorf("another table: generation %d", g)
	}
	if a, b := gen("shop", "mem", ""), gen("shop", "mem", ""); a != 1 || b != 2 {
		t.Errorf("unknown source: generations %d, %d, want 1, 2", a, b)
	}
	l.Close()
	l = openTest(t, dir)
	if g := gen("shop", "events", "file a mtime 1"); g != 3 {
		t.Errorf("after reopen: generation %d, want 3", g)
	}
}

// TestFormatUpgrade: a format-1 ledger (written before reuse) opens,
// becomes format 2 and keeps verifying; a format from the future is
// refused.
func TestFormatUpgrade(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir)
	setLimits(t, l, Limit{Analyst: "alice", Database: "demo", Budget: Amount{1, 1e-5}})
	mustCharge(t, l, "alice", "demo", 0.1, 1e-6)
	// Make it look like format 1: no reuse buckets, version 1.
	err := l.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketReuse, bucketReuseTime, bucketGenerations} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyVersion, []byte("1"))
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openTest(t, dir)
	if err := l.Verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.LoadGeneration("demo", "t", "s"); err != nil {
		t.Fatal(err)
	}
	_ = l.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyVersion); !bytes.Equal(v, []byte("2")) {
			t.Errorf("format after upgrade: %q", v)
		}
		return nil
	})
	_ = l.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, []byte("3")) })
	l.Close()
	if _, err := Open(dir, Options{}); err == nil {
		t.Error("a format-3 ledger opened")
	}
}

// BenchmarkLedgerKeep measures storing a release for reuse (a committed,
// fsynced transaction) of 1 KiB, 64 KiB and 1 MiB, against a charge
// (BenchmarkLedgerCharge): a new release that is stored pays both.
func BenchmarkLedgerKeep(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		b.Run("bytes="+strconv.Itoa(size), func(b *testing.B) {
			l, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			s := Stored{Time: time.Now(), Analyst: "a", Database: "d", Charges: []StoredCharge{{Seq: 1}}, Data: make([]byte, size)}
			for i := range b.N {
				if err := l.Keep(bg, []byte("key "+strconv.Itoa(i%64)), s, time.Hour); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
