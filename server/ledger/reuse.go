package ledger

// Release reuse.
//
// A release is a randomised function M(D) of the protected data D. Once its
// output o = M(D) has been sent to an analyst, any function f(o, h) of it and
// of data-independent information h (the query history, the configuration,
// the clock) is post-processing: it is exactly as private as o (Dwork & Roth
// 2014, Proposition 2.1), and costs nothing more. Keep stores o; Reuse hands
// it out again when the caller asks for it under the same key within the
// window, and then charges nothing.
//
// For this to be post-processing, everything that decides whether o is
// handed out again — whether a request is "the same release", whether the
// window has passed, whether the table changed — must not depend on D
// except through o. The key is built by the caller (package governance)
// from the statement's release specification (what is read, how, with which
// options), the analyst or database scope, the server's configuration of the
// table and its load generation; the window from the ledger's clock. None of
// these reads a protected row.
//
// Load generations. Had the table version been a hash of the table's
// content, an analyst could learn whether an administrator's reload changed
// the data by watching whether a request is reused afterwards: one bit about
// D outside every DP release (with a reload that adds or removes one person,
// exactly the bit DP must hide). A generation is therefore a counter,
// incremented whenever a table is loaded from a source whose description —
// the dataset's configuration and the file's identity (path, inode,
// modification and change times), never its bytes or size — differs from the
// one recorded at the previous load (LoadGeneration). Rewriting a file with
// the very same content is a new generation; restarting the server on an
// untouched file is not. What an analyst can infer from a new generation is
// that an administrator touched the source, which they could equally learn
// from the administrator.
//
// The caller chooses the description: a content digest is passed only when
// an administrator opts into generation: content for a dataset, accepting
// the bit above for that table (docs/privacy.md §14).

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

var (
	bucketReuse       = []byte("reuse")       // key -> stored release JSON
	bucketReuseTime   = []byte("reuse_time")  // big-endian unix nanoseconds ‖ key -> nothing (pruning index)
	bucketGenerations = []byte("generations") // lower(db) \x00 lower(table) -> generation JSON
)

// MaxPrune is the most expired stored releases one Keep removes (the rest go
// at later ones), so that a Keep after a long pause stays short.
const MaxPrune = 1024

// Stored is a released result kept for reuse.
type Stored struct {
	// Time is when the original release was charged.
	Time time.Time `json:"time"`
	// Analyst and Database are whose release it was, and on which database.
	Analyst  string `json:"analyst"`
	Database string `json:"database"`
	// Charges are the audit records of the original release, one per
	// charge (a statement node with several DP_SET_UNION calls has several).
	Charges []StoredCharge `json:"charges"`
	// Data is the released result in the caller's encoding.
	Data []byte `json:"data"`
}

// StoredCharge describes one charge of a stored release.
type StoredCharge struct {
	Seq       uint64  `json:"seq"`
	Function  string  `json:"function,omitempty"`
	Table     string  `json:"table,omitempty"`
	Mechanism string  `json:"mechanism,omitempty"`
	Epsilon   float64 `json:"epsilon"`
	Delta     float64 `json:"delta"`
}

// fresh reports whether a release stored at t may be reused at now: within
// window either way (a clock stepped back by more than the window ends
// reuse too).
func fresh(t, now time.Time, window time.Duration) bool {
	d := now.Sub(t)
	return window > 0 && d <= window && d >= -window
}

// Keep stores s under key, replacing what was stored there, and removes up
// to MaxPrune stored releases older than window. It is called after a
// release was charged and computed; its transaction is synced to disk.
func (l *Ledger) Keep(ctx context.Context, key []byte, s Stored, window time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(key) == 0 {
		return errors.New("ledger: a stored release needs a key")
	}
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return l.grp.update(func(tx *bolt.Tx) error {
		rb, tb := tx.Bucket(bucketReuse), tx.Bucket(bucketReuseTime)
		if old := rb.Get(key); old != nil {
			var o Stored
			if json.Unmarshal(old, &o) == nil {
				if err := tb.Delete(timeKey(o.Time, key)); err != nil {
					return err
				}
			}
		}
		if err := rb.Put(key, v); err != nil {
			return err
		}
		if err := tb.Put(timeKey(s.Time, key), nil); err != nil {
			return err
		}
		return prune(rb, tb, l.now().Add(-window))
	})
}

// prune removes up to MaxPrune stored releases made before cutoff.
func prune(rb, tb *bolt.Bucket, cutoff time.Time) error {
	c := tb.Cursor()
	var stale [][]byte
	for k, _ := c.First(); k != nil && len(stale) < MaxPrune; k, _ = c.Next() {
		if len(k) < 8 || int64(binary.BigEndian.Uint64(k[:8])) >= cutoff.UnixNano() {
			break
		}
		stale = append(stale, append([]byte(nil), k...))
	}
	for _, k := range stale {
		if err := tb.Delete(k); err != nil {
			return err
		}
		if err := rb.Delete(k[8:]); err != nil {
			return err
		}
	}
	return nil
}

func timeKey(t time.Time, key []byte) []byte {
	k := make([]byte, 8, 8+len(key))
	binary.BigEndian.PutUint64(k, uint64(t.UnixNano()))
	return append(k, key...)
}

// Lookup returns the release stored under key when it was made within
// window of now and analyst has a configured budget on database (an
// analyst without one obtains nothing, reused or not). It changes nothing:
// the planner's advisory check uses it.
func (l *Ledger) Lookup(key []byte, analyst, database string, window time.Duration) (Stored, bool, error) {
	var s Stored
	var ok bool
	err := l.db.View(func(tx *bolt.Tx) error {
		var err error
		s, ok, err = l.lookup(tx, key, analyst, database, window)
		return err
	})
	return s, ok, err
}

func (l *Ledger) lookup(tx *bolt.Tx, key []byte, analyst, database string, window time.Duration) (Stored, bool, error) {
	var s Stored
	v := tx.Bucket(bucketReuse).Get(key)
	if v == nil {
		return s, false, nil
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return s, false, fmt.Errorf("ledger: corrupt stored release %x: %w", key, err)
	}
	if !fresh(s.Time, l.now(), window) || !strings.EqualFold(s.Database, database) {
		return s, false, nil
	}
	a, _, err := getAccount(tx, analyst, database)
	if errors.Is(err, ErrNoBudget) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	return s, a.Configured, nil
}

// Reuse looks key up as Lookup does and, when a release is stored there,
// records its reuse by analyst: one audit record per charge of the stored
// release, marked Reused (with the stored ε, δ, mechanism and function, the
// description and connection of meta), charging nothing. The records are
// committed and synced to disk before Reuse returns the stored release.
func (l *Ledger) Reuse(ctx context.Context, key []byte, analyst, database string, window time.Duration, meta Meta) (Stored, bool, error) {
	if err := ctx.Err(); err != nil {
		return Stored{}, false, err
	}
	// A read first: a miss, the common case of a new release, writes
	// nothing and needs no sync.
	if _, ok, err := l.Lookup(key, analyst, database, window); err != nil || !ok {
		return Stored{}, false, err
	}
	var s Stored
	var ok bool
	err := l.grp.update(func(tx *bolt.Tx) error {
		var err error
		if s, ok, err = l.lookup(tx, key, analyst, database, window); err != nil || !ok {
			return err
		}
		a, _, err := getAccount(tx, analyst, database)
		if err != nil {
			return err
		}
		audit := tx.Bucket(bucketAudit)
		now := l.now().UTC()
		desc, sum := cutDescription(meta.Description)
		for _, c := range s.Charges {
			seq, err := audit.NextSequence()
			if err != nil {
				return err
			}
			r := storedRecord{
				Record: Record{
					Seq: seq, Time: now, Analyst: analyst, Database: a.Database,
					Epsilon: c.Epsilon, Delta: c.Delta, Mechanism: c.Mechanism, Connection: meta.Connection,
					Function: c.Function, Table: c.Table,
					Description: desc, DescriptionSHA256: sum,
					Reused: true, ReusedSeq: c.Seq,
				},
				EpsExact: "0", DeltaExact: "0",
			}
			if err := putJSON(audit, seqKey(seq), r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Stored{}, false, err
	}
	return s, ok, nil
}

// generation is the stored load generation of a table.
type generation struct {
	Generation uint64    `json:"generation"`
	Source     string    `json:"source"`
	Time       time.Time `json:"time"`
}

// LoadGeneration records a load of database.table from a source described
// by source and returns the table's load generation: the previous one when
// source equals the description recorded at the previous load, else the
// previous one plus one (1 for a table never loaded). An empty source means
// "unknown": every load is then a new generation. source must describe
// where the rows come from without depending on their content (see the
// comment at the top of this file).
func (l *Ledger) LoadGeneration(database, table, source string) (uint64, error) {
	var gen uint64
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGenerations)
		k := []byte(strings.ToLower(database) + "\x00" + strings.ToLower(table))
		var g generation
		if v := b.Get(k); v != nil {
			if err := json.Unmarshal(v, &g); err != nil {
				return fmt.Errorf("ledger: corrupt load generation of %s.%s: %w", database, table, err)
			}
			if source != "" && g.Source == source {
				gen = g.Generation
				return nil
			}
		}
		g = generation{Generation: g.Generation + 1, Source: source, Time: l.now().UTC()}
		gen = g.Generation
		return putJSON(b, k, g)
	})
	return gen, err
}
