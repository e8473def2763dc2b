// Package testdb starts real database servers for tests: MariaDB (Debian's
// mariadb-server) and PostgreSQL (Debian's postgresql), each in a temporary
// data directory, listening on a free loopback port, and stopped when the
// test ends (and killed with the test process if it dies: Pdeathsig).
// Without the server installed the test is skipped, or fails under CI
// (DPSQL_CI, see package testenv); .ci/run installs both.
package testdb

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // "mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // "pgx"

	"github.com/dpsql/dpsql/internal/testenv"
)

// Password is the password of the test account of every server.
const Password = "s3cret-Pa55word"

// Server is a running database server.
type Server struct {
	// Driver is "mysql" or "postgres" (config.Source.Driver).
	Driver string
	// DSN logs in as the test account (user dpsql, Password) to database
	// shop over TCP.
	DSN string
	// Addr is host:port.
	Addr string
	// Admin is a connection pool with every privilege, for the test's
	// setup (CREATE TABLE, INSERT…) in database shop.
	Admin *dbsql.DB
	// AdminDSN is Admin's DSN (the superuser, database shop).
	AdminDSN string

	cmd  *exec.Cmd
	done chan struct{}
	stop func()
}

// BadPasswordDSN returns the DSN with a wrong password.
func (s *Server) BadPasswordDSN() string {
	return strings.Replace(s.DSN, Password, "wrong-"+Password, 1)
}

// Exec runs statements as the administrator, failing the test on error.
func (s *Server) Exec(t testing.TB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := s.Admin.Exec(q); err != nil {
			t.Fatalf("%s: %s: %v", s.Driver, q, err)
		}
	}
}

// Stop stops the server and waits for it (idempotent).
func (s *Server) Stop() {
	s.stop()
	<-s.done
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func find(t testing.TB, what string, paths ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: starts a %s server", what)
	}
	for _, p := range paths {
		if strings.ContainsRune(p, '/') {
			if _, err := os.Stat(p); err == nil {
				return p
			}
			continue
		}
		if lp, err := exec.LookPath(p); err == nil {
			return lp
		}
	}
	msg := fmt.Sprintf("%s not installed (none of %s); apt-get install mariadb-server postgresql (.ci/run installs them)", what, strings.Join(paths, ", "))
	if testenv.CI() {
		t.Fatal("required under CI: " + msg)
	}
	t.Skip(msg)
	return ""
}

// run starts cmd, logging to logPath, and arranges its end.
func (s *Server) run(t testing.TB, cmd *exec.Cmd, logPath string, sig os.Signal) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	// Its own process group, so Kill reaches PostgreSQL's backends too: a
	// backend whose postmaster died keeps streaming a query's rows.
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(sig)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	}
	t.Cleanup(s.Stop)
}

// Kill stops the server at once (SIGKILL), as a crash would.
// It kills the server's whole process group: a PostgreSQL backend outlives
// its postmaster until its next wait, and would finish a running query.
func (s *Server) Kill() {
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

func waitReady(t testing.TB, s *Server, db *dbsql.DB, logPath string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s server exited at start: %s", s.Driver, tail(log))
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s server not ready after 60s: %v\n%s", s.Driver, err, tail(log))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// MariaDB starts a MariaDB server (as root: mariadbd --user=root) with a
// database shop and an account dpsql@'%' identified by Password that may
// read it.
func MariaDB(t testing.TB) *Server {
	t.Helper()
	mariadbd := find(t, "MariaDB", "/usr/sbin/mariadbd", "mariadbd", "/usr/sbin/mysqld")
	install := find(t, "MariaDB", "mariadb-install-db", "mysql_install_db")
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	sock := filepath.Join(dir, "mysqld.sock")
	out, err := exec.Command(install, "--no-defaults", "--datadir="+data, "--user=root", "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve").CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", install, err, tail(out))
	}
	port := freePort(t)
	s := &Server{Driver: "mysql", Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	logPath := filepath.Join(dir, "mariadbd.log")
	s.run(t, exec.Command(mariadbd, "--no-defaults", "--datadir="+data, "--user=root", "--socket="+sock,
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-name-resolve", "--pid-file="+filepath.Join(dir, "mariadbd.pid"),
		"--innodb-buffer-pool-size=32M", "--skip-log-bin", "--innodb-flush-log-at-trx-commit=0",
		// Its own temporary directory: servers of other sandboxes sharing
		// /tmp (their own PID namespaces) name temporary tables alike
		// (#sql-temptable-PID-…) and delete each other's.
		"--tmpdir="+dir), logPath, syscall.SIGTERM)
	root, err := dbsql.Open("mysql", "root@unix("+sock+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	waitReady(t, s, root, logPath)
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE USER 'dpsql'@'%' IDENTIFIED BY '" + Password + "'",
		"GRANT SELECT ON shop.* TO 'dpsql'@'%'",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("MariaDB: %s: %v", q, err)
		}
	}
	s.AdminDSN = "root@unix(" + sock + ")/shop"
	admin, err := dbsql.Open("mysql", s.AdminDSN+"?multiStatements=true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	s.Admin = admin
	s.DSN = fmt.Sprintf("dpsql:%s@tcp(%s)/shop", Password, s.Addr)
	return s
}

// PostgreSQL starts a PostgreSQL server (as the postgres user, or nobody:
// PostgreSQL refuses to run as root) with a database shop and a role dpsql
// with Password that may read it (password authentication over TCP).
func PostgreSQL(t testing.TB) *Server {
	t.Helper()
	bin := "/usr/lib/postgresql/15/bin"
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres"); len(m) > 0 {
		bin = filepath.Dir(m[len(m)-1])
	}
	postgres := find(t, "PostgreSQL", filepath.Join(bin, "postgres"), "postgres")
	initdb := find(t, "PostgreSQL", filepath.Join(bin, "initdb"), "initdb")

	// A directory the server's user owns, outside the test's 0700 temp
	// directory.
	dir, err := os.MkdirTemp("", "dpsql-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			t.Fatalf("PostgreSQL refuses to run as root, and there is no postgres or nobody user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	asUser := func(c *exec.Cmd) *exec.Cmd {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		c.Dir = dir
		return c
	}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte("postgres-"+Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		os.Chown(pwfile, int(cred.Uid), int(cred.Gid))
	}
	data := filepath.Join(dir, "data")
	out, err := asUser(exec.Command(initdb, "-D", data, "-U", "postgres", "--pwfile="+pwfile, "-E", "UTF8", "--no-sync",
		"--auth-local=trust", "--auth-host=scram-sha-256")).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", initdb, err, tail(out))
	}
	port := freePort(t)
	s := &Server{Driver: "postgres", Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	logPath := filepath.Join(dir, "postgres.log")
	s.run(t, asUser(exec.Command(postgres, "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "shared_buffers=16MB", "-c", "max_connections=20")), logPath, syscall.SIGINT)
	super := fmt.Sprintf("postgres://postgres:%s@%s/postgres?sslmode=disable", "postgres-"+Password, s.Addr)
	root, err := dbsql.Open("pgx", super)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	waitReady(t, s, root, logPath)
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE ROLE dpsql LOGIN PASSWORD '" + Password + "'",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("PostgreSQL: %s: %v", q, err)
		}
	}
	s.AdminDSN = strings.Replace(super, "/postgres?", "/shop?", 1)
	admin, err := dbsql.Open("pgx", s.AdminDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	s.Admin = admin
	// Tables created later are readable by dpsql.
	s.Exec(t, "GRANT USAGE ON SCHEMA public TO dpsql", "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO dpsql")
	s.DSN = fmt.Sprintf("postgres://dpsql:%s@%s/shop?sslmode=disable", Password, s.Addr)
	return s
}
