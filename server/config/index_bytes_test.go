package config

import "testing"

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
