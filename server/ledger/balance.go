package ledger

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/sqlext/accounting"
)

// Balance returns the account of analyst on database; the error wraps
// ErrNoBudget if there is none.
func (l *Ledger) Balance(analyst, database string) (Balance, error) {
	var bal Balance
	err := l.db.View(func(tx *bolt.Tx) error {
		a, st, err := getAccount(tx, analyst, database)
		if err != nil {
			return err
		}
		bal = l.balance(a, st)
		return nil
	})
	return bal, err
}

// Balances returns the accounts of analyst, or of every analyst if analyst
// is "" (for administrators), sorted by analyst and database. Unconfigured
// accounts with history are included (Configured false).
func (l *Ledger) Balances(analyst string) ([]Balance, error) {
	var out []Balance
	err := l.db.View(func(tx *bolt.Tx) error {
		accounts := tx.Bucket(bucketAccounts)
		visit := func(b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				var a account
				if err := json.Unmarshal(v, &a); err != nil {
					return fmt.Errorf("ledger: corrupt account %q: %w", k, err)
				}
				st, err := a.state()
				if err != nil {
					return err
				}
				out = append(out, l.balance(a, st))
				return nil
			})
		}
		if analyst != "" {
			if b := accounts.Bucket([]byte(analyst)); b != nil {
				return visit(b)
			}
			return nil
		}
		return accounts.ForEachBucket(func(k []byte) error { return visit(accounts.Bucket(k)) })
	})
	slices.SortFunc(out, func(a, b Balance) int {
		if c := strings.Compare(a.Analyst, b.Analyst); c != 0 {
			return c
		}
		return strings.Compare(strings.ToLower(a.Database), strings.ToLower(b.Database))
	})
	return out, err
}

// state is an account's amounts as exact rationals.
type state struct {
	budgetEps, budgetDelta, capEps, capDelta, spentEps, spentDelta *big.Rat
	prefixEps, prefixDelta                                         *big.Rat
}

func (a account) state() (state, error) {
	var st state
	for _, f := range []struct {
		dst **big.Rat
		s   string
	}{
		{&st.budgetEps, a.BudgetEps}, {&st.budgetDelta, a.BudgetDelta},
		{&st.capEps, a.CapEps}, {&st.capDelta, a.CapDelta},
		{&st.spentEps, a.SpentEps}, {&st.spentDelta, a.SpentDelta},
		{&st.prefixEps, cmpOr(a.PrefixEps, "0")}, {&st.prefixDelta, cmpOr(a.PrefixDelta, "0")},
	} {
		r, ok := new(big.Rat).SetString(f.s)
		if !ok {
			return st, fmt.Errorf("ledger: corrupt account %q/%q: amount %q", a.Analyst, a.Database, f.s)
		}
		*f.dst = r
	}
	return st, nil
}

// closeTo compares float sums that were added in different orders.
func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// balance is the account's Balance under its accounting.
func (l *Ledger) balance(a account, st state) Balance {
	rem := func(budget, spent *big.Rat) float64 {
		r := new(big.Rat).Sub(budget, spent)
		if r.Sign() < 0 {
			return 0
		}
		return toFloat(r)
	}
	b := Balance{
		Analyst:    a.Analyst,
		Database:   a.Database,
		Accounting: a.method(),
		Budget:     Amount{toFloat(st.budgetEps), toFloat(st.budgetDelta)},
		Basic:      Amount{toFloat(st.spentEps), toFloat(st.spentDelta)},
		Spent:      Amount{toFloat(st.spentEps), toFloat(st.spentDelta)},
		Remaining:  Amount{rem(st.budgetEps, st.spentEps), rem(st.budgetDelta, st.spentDelta)},
		MaxRelease: Amount{toFloat(st.capEps), toFloat(st.capDelta)},
		Releases:   a.Releases,
		LastCharge: a.LastCharge,
		Configured: a.Configured,
	}
	if a.method() == ZCDP {
		total := accounting.Cost{Rho: a.Rho, ThresholdFail: a.ThresholdFail}
		f, ok := l.filter(a, st)
		e, d := f.Spent(total)
		b.Spent = Amount{toFloat(st.prefixEps) + e, toFloat(st.prefixDelta) + d}
		b.Remaining = Amount{}
		if ok {
			b.Remaining.Epsilon, b.Remaining.Delta = f.Remaining(total)
		}
	}
	return b
}

// exact returns the shortest decimal that round-trips x, as a rational.
func exact(x float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	if !ok {
		panic(fmt.Sprintf("ledger: cannot convert %v", x)) // callers validated x is finite
	}
	return r
}

func toFloat(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
