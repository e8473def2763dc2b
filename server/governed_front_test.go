package server_test

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	gomysql "github.com/go-sql-driver/mysql"
)

// TestLoginRefusalSaysWhy: a refused login gets MySQL's "Access denied for
// user 'u'@'host' (using password: YES)" and, on a connection without TLS
// to a server with caching_sha2_password accounts, the reason such accounts
// cannot log in there — the same message, word for word but the user name,
// for an unknown user, a wrong password and the sha2 account itself, so
// that it tells nothing about which accounts exist or how they log in.
func TestLoginRefusalSaysWhy(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	msg := func(user, pass string, useTLS bool) string {
		t.Helper()
		err := d.login(s.Addr(), user, pass, useTLS)
		if testmysql.ErrNo(err) != 1045 {
			t.Fatalf("%s: %v, want 1045", user, err)
		}
		return strings.Replace(err.(*gomysql.MySQLError).Message, "'"+user+"'", "'USER'", 1)
	}
	carol := msg("carol", carolPass, false)
	if !strings.Contains(carol, "Access denied for user 'USER'@'127.0.0.1' (using password: YES)") ||
		!strings.Contains(carol, "caching_sha2_password log in only over TLS") {
		t.Errorf("carol without TLS: %q", carol)
	}
	for _, c := range []struct{ user, pass string }{{"mallory", "x"}, {"alice", "wrong"}, {"carol", "wrong"}} {
		if got := msg(c.user, c.pass, false); got != carol {
			t.Errorf("%s/%s without TLS: %q, want the same message as carol's %q", c.user, c.pass, got, carol)
		}
	}
	// Over TLS the note does not apply.
	if got := msg("mallory", "x", true); strings.Contains(got, "TLS") || !strings.Contains(got, "(using password: YES)") {
		t.Errorf("over TLS: %q", got)
	}
	if got := msg("mallory", "", false); !strings.Contains(got, "(using password: NO)") {
		t.Errorf("no password: %q", got)
	}
}

// TestPortInUseBeforeLoading: a server whose address is taken fails before
// it opens the ledger (and so before it loads any data, which comes after),
// with an error that wraps EADDRINUSE and says what is wrong.
func TestPortInUseBeforeLoading(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	d := newDeployment(t, false)
	cfg, err := config.Load(d.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = taken.Addr().String()
	start := time.Now()
	_, err = server.NewGoverned(server.GovernedOptions{Config: cfg})
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), taken.Addr().String()) || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("port in use: %v", err)
	}
	if _, statErr := os.Stat(cfg.DataDir + "/ledger.db"); statErr == nil {
		t.Error("the ledger was opened before the address was checked")
	}
	t.Logf("refused in %v: %v", time.Since(start), err)
}

// TestMemoryLimitBelowData: a server whose loaded data already fills most
// of limits.max_memory_bytes says so when it starts (its memory guard would
// stop every analyst statement).
func TestMemoryLimitBelowData(t *testing.T) {
	d := newDeployment(t, false)
	cfg, err := config.Load(d.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	cfg.Limits.MaxMemoryBytes = 1 << 20
	var log strings.Builder
	s, err := server.NewGoverned(server.GovernedOptions{Config: cfg, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(time.Second)
	if !strings.Contains(log.String(), "WARNING: the loaded data already takes") || !strings.Contains(log.String(), "limits.max_memory_bytes (1 MiB)") {
		t.Errorf("no warning in the start log:\n%s", log.String())
	}
}
