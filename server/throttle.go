package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/dpsql/dpsql/server/config"
)

// LoginThrottle configures the back-off of failed logins: per client
// address and per account name, the first failures are free, then each
// failure blocks further logins for Backoff, doubling at every failure up
// to MaxBackoff; a record with no failure for ForgetAfter is forgotten.
// Zero fields take DefaultLoginThrottle's values.
type LoginThrottle struct {
	// Disabled turns throttling off.
	Disabled bool
	// FreePerAddress and FreePerAccount are the failures checked before
	// the back-off starts (per client address, over all accounts; per
	// account name, over all addresses): the last of them blocks.
	FreePerAddress, FreePerAccount int
	// Backoff is the first block, doubled at each further failure up to
	// MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// ForgetAfter clears a record that has had no failure for that long.
	ForgetAfter time.Duration
	// TrustFor is how long an address where an account logged in
	// successfully is exempt from that account's back-off (not from its
	// own): an attacker failing on an account from elsewhere cannot lock
	// its user out where they usually log in.
	TrustFor time.Duration
	// MaxRecords bounds the records kept per kind (addresses, accounts,
	// trusted pairs): the oldest ones are dropped beyond it.
	MaxRecords int
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// DefaultLoginThrottle is the throttle of a server whose configuration
// sets none: 10 free failures per address and per account, then 1 s,
// 2 s, 4 s, … up to 60 s between attempts; records forgotten after 15
// minutes without a failure; an address trusted for an account for 30
// days after it logged in there; 100,000 records of each kind.
func DefaultLoginThrottle() LoginThrottle {
	return LoginThrottle{FreePerAddress: 10, FreePerAccount: 10, Backoff: time.Second, MaxBackoff: time.Minute,
		ForgetAfter: 15 * time.Minute, TrustFor: 30 * 24 * time.Hour, MaxRecords: 100_000}
}

// WithDefaults returns t with its zero fields set from DefaultLoginThrottle.
func (t LoginThrottle) WithDefaults() LoginThrottle {
	d := DefaultLoginThrottle()
	if t.FreePerAddress <= 0 {
		t.FreePerAddress = d.FreePerAddress
	}
	if t.FreePerAccount <= 0 {
		t.FreePerAccount = d.FreePerAccount
	}
	if t.Backoff <= 0 {
		t.Backoff = d.Backoff
	}
	if t.MaxBackoff <= 0 {
		t.MaxBackoff = max(d.MaxBackoff, t.Backoff)
	}
	t.MaxBackoff = max(t.MaxBackoff, t.Backoff)
	if t.ForgetAfter <= 0 {
		t.ForgetAfter = d.ForgetAfter
	}
	if t.TrustFor <= 0 {
		t.TrustFor = d.TrustFor
	}
	if t.MaxRecords <= 0 {
		t.MaxRecords = d.MaxRecords
	}
	if t.Now == nil {
		t.Now = time.Now
	}
	return t
}

// throttle is the state of a LoginThrottle. Records are keyed by the
// account name as the client sent it, whether an account of that name
// exists or not, so that throttling says nothing about which accounts
// exist; a blocked login is refused before its password is checked, so
// attempts during a block teach an attacker nothing and are not counted.
type throttle struct {
	cfg LoginThrottle

	mu      sync.Mutex
	address map[string]*failures
	account map[string]*failures
	trusted map[[2]string]time.Time // (account, address) → last success
}

// failures is one key's record: consecutive failures (since the last
// forget) and the end of the current block.
type failures struct {
	n     int
	last  time.Time
	until time.Time
}

// newThrottle returns the throttle of cfg (nil for none).
func newThrottle(cfg *LoginThrottle) *throttle {
	if cfg == nil || cfg.Disabled {
		return nil
	}
	return &throttle{cfg: cfg.WithDefaults(),
		address: map[string]*failures{}, account: map[string]*failures{}, trusted: map[[2]string]time.Time{}}
}

// blocked returns how long logins as account from address must still
// wait (0: the login may be checked).
func (t *throttle) blocked(account, address string) time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.Now()
	wait := t.wait(t.address, address, now)
	if ts, ok := t.trusted[[2]string{account, address}]; !ok || now.Sub(ts) > t.cfg.TrustFor {
		wait = max(wait, t.wait(t.account, account, now))
	}
	return wait
}

// wait returns the rest of key's block in m.
func (t *throttle) wait(m map[string]*failures, key string, now time.Time) time.Duration {
	f := m[key]
	if f == nil || !now.Before(f.until) {
		return 0
	}
	return f.until.Sub(now)
}

// failed records a refused login as account from address.
func (t *throttle) failed(account, address string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.Now()
	t.fail(t.address, address, t.cfg.FreePerAddress, now)
	t.fail(t.account, account, t.cfg.FreePerAccount, now)
}

// fail counts a failure of key in m: from the free-th failure on, the key
// is blocked for Backoff·2^(k−1) after its k-th failure counted from the
// free-th, at most MaxBackoff.
func (t *throttle) fail(m map[string]*failures, key string, free int, now time.Time) {
	f := m[key]
	if f == nil || now.Sub(f.last) > t.cfg.ForgetAfter {
		if len(m) >= t.cfg.MaxRecords {
			t.prune(m, now)
		}
		f = &failures{}
		m[key] = f
	}
	f.n++
	f.last = now
	if k := f.n - free + 1; k > 0 {
		d := t.cfg.MaxBackoff
		if k <= 62 && t.cfg.Backoff<<(k-1) > 0 && t.cfg.Backoff<<(k-1) < d {
			d = t.cfg.Backoff << (k - 1)
		}
		f.until = now.Add(d)
	}
}

// prune drops m's forgotten records, and arbitrary ones down to half the
// bound when that is not enough: a flood of account names cannot grow the
// process (it can at most clear some records, which an attacker pays for
// with failures of their own).
func (t *throttle) prune(m map[string]*failures, now time.Time) {
	for k, f := range m {
		if now.Sub(f.last) > t.cfg.ForgetAfter && !now.Before(f.until) {
			delete(m, k)
		}
	}
	if len(m) < t.cfg.MaxRecords {
		return
	}
	for k := range m {
		if len(m) < t.cfg.MaxRecords/2+1 {
			break
		}
		delete(m, k)
	}
}

// succeeded records a login as account from address: the address is
// trusted for the account (exempt from the account's back-off).
func (t *throttle) succeeded(account, address string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.cfg.Now()
	if len(t.trusted) >= t.cfg.MaxRecords {
		for k, ts := range t.trusted {
			if now.Sub(ts) > t.cfg.TrustFor || len(t.trusted) >= t.cfg.MaxRecords {
				delete(t.trusted, k)
			}
		}
	}
	t.trusted[[2]string{account, address}] = now
}

// blockedMessage is appended to a refused login's message while it is
// blocked: it names no account and says nothing about whether one exists.
func blockedMessage(wait time.Duration) string {
	s := int((wait + time.Second - 1) / time.Second)
	return fmt.Sprintf("too many failed logins from this address or for this user: try again in %d s (the password was not checked)", max(s, 1))
}

// loginThrottle is the governed server's throttle from its configuration.
func loginThrottle(c config.LoginThrottle) *LoginThrottle {
	return &LoginThrottle{Disabled: c.Disabled, FreePerAddress: c.FreePerAddress, FreePerAccount: c.FreePerAccount,
		Backoff: c.Backoff, MaxBackoff: c.MaxBackoff, ForgetAfter: c.ForgetAfter, TrustFor: c.TrustFor}
}
