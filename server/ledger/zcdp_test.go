package ledger

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

func openZCDP(t *testing.T, dir string) *Ledger {
	t.Helper()
	l, err := Open(dir, Options{LockTimeout: 5 * time.Second, Accounting: Accounting{Method: ZCDP}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func defaultCost(t *testing.T) accounting.Cost {
	t.Helper()
	c, err := accounting.SetUnionOptions(setunion.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestZCDPManyMoreReleases: with a budget of (10, 1e-5), default releases at
// ε = 1, δ = 1e-6 fit 10 times under basic composition and 44 times under
// zCDP accounting, and the 45th is refused with a message that says why.
func TestZCDPManyMoreReleases(t *testing.T) {
	c := defaultCost(t)
	for _, m := range []struct {
		method Method
		want   int
	}{{Basic, 10}, {ZCDP, 44}} {
		l, err := Open(t.TempDir(), Options{LockTimeout: 5 * time.Second, Accounting: Accounting{Method: m.method}})
		if err != nil {
			t.Fatal(err)
		}
		setLimits(t, l, Limit{Analyst: "alice", Database: "demo", Budget: Amount{10, 1e-5}})
		cost := c
		if m.method == Basic {
			cost = accounting.Basic(c.Epsilon, c.Delta)
		}
		n := 0
		var last error
		for ; n < 100; n++ {
			if _, last = l.ChargeCost(bg, "alice", "demo", cost, Meta{}); last != nil {
				break
			}
		}
		if n != m.want || !errors.Is(last, ErrBudgetExceeded) {
			t.Errorf("%s: %d releases fit (then %v), want %d", m.method, n, last, m.want)
		}
		b, err := l.Balance("alice", "demo")
		if err != nil {
			t.Fatal(err)
		}
		if b.Accounting != m.method || b.Releases != int64(m.want) || b.Spent.Epsilon > 10 || b.Basic.Epsilon != float64(m.want) {
			t.Errorf("%s: balance %+v", m.method, b)
		}
		if m.method == ZCDP && !strings.Contains(last.Error(), "zCDP") {
			t.Errorf("refusal does not say why: %v", last)
		}
		if err := l.Verify(); err != nil {
			t.Errorf("%s: %v", m.method, err)
		}
		l.Close()
	}
}

// TestZCDPMigration: an existing basic-composition ledger keeps its history
// charged as it was (a fixed prefix) when it moves to zCDP accounting, and
// the zCDP budget is what the prefix left; moving back counts every
// release's stated (ε, δ).
func TestZCDPMigration(t *testing.T) {
	dir := t.TempDir()
	lim := Limit{Analyst: "alice", Database: "demo", Budget: Amount{10, 1e-5}}
	l := openTest(t, dir)
	setLimits(t, l, lim)
	for range 4 {
		mustCharge(t, l, "alice", "demo", 1, 1e-6)
	}
	l.Close()

	z := openZCDP(t, dir)
	setLimits(t, z, lim)
	b, err := z.Balance("alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if b.Accounting != ZCDP || b.Spent != (Amount{4, 4e-6}) || b.Basic != (Amount{4, 4e-6}) {
		t.Fatalf("after migration: %+v", b)
	}
	c := defaultCost(t)
	n := 0
	for ; n < 100; n++ {
		if _, err := z.ChargeCost(bg, "alice", "demo", c, Meta{}); err != nil {
			break
		}
	}
	f := accounting.Filter{Epsilon: 6, Delta: 6e-6}
	if want := f.MaxReleases(c, 100); n != want || n <= 6 {
		t.Errorf("%d releases after a prefix of (4, 4e-6), want %d (and more than basic composition's 6)", n, want)
	}
	// A release without a zCDP account is refused on a zCDP account.
	if err := z.CheckCost("alice", "demo", accounting.Basic(0.001, 1e-12)); !errors.Is(err, ErrBudgetExceeded) || !strings.Contains(err.Error(), "no zCDP accounting") {
		t.Errorf("basic-only release: %v", err)
	}
	if err := z.Verify(); err != nil {
		t.Fatal(err)
	}
	z.Close()

	// Back to basic composition: every release counts its (ε, δ).
	l2 := openTest(t, dir)
	setLimits(t, l2, lim)
	b, _ = l2.Balance("alice", "demo")
	if b.Accounting != Basic || b.Spent.Epsilon != float64(4+n) {
		t.Errorf("back to basic: %+v", b)
	}
	if err := l2.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestPreview: a preview charges nothing, shows the account before and
// after, and counts exactly the repeats that charging then accepts; a cost
// the account cannot pay is refused in the preview as in ChargeCost.
func TestPreview(t *testing.T) {
	c := defaultCost(t)
	for _, m := range []Method{Basic, ZCDP} {
		l, err := Open(t.TempDir(), Options{LockTimeout: 5 * time.Second, Accounting: Accounting{Method: m}})
		if err != nil {
			t.Fatal(err)
		}
		setLimits(t, l, Limit{Analyst: "alice", Database: "demo", Budget: Amount{10, 1e-5}})
		cost := c
		if m == Basic {
			cost = accounting.Basic(c.Epsilon, c.Delta)
		}
		if _, err := l.ChargeCost(bg, "alice", "demo", cost, Meta{}); err != nil {
			t.Fatal(err)
		}
		p, err := l.Preview("alice", "demo", []accounting.Cost{cost, cost})
		if err != nil || p.Refused != nil {
			t.Fatalf("%s: %+v %v", m, p, err)
		}
		if p.Before.Releases != 1 || p.After.Releases != 3 || p.After.Remaining.Epsilon >= p.Before.Remaining.Epsilon {
			t.Errorf("%s: before %+v after %+v", m, p.Before, p.After)
		}
		n := 0
		for ; n < 100; n++ {
			if _, err := l.ChargeCost(bg, "alice", "demo", cost, Meta{}); err != nil {
				break
			}
		}
		// The preview's two costs and its repeats of both: 2 + 2·Repeats
		// releases fit, possibly one more (a half repeat).
		if n < 2+2*p.Repeats || n > 3+2*p.Repeats {
			t.Errorf("%s: preview said %d repeats of 2 after 2, %d releases fit", m, p.Repeats, n)
		}
		p, err = l.Preview("alice", "demo", []accounting.Cost{cost})
		if err != nil || !errors.Is(p.Refused, ErrBudgetExceeded) || p.Repeats != 0 {
			t.Errorf("%s: exhausted account previewed as %+v %v", m, p, err)
		}
		if p, _ := l.Preview("bob", "demo", []accounting.Cost{cost}); !errors.Is(p.Refused, ErrNoBudget) {
			t.Errorf("%s: unknown account previewed as %+v", m, p)
		}
		l.Close()
	}
}
