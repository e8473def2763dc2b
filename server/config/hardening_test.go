package config

import (
	"strings"
	"testing"
	"time"
)

// TestReleaseIndexBytesNone: limits.release_index_bytes: -1 is documented
// as "no index, every release scans"; it must load (it refused to start)
// and keep -1, while any other negative value is refused.
func TestReleaseIndexBytesNone(t *testing.T) {
	c, err := Parse([]byte(validConfig+"limits:\n  release_index_bytes: -1\n"), "/etc/dpsql")
	if err != nil {
		t.Fatalf("release_index_bytes: -1: %v", err)
	}
	if c.Limits.ReleaseIndexBytes != -1 {
		t.Errorf("release_index_bytes = %d, want -1", c.Limits.ReleaseIndexBytes)
	}
	if _, err := Parse([]byte(validConfig+"limits:\n  release_index_bytes: -2\n"), "/etc/dpsql"); err == nil {
		t.Error("release_index_bytes: -2 loaded; want an error")
	}
}

// TestLoginThrottleSection: login_throttle loads its keys, and refuses
// negative values and a cap below the first back-off, naming the key.
func TestLoginThrottleSection(t *testing.T) {
	c, err := Parse([]byte(validConfig+"login_throttle:\n  free_failures_per_address: 3\n  backoff: 2s\n  max_backoff: 30s\n"), "/etc/dpsql")
	if err != nil {
		t.Fatal(err)
	}
	if lt := c.LoginThrottle; lt.FreePerAddress != 3 || lt.Backoff != 2*time.Second || lt.MaxBackoff != 30*time.Second || lt.Disabled {
		t.Errorf("login_throttle = %+v", lt)
	}
	for bad, key := range map[string]string{
		"login_throttle:\n  backoff: -1s\n":                   "login_throttle.backoff",
		"login_throttle:\n  backoff: 1m\n  max_backoff: 1s\n": "login_throttle.max_backoff",
		"login_throttle:\n  free_failures_per_account: -2\n":  "login_throttle.free_failures_per_account",
		"login_throttle:\n  lockout: 1h\n":                    "lockout",
	} {
		_, err := Parse([]byte(validConfig+bad), "/etc/dpsql")
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", bad, err, key)
		}
	}
}
