package server_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testmysql"
)

// TestConnGuardTLS: a TLS connection is one of the guard's like any other.
// vitess replaces an accepted connection by a *tls.Conn when the client
// asks for TLS; the guard, which knew connections by the accepted one, did
// not recognise it after that: it never counted it against the connection
// limits, and its handshake timer closed it however long after it had
// authenticated (a TLS client lost its connection mid-session on a slow
// machine: "invalid connection").
func TestConnGuardTLS(t *testing.T) {
	d := newDeployment(t, true)
	f, err := os.OpenFile(d.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Long enough for a TLS handshake on a loaded machine (the timer also
	// runs while the client authenticates), short enough to wait past.
	const handshake = 2 * time.Second
	_, err = f.WriteString("limits:\n  handshake_timeout: 2s\n  max_connections_per_account: 1\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	s := d.start(t)
	db := d.connect(t, s.Addr(), "carol", carolPass, true)
	db.SetMaxOpenConns(2)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var one int
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("carol over TLS: %v", err)
	}

	// Counted: a second connection of the account is refused (1203).
	other := d.connect(t, s.Addr(), "carol", carolPass, true)
	if err := other.PingContext(ctx); testmysql.ErrNo(err) != 1203 {
		t.Errorf("a second TLS connection of an account limited to one: %v, want MySQL error 1203", err)
	}

	// Authenticated: the handshake timer leaves it alone. Waiting past the
	// timeout is the condition itself, not a measurement.
	time.Sleep(handshake + time.Second)
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Errorf("the TLS connection after the handshake timeout: %v", err)
	}
}
