package server

import (
	"fmt"
	"testing"
	"time"
)

// TestThrottleBackoff: after the free failures, each failure blocks for
// twice as long as the previous, up to the cap; a block ends by itself;
// failures are forgotten; a trusted address is exempt from the account's
// block but not from its own; the records stay bounded under a flood of
// names.
func TestThrottleBackoff(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	th := newThrottle(&LoginThrottle{FreePerAddress: 100, FreePerAccount: 2, Backoff: time.Second, MaxBackoff: 8 * time.Second,
		ForgetAfter: time.Hour, TrustFor: 24 * time.Hour, MaxRecords: 1000, Now: func() time.Time { return now }})
	var waits []time.Duration
	for range 7 {
		if w := th.blocked("alice", "10.0.0.1"); w > 0 {
			now = now.Add(w) // wait out the block, as a patient attacker does
		}
		th.failed("alice", "10.0.0.1")
		waits = append(waits, th.blocked("alice", "10.0.0.9"))
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("blocks after each failure: %v, want %v", waits, want)
	}
	// The user's usual address (a success there) is exempt from the
	// account's block; a new one is not.
	th.succeeded("alice", "10.0.0.2")
	if w := th.blocked("alice", "10.0.0.2"); w != 0 {
		t.Errorf("trusted address blocked for %v", w)
	}
	if w := th.blocked("alice", "10.0.0.3"); w == 0 {
		t.Error("new address not blocked")
	}
	now = now.Add(2 * time.Hour)
	if w := th.blocked("alice", "10.0.0.3"); w != 0 {
		t.Errorf("blocked %v after the cap", w)
	}
	th.failed("alice", "10.0.0.3")
	if w := th.blocked("alice", "10.0.0.3"); w != 0 {
		t.Errorf("failures not forgotten: blocked %v after one failure", w)
	}
	for i := range 5000 {
		th.failed(fmt.Sprintf("user%d", i), fmt.Sprintf("10.1.%d.%d", i/256, i%256))
	}
	if len(th.account) > 1000 || len(th.address) > 1000 {
		t.Errorf("records: %d accounts, %d addresses, bound 1000", len(th.account), len(th.address))
	}
}
