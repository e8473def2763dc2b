package ledger

import (
	"errors"
	"testing"
	"time"

	"github.com/dpsql/dpsql/sqlext/accounting"
)

// openShare opens the ledger in dir under zCDP with the given threshold
// share (as accounting.threshold_share of the configuration).
func openShare(t *testing.T, dir string, share float64) *Ledger {
	t.Helper()
	l, err := Open(dir, Options{LockTimeout: 5 * time.Second, Accounting: Accounting{Method: ZCDP, ThresholdShare: share}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// chargeUntilRefused charges c until the ledger refuses it (at most 100
// times) and returns how many were accepted.
func chargeUntilRefused(t *testing.T, l *Ledger, analyst string, c accounting.Cost) int {
	t.Helper()
	for n := 0; n < 100; n++ {
		if _, err := l.ChargeCost(bg, analyst, "demo", c, Meta{}); err != nil {
			if !errors.Is(err, ErrBudgetExceeded) {
				t.Fatalf("charge %d: %v", n+1, err)
			}
			return n
		}
	}
	t.Fatal("100 charges accepted")
	return 0
}

// TestThresholdShareStoredPerAccount: the share of δ for the thresholds is
// part of the filter's stopping region (accounting.Filter: Σp bounded by
// share·δ, Σρ by the conversion at (1 − share)·δ, both fixed in advance).
// An account keeps the share it started composing with when the
// configuration changes it: with (10, 1e-5) and default releases the
// thresholds stop the sequence at 44 releases with share 0.9 and at 24
// with 0.5. After 30 releases under 0.9 and a restart with 0.5, the account
// goes on to 44 (one region), where reading the configuration at every
// charge refused the 31st (a union of two regions, which the filter's
// proof does not cover). An account with no zCDP history yet takes the new
// share.
func TestThresholdShareStoredPerAccount(t *testing.T) {
	c := defaultCost(t)
	dir := t.TempDir()
	limits := []Limit{
		{Analyst: "alice", Database: "demo", Budget: Amount{10, 1e-5}},
		{Analyst: "bob", Database: "demo", Budget: Amount{10, 1e-5}},
	}
	l := openShare(t, dir, 0.9)
	setLimits(t, l, limits...)
	for i := range 30 {
		if _, err := l.ChargeCost(bg, "alice", "demo", c, Meta{}); err != nil {
			t.Fatalf("charge %d under share 0.9: %v", i+1, err)
		}
	}
	l.Close()

	l = openShare(t, dir, 0.5)
	defer l.Close()
	setLimits(t, l, limits...)
	if n := chargeUntilRefused(t, l, "alice", c); n != 44-30 {
		t.Errorf("after the share changed to 0.5, alice had %d more releases; want %d (her stored share 0.9 up to 44)", n, 44-30)
	}
	if n := chargeUntilRefused(t, l, "bob", c); n != 24 {
		t.Errorf("bob, without history, had %d releases under share 0.5; want 24", n)
	}
	b, err := l.Balance("alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	f := accounting.Filter{Epsilon: 10, Delta: 1e-5, ThresholdShare: 0.9}
	if e, _ := f.Spent(accounting.Repeat(c, 44)); !closeTo(b.Spent.Epsilon, e) {
		t.Errorf("alice's balance spent ε = %v, want %v (share 0.9)", b.Spent.Epsilon, e)
	}
	if err := l.Verify(); err != nil {
		t.Error(err)
	}
}
