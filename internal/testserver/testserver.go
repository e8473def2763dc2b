// Package testserver starts dpsql's servers for tests, in process, on a
// random loopback port, stopped when the test ends: the governed server
// from a configuration (Governed, GovernedYAML) and the MySQL-protocol
// server over an engine (Serve). Clients connect with package
// internal/testmysql (go-sql-driver connections, error numbers,
// certificates); engines without a server come from package engine.
package testserver

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	sqle "github.com/dolthub/go-mysql-server"

	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
)

// LedgerLockTimeout is the ledger lock wait of a governed server whose
// options set none: long enough for a restart on a loaded machine (the
// previous server's ledger is closed by its Shutdown), short enough that a
// test of a held lock fails fast.
const LedgerLockTimeout = time.Second

// ShutdownGrace is how long a test's server is given to stop at the end
// of the test.
const ShutdownGrace = 2 * time.Second

// Listen returns a listener on a free loopback port, closed when the test
// ends (closing it again is harmless).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// Governed starts a governed server with opts (Config required) on a
// random loopback port, shut down when the test ends (a test may shut it
// down earlier, e.g. to restart it on the same data directory).
func Governed(t testing.TB, opts server.GovernedOptions) *server.Governed {
	t.Helper()
	s, err := TryGoverned(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TryGoverned is Governed returning NewGoverned's error instead of failing
// the test (for tests of configurations the server refuses).
func TryGoverned(t testing.TB, opts server.GovernedOptions) (*server.Governed, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	opts.Listener = ln
	if opts.LedgerLockTimeout == 0 {
		opts.LedgerLockTimeout = LedgerLockTimeout
	}
	s, err := server.NewGoverned(opts)
	if err != nil {
		ln.Close()
		return nil, err
	}
	go s.Serve()
	t.Cleanup(func() { s.Shutdown(ShutdownGrace) })
	return s, nil
}

// Load loads the configuration at path, failing the test on error.
func Load(t testing.TB, path string) *config.Config {
	t.Helper()
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// GovernedYAML writes cfg as dir/dpsql.yaml (relative paths in it are
// then relative to dir), loads it and starts it as Governed does, with the
// other options of opts, if given.
func GovernedYAML(t testing.TB, dir, cfg string, opts ...server.GovernedOptions) *server.Governed {
	t.Helper()
	path := filepath.Join(dir, "dpsql.yaml")
	testmysql.WriteFile(t, path, cfg)
	var o server.GovernedOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Config = Load(t, path)
	return Governed(t, o)
}

// Serve serves e over the MySQL protocol with cfg (its Listener is set)
// on a random loopback port until the test ends, then closes e too, and
// returns the server.
func Serve(t testing.TB, e *sqle.Engine, cfg server.ServerConfig) *server.Server {
	t.Helper()
	cfg.Listener = Listen(t)
	s, err := server.NewServer(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() {
		s.Shutdown(ShutdownGrace)
		e.Close()
	})
	return s
}

// HashPassword returns the configuration's password_hash of password
// under plugin (config.NativePassword or config.CachingSha2Password).
func HashPassword(t testing.TB, plugin, password string) string {
	t.Helper()
	h, err := config.HashPassword(plugin, password)
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// AccountsYAML is the end of a test configuration: limits.max_budget_delta
// 0.5, the administrator "admin" and the analyst "analyst" (both on
// mysql_native_password) with the given passwords, and the analyst's
// budget (ε, δ) on database db.
func AccountsYAML(t testing.TB, adminPassword, analystPassword, db string, epsilon, delta float64) string {
	t.Helper()
	return fmt.Sprintf(`limits:
  max_budget_delta: 0.5
accounts:
  admins:
    - {user: admin, password_hash: '%s'}
  analysts:
    - user: analyst
      password_hash: '%s'
      budgets:
        - {database: %s, epsilon: %g, delta: %g}
`, HashPassword(t, config.NativePassword, adminPassword), HashPassword(t, config.NativePassword, analystPassword), db, epsilon, delta)
}
