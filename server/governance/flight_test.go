package governance

import (
	"testing"
	"time"

	"github.com/dpsql/dpsql/release"
)

// TestReuseNoWaitOnOtherAnalyst (issue 20): with reuse.scope analyst (the
// default), an analyst's release never waits for another analyst's
// identical release in flight: whether it waits would tell bob that alice
// is running the same statement. bob's request is made and charged at
// once, while alice's is still being made.
func TestReuseNoWaitOnOtherAnalyst(t *testing.T) {
	g := newReuseGovernor(t, DefaultReuse())
	r := reusable(0.5, "spec shared")
	alice, err := g.ChargeOrReuse(ctxOfSession("alice", 1), []release.Request{r})
	if err != nil || alice.Reused() {
		t.Fatalf("alice: %v reused=%v", err, alice.Reused())
	}
	defer alice.Done()
	got := make(chan error, 1)
	go func() {
		u, err := g.ChargeOrReuse(ctxOfSession("bob", 2), []release.Request{r})
		if err == nil && u.Reused() {
			t.Errorf("bob reused alice's release")
		}
		if u != nil {
			u.Done()
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("bob: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bob's release waited for alice's")
	}
}
