package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/checks"
)

// ChargeError explains a refused charge. It unwraps to ErrNoBudget,
// ErrBudgetExceeded or ErrCapExceeded.
type ChargeError struct {
	Kind      error
	Analyst   string
	Database  string
	Requested Amount
	// Why says which bound of a zCDP account the release would cross
	// (empty under basic composition).
	Why string
	// Balance is the account at the time of the refusal (zero for
	// ErrNoBudget on an unknown account).
	Balance Balance
}

func (e *ChargeError) Error() string {
	b := e.Balance
	switch e.Kind {
	case ErrNoBudget:
		if b.Analyst != "" && !b.Configured {
			return fmt.Sprintf("no privacy budget: analyst %q no longer has a budget on database %q (removed from the configuration; spent %s); an administrator must add one", e.Analyst, e.Database, b.Spent)
		}
		return fmt.Sprintf("no privacy budget: analyst %q has no budget on database %q; an administrator must add one to the configuration", e.Analyst, e.Database)
	case ErrCapExceeded:
		return fmt.Sprintf("per-release privacy cap exceeded: this release asks for %s but one release on database %q may use at most %s; lower dp_epsilon/dp_delta", e.Requested, e.Database, capString(b.MaxRelease))
	default:
		if b.Accounting == ZCDP {
			return fmt.Sprintf("privacy budget exceeded: this release (%s) does not fit what analyst %q has left on database %q under zCDP accounting: %s (budget %s, spent %s in %d releases, %s by basic composition); lower dp_epsilon/dp_delta or ask an administrator for more budget", e.Requested, e.Analyst, e.Database, e.Why, b.Budget, b.Spent, b.Releases, b.Basic)
		}
		return fmt.Sprintf("privacy budget exceeded: this release needs %s but analyst %q has only %s left on database %q (budget %s, spent %s in %d releases); lower dp_epsilon/dp_delta or ask an administrator for more budget", e.Requested, e.Analyst, b.Remaining, e.Database, b.Budget, b.Spent, b.Releases)
	}
}

// Unwrap returns the kind of refusal.
func (e *ChargeError) Unwrap() error { return e.Kind }

func capString(c Amount) string {
	var parts []string
	if c.Epsilon > 0 {
		parts = append(parts, "ε="+fmtFloat(c.Epsilon))
	}
	if c.Delta > 0 {
		parts = append(parts, "δ="+fmtFloat(c.Delta))
	}
	return strings.Join(parts, ", ")
}

// validateCost checks the (ε, δ) of a release.
func validateCost(eps, delta float64) error {
	if err := checks.Epsilon(eps); err != nil {
		return fmt.Errorf("ledger: a release's %w", err)
	}
	if err := checks.DeltaOrZero(delta); err != nil {
		return fmt.Errorf("ledger: a release's %w", err)
	}
	return nil
}

// Charge records a release of (eps, delta) by analyst on database: ChargeCost
// with the cost accounting.Basic(eps, delta) (refused on a ZCDP account).
func (l *Ledger) Charge(ctx context.Context, analyst, database string, eps, delta float64, meta Meta) (Receipt, error) {
	return l.ChargeCost(ctx, analyst, database, accounting.Basic(eps, delta), meta)
}

// ChargeCost records a release of cost c by analyst on database, after
// checking that its stated (ε, δ) respect the per-release caps and that it
// fits the remaining budget under the account's accounting (see the package
// documentation). The check, the new totals and the audit record are
// committed together and synced to disk before ChargeCost returns (with
// the transactions of concurrent callers: group.go). A refusal
// changes nothing and returns a *ChargeError; the caller must then not run
// or send the release.
func (l *Ledger) ChargeCost(ctx context.Context, analyst, database string, c accounting.Cost, meta Meta) (Receipt, error) {
	if err := ctx.Err(); err != nil {
		return Receipt{}, err
	}
	eps, delta := c.Epsilon, c.Delta
	if err := validateCost(eps, delta); err != nil {
		return Receipt{}, err
	}
	var rec Receipt
	err := l.grp.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAccounts).Bucket([]byte(analyst))
		var v []byte
		if b != nil {
			v = b.Get(dbKey(database))
		}
		if v == nil {
			return &ChargeError{Kind: ErrNoBudget, Analyst: analyst, Database: database, Requested: Amount{eps, delta}}
		}
		var a account
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("ledger: corrupt account %q/%q: %w", analyst, database, err)
		}
		st, err := a.state()
		if err != nil {
			return err
		}
		d, err := l.decide(a, st, c)
		if err != nil {
			return err
		}

		audit := tx.Bucket(bucketAudit)
		seq, err := audit.NextSequence()
		if err != nil {
			return err
		}
		now := l.now().UTC()
		r := storedRecord{
			Record: Record{
				Seq: seq, Time: now, Analyst: analyst, Database: a.Database,
				Epsilon: eps, Delta: delta, Mechanism: meta.Mechanism, Connection: meta.Connection,
				Function: meta.Function, Table: meta.Table,
			},
			EpsExact: exact(eps).RatString(), DeltaExact: exact(delta).RatString(),
		}
		if a.method() == ZCDP {
			r.Rho, r.ThresholdFail = c.Rho, c.ThresholdFail
		}
		r.Description, r.DescriptionSHA256 = cutDescription(meta.Description)
		if err := putJSON(audit, seqKey(seq), r); err != nil {
			return err
		}
		a.SpentEps, a.SpentDelta = d.eps.RatString(), d.delta.RatString()
		a.Rho, a.ThresholdFail = d.rho, d.thresholdFail
		a.Releases++
		a.LastCharge = now
		if err := putJSON(b, dbKey(database), a); err != nil {
			return err
		}
		st.spentEps, st.spentDelta = d.eps, d.delta
		rec = Receipt{Seq: seq, Time: now, Balance: l.balance(a, st)}
		return nil
	})
	if err != nil {
		return Receipt{}, err
	}
	return rec, nil
}

// Check reports, without charging, whether a release of (eps, delta) by
// analyst on database would be accepted now: CheckCost of
// accounting.Basic(eps, delta).
func (l *Ledger) Check(analyst, database string, eps, delta float64) error {
	return l.CheckCost(analyst, database, accounting.Basic(eps, delta))
}

// CheckCost reports, without charging, whether a release of cost c by
// analyst on database would be accepted now; it returns the *ChargeError
// ChargeCost would return. It is advisory (another connection may spend the
// budget in between); only ChargeCost decides.
func (l *Ledger) CheckCost(analyst, database string, c accounting.Cost) error {
	if err := validateCost(c.Epsilon, c.Delta); err != nil {
		return err
	}
	return l.db.View(func(tx *bolt.Tx) error {
		a, st, err := getAccount(tx, analyst, database)
		if errors.Is(err, ErrNoBudget) {
			return &ChargeError{Kind: ErrNoBudget, Analyst: analyst, Database: database, Requested: Amount{c.Epsilon, c.Delta}}
		}
		if err != nil {
			return err
		}
		_, err = l.decide(a, st, c)
		return err
	})
}

// Preview is what charging a statement's releases would do to an
// account, computed without charging (DP_EXPLAIN's budget rows).
type Preview struct {
	// Before is the account now.
	Before Balance
	// After is the account after every cost, when all are accepted
	// (Before otherwise).
	After Balance
	// Refused is the *ChargeError of the first cost the ledger would
	// refuse now, nil if all are accepted.
	Refused error
	// Repeats is how many more times the same costs would be accepted
	// after these (at most MaxPreviewRepeats).
	Repeats int
}

// Preview computes, without charging, what charging costs in order would
// do to the account of analyst on database. Like CheckCost it is advisory.
func (l *Ledger) Preview(analyst, database string, costs []accounting.Cost) (Preview, error) {
	var p Preview
	err := l.db.View(func(tx *bolt.Tx) error {
		a, st, err := getAccount(tx, analyst, database)
		if errors.Is(err, ErrNoBudget) {
			p.Refused = &ChargeError{Kind: ErrNoBudget, Analyst: analyst, Database: database}
			return nil
		}
		if err != nil {
			return err
		}
		p.Before = l.balance(a, st)
		p.After = p.Before
		apply := func() error {
			for _, c := range costs {
				if err := validateCost(c.Epsilon, c.Delta); err != nil {
					return err
				}
				d, err := l.decide(a, st, c)
				if err != nil {
					return err
				}
				a.Rho, a.ThresholdFail = d.rho, d.thresholdFail
				a.Releases++
				st.spentEps, st.spentDelta = d.eps, d.delta
			}
			return nil
		}
		if p.Refused = apply(); p.Refused != nil {
			return nil
		}
		p.After = l.balance(a, st)
		for p.Repeats < MaxPreviewRepeats && apply() == nil {
			p.Repeats++
		}
		return nil
	})
	return p, err
}

// decision is an account's totals after an accepted charge.
type decision struct {
	eps, delta         *big.Rat // the basic sums
	rho, thresholdFail float64  // the zCDP sums (ZCDP accounts)
}

// decide applies the rules of the package documentation to a release of
// cost c on account a and returns the new totals, or the *ChargeError that
// refuses it.
func (l *Ledger) decide(a account, st state, c accounting.Cost) (decision, error) {
	eps, delta := c.Epsilon, c.Delta
	refuse := func(kind error, why string) error {
		return &ChargeError{Kind: kind, Analyst: a.Analyst, Database: a.Database, Requested: Amount{eps, delta}, Balance: l.balance(a, st), Why: why}
	}
	if !a.Configured {
		return decision{}, refuse(ErrNoBudget, "")
	}
	reqEps, reqDelta := exact(eps), exact(delta)
	if (st.capEps.Sign() > 0 && reqEps.Cmp(st.capEps) > 0) || (st.capDelta.Sign() > 0 && reqDelta.Cmp(st.capDelta) > 0) {
		return decision{}, refuse(ErrCapExceeded, "")
	}
	d := decision{
		eps:   new(big.Rat).Add(st.spentEps, reqEps),
		delta: new(big.Rat).Add(st.spentDelta, reqDelta),
	}
	if a.method() == Basic {
		if d.eps.Cmp(st.budgetEps) > 0 || d.delta.Cmp(st.budgetDelta) > 0 {
			return decision{}, refuse(ErrBudgetExceeded, "")
		}
		return d, nil
	}
	d.rho, d.thresholdFail = a.Rho+c.Rho, a.ThresholdFail+c.ThresholdFail
	f, ok := l.filter(a, st)
	if !ok {
		return decision{}, refuse(ErrBudgetExceeded, "the budget was used up before zCDP accounting began")
	}
	total := accounting.Cost{Rho: d.rho, ThresholdFail: d.thresholdFail, BasicEpsilon: c.BasicEpsilon, BasicDelta: c.BasicDelta}
	if err := f.Check(total); err != nil {
		if c.BasicEpsilon > 0 || c.BasicDelta > 0 {
			return decision{}, refuse(ErrBudgetExceeded, "this mechanism has no zCDP accounting (single_item or an unproven mechanism) and the account is charged in zCDP; use another mechanism")
		}
		return decision{}, refuse(ErrBudgetExceeded, strings.TrimPrefix(err.Error(), "accounting: "))
	}
	return d, nil
}

// filter is the zCDP filter of an account: the budget left after its basic
// prefix, split by the account's stored threshold share (the configured
// one for an account that has none stored). ok is false when nothing is
// left.
func (l *Ledger) filter(a account, st state) (accounting.Filter, bool) {
	eps := toFloat(new(big.Rat).Sub(st.budgetEps, st.prefixEps))
	delta := toFloat(new(big.Rat).Sub(st.budgetDelta, st.prefixDelta))
	share := a.ThresholdShare
	if share == 0 {
		share = l.acct.ThresholdShare
	}
	return accounting.Filter{Epsilon: eps, Delta: delta, ThresholdShare: share}, eps > 0 && delta > 0
}
