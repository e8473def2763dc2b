package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var bg = context.Background()

func openTest(t *testing.T, dir string) *Ledger {
	t.Helper()
	l, err := Open(dir, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func setLimits(t *testing.T, l *Ledger, limits ...Limit) {
	t.Helper()
	if err := l.SetLimits(bg, limits); err != nil {
		t.Fatal(err)
	}
}

func mustCharge(t *testing.T, l *Ledger, analyst, db string, eps, delta float64) Receipt {
	t.Helper()
	r, err := l.Charge(bg, analyst, db, eps, delta, Meta{Description: "SELECT DISTINCT w FROM t"})
	if err != nil {
		t.Fatalf("charge (%v, %v): %v", eps, delta, err)
	}
	return r
}

func TestLedgerBudgetDecreasesPerCharge(t *testing.T) {
	l := openTest(t, t.TempDir())
	setLimits(t, l, Limit{Analyst: "alice", Database: "demo", Budget: Amount{1, 1e-5}})
	want := []Amount{{0.9, 9e-6}, {0.8, 8e-6}, {0.7, 7e-6}}
	for i, w := range want {
		r := mustCharge(t, l, "alice", "demo", 0.1, 1e-6)
		if r.Seq != uint64(i+1) {
			t.Errorf("charge %d: seq %d", i, r.Seq)
		}
		if r.Balance.Remaining != w {
			t.Errorf("after charge %d: remaining %v, want %v", i+1, r.Balance.Remaining, w)
		}
		if r.Balance.Releases != int64(i+1) {
			t.Errorf("after charge %d: %d releases", i+1, r.Balance.Releases)
		}
	}
	b, err := l.Balance("alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if b.Spent != (Amount{0.3, 3e-6}) || b.Remaining != (Amount{0.7, 7e-6}) || b.Budget != (Amount{1, 1e-5}) || !b.Configured {
		t.Errorf("balance %+v", b)
	}
	recs, err := l.Audit(AuditFilter{Analyst: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d audit records, want 3", len(recs))
	}
	for i, r := range recs {
		if r.Seq != uint64(i+1) || r.Analyst != "alice" || r.Database != "demo" || r.Epsilon != 0.1 || r.Delta != 1e-6 ||
			r.Description != "SELECT DISTINCT w FROM t" || r.Time.IsZero() {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if err := l.Verify(); err != nil {
		t.Fatal(err)
	}
}

// Decimal inputs add exactly: float64 addition would give 0.1+0.1+0.1 >
// 0.3 and refuse the third charge.
func TestLedgerExactDecimalSums(t *testing.T) {
	l := openTest(t, t.TempDir())
	setLimits(t, l, Limit{Analyst: "a", Database: "d", Budget: Amount{0.3, 3e-7}})
	for range 3 {
		mustCharge(t, l, "a", "d", 0.1, 1e-7)
	}
	b, _ := l.Balance("a", "d")
	if b.Remaining != (Amount{0, 0}) || b.Spent != (Amount{0.3, 3e-7}) {
		t.Errorf("balance %+v", b)
	}
	if _, err := l.Charge(bg, "a", "d", 1e-9, 0, Meta{}); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("charge beyond an exhausted budget: %v", err)
	}
}

func TestLedgerExhaustedBudgetRefused(t *testing.T) {
	l := openTest(t, t.TempDir())
	setLimits(t, l, Limit{Analyst: "alice", Database: "demo", Budget: Amount{1, 1e-5}})
	mustCharge(t, l, "alice", "demo", 0.6, 1e-6)

	_, err := l.Charge(bg, "alice", "demo", 0.5, 1e-6, Meta{Description: "too much"})
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("got %v, want ErrBudgetExceeded", err)
	}
	var ce *ChargeError
	if !errors.As(err, &ce) || ce.Balance.Remaining != (Amount{0.4, 9e-6}) {
		t.Errorf("ChargeError %+v", ce)
	}
	msg := err.Error()
	for _, s := range []string{"needs ε=0.5, δ=1e-06", "only ε=0.4, δ=9e-06 left", `"demo"`, `"alice"`, "budget ε=1, δ=1e-05", "spent ε=0.6, δ=1e-06 in 1 releases", "lower dp_epsilon"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}
	// δ alone can exhaust the budget too.
	if _, err := l.Charge(bg, "alice", "demo", 0.1, 1e-5, Meta{}); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("δ beyond the budget: %v", err)
	}
	// Refusals change nothing.
	b, _ := l.Balance("alice", "demo")
	if b.Spent != (Amount{0.6, 1e-6}) || b.Releases != 1 {
		t.Errorf("balance after refusals %+v", b)
	}
	if recs, _ := l.Audit(AuditFilter{}); len(recs) != 1 {
		t.Errorf("%d audit records after refusals, want 1", len(recs))
	}
	// Check agrees with Charge and does not charge.
	if err := l.Check("alice", "demo", 0.5, 1e-6); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("Check: %v", err)
	}
	if err := l.Check("alice", "demo", 0.4, 9e-6); err != nil {
		t.Errorf("Check of exactly the remainder: %v", err)
	}
	// Exactly the remainder fits, then nothing does.
	mustCharge(t, l, "alice", "demo", 0.4, 9e-6)
	if _, err := l.Charge(bg, "alice", "demo", 1e-12, 0, Meta{}); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("charge after exhaustion: %v", err)
	}
}

func TestLedgerPerReleaseCap(t *testing.T) {
	l := openTest(t, t.TempDir())
	setLimits(t, l, Limit{Analyst: "a", Database: "d", Budget: Amount{10, 1e-4}, MaxRelease: Amount{0.5, 0}})
	_, err := l.Charge(bg, "a", "d", 0.6, 1e-6, Meta{})
	if !errors.Is(err, ErrCapExceeded) || !strings.Contains(err.Error(), "at most ε=0.5") {
		t.Fatalf("got %v, want a cap refusal naming ε=0.5", err)
	}
	mustCharge(t, l, "a", "d", 0.5, 5e-5) // no δ cap: only the budget limits δ
	setLimits(t, l, Limit{Analyst: "a", Database: "d", Budget: Amount{10, 1e-4}, MaxRelease: Amount{0, 1e-6}})
	if _, err := l.Charge(bg, "a", "d", 2, 2e-6, Meta{}); !errors.Is(err, ErrCapExceeded) || !strings.Contains(err.Error(), "at most δ=1e-06") {
		t.Fatalf("got %v, want a δ cap refusal", err)
	}
	mustCharge(t, l, "a", "d", 2, 1e-6)
}

func TestLedgerNoBudget(t *testing.T) {
	l := openTest(t, t.TempDir())
	setLimits(t, l, Limit{Analyst: "alice", Database: "Demo", Budget: Amount{1, 1e-5}})
	for _, c := range []struct{ analyst, db string }{{"bob", "demo"}, {"alice", "other"}, {"", "demo"}, {"ALICE", "demo"}} {
		_, err := l.Charge(bg, c.analyst, c.db, 0.1, 0, Meta{})
		if !errors.Is(err, ErrNoBudget) || !strings.Contains(err.Error(), "an administrator must add one") {
			t.Errorf("%q on %q: %v", c.analyst, c.db, err)
		}
		if err := l.Check(c.analyst, c.db, 0.1, 0); !errors.Is(err, ErrNoBudget) {
			t.Errorf("Check %q on %q: %v", c.analyst, c.db, err)
		}
	}
	// Database names are case-insensitive, as in the SQL engine; the
	// configured spelling is kept.
	r := mustCharge(t, l, "alice", "DEMO", 0.1, 0)
	if r.Balance.Database != "Demo" {
		t.Errorf("database %q", r.Balance.Database)
	}
}

func TestLedgerInvalidAmounts(t *testing.T) {
	l := openTest(t, t.TempDir())
	setLimits(t, l, Limit{Analyst: "a", Database: "d", Budget: Amount{1, 1e-5}})
	for _, c := range []Amount{{0, 0}, {-1, 0}, {math.NaN(), 0}, {math.Inf(1), 0}, {0.1, -1e-9}, {0.1, 1}, {0.1, math.NaN()}} {
		if _, err := l.Charge(bg, "a", "d", c.Epsilon, c.Delta, Meta{}); err == nil {
			t.Errorf("charge %v accepted", c)
		}
	}
	for _, lim := range []Limit{
		{Analyst: "a", Database: "d", Budget: Amount{0, 1e-5}},
		{Analyst: "a", Database: "d", Budget: Amount{-1, 1e-5}},
		{Analyst: "a", Database: "d", Budget: Amount{math.Inf(1), 1e-5}},
		{Analyst: "a", Database: "d", Budget: Amount{1, 1}},
		{Analyst: "a", Database: "d", Budget: Amount{1, 0}, MaxRelease: Amount{-1, 0}},
		{Analyst: "", Database: "d", Budget: Amount{1, 0}},
	} {
		if err := l.SetLimits(bg, []Limit{lim}); err == nil {
			t.Errorf("limit %+v accepted", lim)
		}
	}
	dup := []Limit{{Analyst: "a", Database: "d", Budget: Amount{1, 0}}, {Analyst: "a", Database: "D", Budget: Amount{2, 0}}}
	if err := l.SetLimits(bg, dup); err == nil {
		t.Error("two budgets for one database accepted")
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := l.Charge(ctx, "a", "d", 0.1, 0, Meta{}); !errors.Is(err, context.Canceled) {
		t.Errorf("charge with a cancelled context: %v", err)
	}
}

func TestLedgerValuesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	setLimits(t, l,
		Limit{Analyst: "alice", Database: "demo", Budget: Amount{1, 1e-5}},
		Limit{Analyst: "bob", Database: "demo", Budget: Amount{2, 1e-5}})
	mustCharge(t, l, "alice", "demo", 0.25, 1e-6)
	mustCharge(t, l, "bob", "demo", 0.5, 2e-6)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// Restart with a changed configuration: alice's budget is raised, bob is
	// removed, carol is new.
	l = openTest(t, dir)
	setLimits(t, l,
		Limit{Analyst: "alice", Database: "demo", Budget: Amount{3, 1e-5}, MaxRelease: Amount{1, 0}},
		Limit{Analyst: "carol", Database: "demo", Budget: Amount{1, 1e-6}})
	a, err := l.Balance("alice", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if a.Spent != (Amount{0.25, 1e-6}) || a.Remaining != (Amount{2.75, 9e-6}) || a.Releases != 1 || a.MaxRelease != (Amount{1, 0}) {
		t.Errorf("alice after restart: %+v", a)
	}
	b, err := l.Balance("bob", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if b.Configured || b.Spent != (Amount{0.5, 2e-6}) || b.Budget != (Amount{}) || b.Remaining != (Amount{}) {
		t.Errorf("removed bob: %+v", b)
	}
	_, err = l.Charge(bg, "bob", "demo", 0.1, 0, Meta{})
	if !errors.Is(err, ErrNoBudget) || !strings.Contains(err.Error(), "removed from the configuration") {
		t.Errorf("charge to a removed account: %v", err)
	}
	all, err := l.Balances("")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range all {
		names = append(names, x.Analyst+"@"+x.Database)
	}
	if strings.Join(names, ",") != "alice@demo,bob@demo,carol@demo" {
		t.Errorf("Balances(all) = %v", names)
	}
	if own, _ := l.Balances("alice"); len(own) != 1 || own[0].Analyst != "alice" {
		t.Errorf("Balances(alice) = %+v", own)
	}
	if none, _ := l.Balances("nobody"); len(none) != 0 {
		t.Errorf("Balances(nobody) = %+v", none)
	}
	// Lowering a budget below what was spent leaves nothing.
	setLimits(t, l, Limit{Analyst: "alice", Database: "demo", Budget: Amount{0.1, 1e-5}})
	a, _ = l.Balance("alice", "demo")
	if a.Remaining.Epsilon != 0 || a.Spent.Epsilon != 0.25 {
		t.Errorf("alice after lowering: %+v", a)
	}
	if _, err := l.Charge(bg, "alice", "demo", 0.01, 0, Meta{}); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("charge over a lowered budget: %v", err)
	}
	if err := l.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestLedgerLockedDataDirectory(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir)
	start := time.Now()
	_, err := Open(dir, Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second open: %v, want ErrInUse", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("gave up after %v, before the lock timeout", d)
	}
	if !strings.Contains(err.Error(), "another dpsql is using data directory "+dir) {
		t.Errorf("message %q does not say what to do", err)
	}
}

func TestLedgerConcurrentChargesNeverOverspend(t *testing.T) {
	l := openTest(t, t.TempDir())
	// 100 charges of 0.01 fit exactly; 8 goroutines try 25 each.
	setLimits(t, l, Limit{Analyst: "a", Database: "d", Budget: Amount{1, 1e-4}})
	const workers, each = 8, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				_, err := l.Charge(bg, "a", "d", 0.01, 1e-7, Meta{Description: fmt.Sprintf("w%d/%d", w, i)})
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ErrBudgetExceeded):
					refused++
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ok != 100 || refused != workers*each-100 {
		t.Errorf("%d charges accepted and %d refused, want 100 and %d", ok, refused, workers*each-100)
	}
	b, _ := l.Balance("a", "d")
	if b.Spent.Epsilon != 1 || b.Remaining.Epsilon != 0 || b.Releases != 100 {
		t.Errorf("balance %+v", b)
	}
	if err := l.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestLedgerDescriptionCut(t *testing.T) {
	l := openTest(t, t.TempDir())
	setLimits(t, l, Limit{Analyst: "a", Database: "d", Budget: Amount{1, 0}})
	long := strings.Repeat("é", MaxDescription) // 2 bytes per rune
	if _, err := l.Charge(bg, "a", "d", 0.1, 0, Meta{Description: long, Mechanism: "policy_gaussian_l1", Connection: 7}); err != nil {
		t.Fatal(err)
	}
	recs, _ := l.Audit(AuditFilter{Database: "D", Limit: 1})
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if len(r.Description) != MaxDescription || !strings.HasPrefix(long, r.Description) || len(r.DescriptionSHA256) != 64 ||
		r.Mechanism != "policy_gaussian_l1" || r.Connection != 7 {
		t.Errorf("record %+v", r)
	}
}

// TestLedgerVerifyDetectsMismatch edits an account behind the ledger's back
// and expects Verify to notice.
func TestLedgerVerifyDetectsMismatch(t *testing.T) {
	l := openTest(t, t.TempDir())
	setLimits(t, l, Limit{Analyst: "a", Database: "d", Budget: Amount{1, 0}})
	mustCharge(t, l, "a", "d", 0.5, 0)
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAccounts).Bucket([]byte("a"))
		var a account
		if err := json.Unmarshal(b.Get([]byte("d")), &a); err != nil {
			return err
		}
		a.SpentEps = "1/4"
		return putJSON(b, []byte("d"), a)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Verify(); err == nil || !strings.Contains(err.Error(), "audit records sum to ε=1/2") {
		t.Errorf("Verify after tampering: %v", err)
	}
}

// The crash test re-executes the test binary as a child that charges in a
// loop (several goroutines) and prints "released SEQ" after each charge
// returns, as the server sends a release only after Charge. The parent kills
// it with SIGKILL at a random moment, reopens the ledger and checks that it
// is consistent and that every release the child reported was charged.

const crashChildEnv = "DPSQL_LEDGER_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

func crashChild(dir string) {
	l, err := Open(dir, Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	say := func(s string) {
		mu.Lock()
		out.WriteString(s + "\n")
		out.Flush()
		mu.Unlock()
	}
	say("ready")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				r, err := l.Charge(bg, "a", "d", 0.001, 1e-9, Meta{Description: fmt.Sprintf("child w%d q%d", w, i)})
				if err != nil {
					say("error " + err.Error())
					return
				}
				say("released " + strconv.FormatUint(r.Seq, 10))
			}
		})
	}
	wg.Wait()
	os.Exit(0)
}

func TestLedgerSIGKILLMidCharge(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	setLimits(t, l, Limit{Analyst: "a", Database: "d", Budget: Amount{1e6, 0.5}})
	l.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	released := map[uint64]bool{}
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() || sc.Text() != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child did not start: %q %s", round, sc.Text(), stderr.String())
		}
		lines := make(chan string, 1<<16)
		go func() {
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		time.Sleep(time.Duration(10+rng.IntN(90)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		n := 0
		for line := range lines {
			seq, ok := strings.CutPrefix(line, "released ")
			if !ok {
				t.Fatalf("round %d: child said %q", round, line)
			}
			s, _ := strconv.ParseUint(seq, 10, 64)
			released[s] = true
			n++
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v, not SIGKILL (%s)", round, err, stderr.String())
		}

		// Restart: the lock is free, the ledger is consistent, and charged ≥
		// released (every reported release has its committed charge).
		l, err := Open(dir, Options{LockTimeout: time.Second})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		if err := l.Verify(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		recs, err := l.Audit(AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		charged := map[uint64]bool{}
		for _, r := range recs {
			charged[r.Seq] = true
		}
		for s := range released {
			if !charged[s] {
				t.Fatalf("round %d: release %d was sent but its charge is lost", round, s)
			}
		}
		b, _ := l.Balance("a", "d")
		if b.Releases != int64(len(recs)) || b.Releases < int64(len(released)) || b.Spent.Epsilon > b.Budget.Epsilon {
			t.Fatalf("round %d: balance %+v with %d records, %d released", round, b, len(recs), len(released))
		}
		t.Logf("round %d: killed after %d releases reported in this round; %d charged, %d released in total", round, n, b.Releases, len(released))
		l.Close()
	}
	if len(released) == 0 {
		t.Fatal("the child never released anything; the test did not exercise charging")
	}
}

func TestLedgerFileMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	openTest(t, dir)
	st, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		t.Errorf("ledger file mode %v is readable by others", st.Mode())
	}
}

// BenchmarkLedgerCharge measures a committed (fsynced) charge, serially
// and from 8×GOMAXPROCS goroutines (bbolt serialises writers; each commit
// syncs).
func BenchmarkLedgerCharge(b *testing.B) {
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("parallelism=%d", workers), func(b *testing.B) {
			l, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			if err := l.SetLimits(bg, []Limit{{Analyst: "a", Database: "d", Budget: Amount{1e12, 0.5}}}); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(workers)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Charge(bg, "a", "d", 0.001, 1e-12, Meta{Description: "SELECT DISTINCT word FROM posts"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
		})
	}
}
