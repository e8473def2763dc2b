package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// AuditFilter selects audit records.
type AuditFilter struct {
	// Analyst and Database, when set, keep only their records (Database
	// case-insensitively).
	Analyst  string
	Database string
	// After keeps records with Seq > After.
	After uint64
	// Limit caps the number of records returned (0: all).
	Limit int
}

// Audit returns the audit records matching f in commit order.
func (l *Ledger) Audit(f AuditFilter) ([]Record, error) {
	var out []Record
	err := l.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		for k, v := c.Seek(seqKey(f.After + 1)); k != nil; k, v = c.Next() {
			var r storedRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("ledger: corrupt audit record %x: %w", k, err)
			}
			if f.Analyst != "" && r.Analyst != f.Analyst {
				continue
			}
			if f.Database != "" && !strings.EqualFold(r.Database, f.Database) {
				continue
			}
			out = append(out, r.Record)
			if f.Limit > 0 && len(out) >= f.Limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// Verify checks the ledger's consistency: bbolt's structural check, and that
// every account's spent totals and release count equal the sums over its
// audit records (exactly). It reads the whole audit trail.
func (l *Ledger) Verify() error {
	return l.db.View(func(tx *bolt.Tx) error {
		var damaged error
		for err := range tx.Check() { // drain: Check's goroutine sends every error
			if damaged == nil {
				damaged = err
			}
		}
		if damaged != nil {
			return fmt.Errorf("ledger: %s is damaged: %w", l.path, damaged)
		}
		type sums struct {
			eps, delta big.Rat
			n          int64
			records    []storedRecord // for the zCDP sums after a prefix
		}
		got := map[string]*sums{}
		err := tx.Bucket(bucketAudit).ForEach(func(k, v []byte) error {
			var r storedRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("corrupt audit record %x: %w", k, err)
			}
			if r.Reused {
				return nil // charged nothing
			}
			key := r.Analyst + "\x00" + strings.ToLower(r.Database)
			s := got[key]
			if s == nil {
				s = &sums{}
				got[key] = s
			}
			e, ok1 := new(big.Rat).SetString(r.EpsExact)
			d, ok2 := new(big.Rat).SetString(r.DeltaExact)
			if !ok1 || !ok2 {
				return fmt.Errorf("corrupt audit record %d: amounts %q, %q", r.Seq, r.EpsExact, r.DeltaExact)
			}
			s.eps.Add(&s.eps, e)
			s.delta.Add(&s.delta, d)
			s.n++
			if r.Rho != 0 || r.ThresholdFail != 0 {
				s.records = append(s.records, storedRecord{Record: Record{Seq: r.Seq, Rho: r.Rho, ThresholdFail: r.ThresholdFail}})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		accounts := tx.Bucket(bucketAccounts)
		err = accounts.ForEachBucket(func(analyst []byte) error {
			return accounts.Bucket(analyst).ForEach(func(k, v []byte) error {
				var a account
				if err := json.Unmarshal(v, &a); err != nil {
					return fmt.Errorf("corrupt account %q/%q: %w", analyst, k, err)
				}
				st, err := a.state()
				if err != nil {
					return err
				}
				key := string(analyst) + "\x00" + string(k)
				s := got[key]
				if s == nil {
					s = &sums{}
				}
				delete(got, key)
				if st.spentEps.Cmp(&s.eps) != 0 || st.spentDelta.Cmp(&s.delta) != 0 || a.Releases != s.n {
					return fmt.Errorf("account %q/%q: spent ε=%s, δ=%s in %d releases but the audit records sum to ε=%s, δ=%s in %d",
						analyst, a.Database, a.SpentEps, a.SpentDelta, a.Releases, s.eps.RatString(), s.delta.RatString(), s.n)
				}
				if a.method() == ZCDP {
					var rho, thr float64
					for _, r := range s.records {
						if r.Seq > a.PrefixSeq {
							rho += r.Rho
							thr += r.ThresholdFail
						}
					}
					if !closeTo(rho, a.Rho) || !closeTo(thr, a.ThresholdFail) {
						return fmt.Errorf("account %q/%q: zCDP sums ρ=%v, P=%v but the audit records since sequence %d sum to ρ=%v, P=%v",
							analyst, a.Database, a.Rho, a.ThresholdFail, a.PrefixSeq, rho, thr)
					}
				}
				return nil
			})
		})
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		for key := range got {
			return fmt.Errorf("ledger: audit records for %q have no account", strings.ReplaceAll(key, "\x00", "/"))
		}
		return nil
	})
}

// cutDescription cuts s to MaxDescription bytes at a rune boundary and
// returns the SHA-256 of s when it was cut.
func cutDescription(s string) (string, string) {
	if len(s) <= MaxDescription {
		return s, ""
	}
	sum := sha256.Sum256([]byte(s))
	cut := MaxDescription
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], hex.EncodeToString(sum[:])
}
