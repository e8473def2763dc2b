package server_test

import (
	"os"
	"testing"
)

// appendConfig appends YAML at the top level of the deployment's
// configuration.
func (d *deployment) appendConfig(t *testing.T, yaml string) {
	t.Helper()
	f, err := os.OpenFile(d.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(yaml); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseIndexBytesNoneServes: limits.release_index_bytes: -1 starts a
// server without release indexes (it refused to start): releases scan, and
// no index memory is ever held.
func TestReleaseIndexBytesNoneServes(t *testing.T) {
	d := newDeployment(t, false)
	d.appendConfig(t, "limits:\n  release_index_bytes: -1\n")
	s := d.start(t)
	alice := d.connect(t, s.Addr(), "alice", alicePass, false)
	for range 2 {
		if _, err := releaseURLs(alice); err != nil {
			t.Fatalf("release without indexes: %v", err)
		}
	}
	if n := s.ReleaseIndexBytes(); n != 0 {
		t.Errorf("release indexes hold %d bytes with release_index_bytes: -1", n)
	}
}
