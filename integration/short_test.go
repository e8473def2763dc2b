package integration

import "testing"

// fullRunOnly skips t in the quick lane (go test -short), which must stay
// within about two minutes on a quiet 2-core machine for the whole
// repository: there the integration package keeps one session of the Go
// driver over the demo, the isolation and bypass tests and one reuse test,
// and leaves the other clients (JVM, Python, the mysql client), the BI-tool
// replay, the floods, the resource attacks and the rest of the reuse tests
// to the full run (go test -count=1 -timeout 60m ./integration ./..., what .ci/run runs).
func fullRunOnly(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the full run's end-to-end test (go test -count=1 -timeout 60m ./integration ./...)")
	}
}

// externalClient skips t in the quick lane when it drives a client program
// (a JVM with Connector/J, Python with pandas, Node's mysql2, the mysql
// command line client): each starts a process (a JVM compiles its harness
// and takes seconds of CPU), and the quick lane keeps go-sql-driver
// sessions only; the full run drives them all.
func externalClient(t *testing.T, name string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s is driven in the full run (go test -count=1 -timeout 60m ./integration ./...)", name)
	}
}
