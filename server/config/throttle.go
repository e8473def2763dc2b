package config

import "time"

// LoginThrottle is the login_throttle section: back-off of failed logins
// per client address and per account name (docs/deployment-hardening.md).
// Omitted (zero) fields take the defaults: 10 free failures per address
// and per account, then 1 s doubling up to 60 s between attempts, records
// forgotten after 15 minutes without a failure, an address trusted for an
// account for 30 days after a successful login there.
type LoginThrottle struct {
	// Disabled turns throttling off (not recommended on a network).
	Disabled bool `yaml:"disabled"`
	// FreePerAddress and FreePerAccount are the failures allowed before
	// the back-off starts.
	FreePerAddress int `yaml:"free_failures_per_address"`
	FreePerAccount int `yaml:"free_failures_per_account"`
	// Backoff is the first block; each further failure doubles it, up to
	// MaxBackoff.
	Backoff    time.Duration `yaml:"backoff"`
	MaxBackoff time.Duration `yaml:"max_backoff"`
	// ForgetAfter clears the failures of an address or an account after
	// that long without one.
	ForgetAfter time.Duration `yaml:"forget_after"`
	// TrustFor exempts, for that long, an address where an account logged
	// in successfully from that account's back-off (not from the
	// address's own).
	TrustFor time.Duration `yaml:"trust_for"`
}

// validate reports the section's errors.
func (t LoginThrottle) validate(v *validator) {
	for key, n := range map[string]int64{
		"free_failures_per_address": int64(t.FreePerAddress), "free_failures_per_account": int64(t.FreePerAccount),
		"backoff": int64(t.Backoff), "max_backoff": int64(t.MaxBackoff), "forget_after": int64(t.ForgetAfter), "trust_for": int64(t.TrustFor),
	} {
		if n < 0 {
			v.errorf(at("login_throttle", key), "login_throttle.%s must be ≥ 0 (0 or omitted: the default), got a negative value", key)
		}
	}
	if t.MaxBackoff > 0 && t.Backoff > t.MaxBackoff {
		v.errorf(at("login_throttle", "max_backoff"), "login_throttle.max_backoff (%v) must be at least backoff (%v)", t.MaxBackoff, t.Backoff)
	}
}
