package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/checks"
)

// SetLimits makes limits the configured allowances, in one transaction:
// listed accounts get their budget and caps (keeping what they spent), and
// accounts missing from limits are marked unconfigured (they keep their
// history and can no longer be charged). Call it at start with the
// configuration's budgets.
func (l *Ledger) SetLimits(ctx context.Context, limits []Limit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, lim := range limits {
		if err := validateLimit(lim); err != nil {
			return err
		}
		k := lim.Analyst + "\x00" + strings.ToLower(lim.Database)
		if seen[k] {
			return fmt.Errorf("ledger: analyst %q has two budgets for database %q", lim.Analyst, lim.Database)
		}
		seen[k] = true
	}
	return l.db.Update(func(tx *bolt.Tx) error {
		accounts := tx.Bucket(bucketAccounts)
		// Unconfigure everything, then configure what is listed.
		err := accounts.ForEachBucket(func(analyst []byte) error {
			b := accounts.Bucket(analyst)
			return b.ForEach(func(k, v []byte) error {
				var a account
				if err := json.Unmarshal(v, &a); err != nil {
					return fmt.Errorf("corrupt account %q/%q: %w", analyst, k, err)
				}
				if !a.Configured {
					return nil
				}
				a.Configured = false
				a.BudgetEps, a.BudgetDelta, a.CapEps, a.CapDelta = "0", "0", "0", "0"
				return putJSON(b, k, a)
			})
		})
		if err != nil {
			return err
		}
		for _, lim := range limits {
			b, err := accounts.CreateBucketIfNotExists([]byte(lim.Analyst))
			if err != nil {
				return err
			}
			a := account{Analyst: lim.Analyst, Database: lim.Database, SpentEps: "0", SpentDelta: "0"}
			if v := b.Get(dbKey(lim.Database)); v != nil {
				if err := json.Unmarshal(v, &a); err != nil {
					return fmt.Errorf("corrupt account %q/%q: %w", lim.Analyst, lim.Database, err)
				}
			}
			a.Database = lim.Database
			if err := l.migrate(tx, &a); err != nil {
				return err
			}
			l.fixShare(&a)
			a.BudgetEps = exact(lim.Budget.Epsilon).RatString()
			a.BudgetDelta = exact(lim.Budget.Delta).RatString()
			a.CapEps = exact(lim.MaxRelease.Epsilon).RatString()
			a.CapDelta = exact(lim.MaxRelease.Delta).RatString()
			a.Configured = true
			if err := putJSON(b, dbKey(lim.Database), a); err != nil {
				return err
			}
		}
		return nil
	})
}

// migrate moves an account to the ledger's accounting. Into ZCDP, the
// whole history so far becomes a fixed basic prefix (charged as it was),
// and the zCDP sums start from zero; into Basic, every release counts its
// stated (ε, δ), which the spent sums always hold.
func (l *Ledger) migrate(tx *bolt.Tx, a *account) error {
	m := l.acct.method()
	if a.method() == m && a.Method != "" {
		return nil
	}
	if m == ZCDP && a.method() != ZCDP {
		a.PrefixEps, a.PrefixDelta = a.SpentEps, a.SpentDelta
		if a.PrefixEps == "" {
			a.PrefixEps, a.PrefixDelta = "0", "0"
		}
		a.PrefixSeq = tx.Bucket(bucketAudit).Sequence()
		a.Rho, a.ThresholdFail = 0, 0
	}
	a.Method = m
	return nil
}

// fixShare stores the configured threshold share in a zCDP account whose
// sequence has not started (or that has none stored), and keeps the stored
// one otherwise: a sequence composes under one share from its first
// release to its last.
func (l *Ledger) fixShare(a *account) {
	if a.method() != ZCDP {
		return
	}
	if a.ThresholdShare == 0 || a.freshZCDP() {
		a.ThresholdShare = accounting.Filter{ThresholdShare: l.acct.ThresholdShare}.Share()
	}
}

func validateLimit(lim Limit) error {
	if lim.Analyst == "" || lim.Database == "" {
		return fmt.Errorf("ledger: a budget needs an analyst and a database (got %q, %q)", lim.Analyst, lim.Database)
	}
	where := fmt.Sprintf("budget of analyst %q on database %q", lim.Analyst, lim.Database)
	if err := checks.Epsilon(lim.Budget.Epsilon); err != nil {
		return fmt.Errorf("ledger: %s: %w", where, err)
	}
	if err := checks.DeltaOrZero(lim.Budget.Delta); err != nil {
		return fmt.Errorf("ledger: %s: %w", where, err)
	}
	if err := checks.EpsilonOrZero(lim.MaxRelease.Epsilon); err != nil {
		return fmt.Errorf("ledger: %s: the per-release cap's %w (0: no cap)", where, err)
	}
	if err := checks.DeltaOrZero(lim.MaxRelease.Delta); err != nil {
		return fmt.Errorf("ledger: %s: the per-release cap's %w (0: no cap)", where, err)
	}
	return nil
}
