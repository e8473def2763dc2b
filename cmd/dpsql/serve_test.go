package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/ledger"
)

// TestMain lets tests run this package's binary as the dpsql command in a
// subprocess (DPSQL_TEST_MAIN=1), for signals and SIGKILL.
func TestMain(m *testing.M) {
	if os.Getenv("DPSQL_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

var listenRe = regexp.MustCompile(`listening on (\S+:\d+)`)

// TestServeEmbeddedDefault: `dpsql serve` without a configuration serves
// the demo on a loopback address, prints the analyst's and the admin's
// random passwords exactly once, names its data directory, and the
// accounts work: the analyst gets DP releases over the protected demo
// tables (charged), the admin is a localhost account. A non-loopback
// address is refused.
func TestServeEmbeddedDefault(t *testing.T) {
	dataDir := t.TempDir()
	pr, pw := io.Pipe()
	serveStop = make(chan struct{})
	defer func() { serveStop = nil }()
	done := make(chan int, 1)
	var out bytes.Buffer
	go func() {
		done <- run([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir}, io.Discard, io.MultiWriter(pw, &syncWriter{w: &out}))
		pw.Close()
	}()
	addr, banner := waitListening(t, pr)
	go io.Copy(io.Discard, pr)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("listening on %s", addr)
	}
	cred := regexp.MustCompile(`(analyst|admin) account: +user (\S+), password (\S+)`)
	pass := map[string]string{}
	for _, m := range cred.FindAllStringSubmatch(banner, -1) {
		pass[m[2]] = m[3]
	}
	if len(pass) != 2 || pass["analyst"] == "" || pass["admin"] == "" {
		t.Fatalf("credentials not printed:\n%s", banner)
	}
	if !strings.Contains(banner, dataDir) || !strings.Contains(banner, "SYNTHETIC") {
		t.Errorf("banner does not name the data directory or label the data:\n%s", banner)
	}

	analyst := openAs(t, addr, "analyst", pass["analyst"], "")
	var db string
	if err := analyst.QueryRow("SELECT DATABASE()").Scan(&db); err != nil || db != "demo" {
		t.Errorf("analyst's default database %q, %v", db, err)
	}
	rows, err := analyst.Query("SELECT DISTINCT word FROM words")
	if err != nil {
		t.Fatalf("release: %v", err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if n < 50 {
		t.Errorf("%d words released", n)
	}
	var spent float64
	var releases int
	if err := analyst.QueryRow("SELECT basic_epsilon, releases FROM DP_BUDGET() WHERE database_name = 'demo'").Scan(&spent, &releases); err != nil || spent != 1 || releases != 1 {
		t.Errorf("DP_BUDGET: spent %v in %d releases, %v", spent, releases, err)
	}
	var c int
	if err := analyst.QueryRow("SELECT user_id FROM words LIMIT 1").Scan(&c); testmysql.ErrNo(err) != 1142 {
		t.Errorf("raw read as analyst: %v", err)
	}
	admin := openAs(t, addr, "admin", pass["admin"], "demo")
	var host string
	if err := admin.QueryRow("SELECT host FROM mysql.user WHERE user = 'admin'").Scan(&host); err != nil || host != "localhost" {
		t.Errorf("admin account host %q, %v", host, err)
	}
	if err := admin.QueryRow("SELECT COUNT(*) FROM words").Scan(&c); err != nil || c == 0 {
		t.Errorf("admin COUNT(*): %d, %v", c, err)
	}
	admin.Close()
	analyst.Close()
	close(serveStop)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d", code)
		}
	case <-time.After(2 * time.Minute): // ends when it stops: generous for a loaded machine
		t.Fatal("serve did not stop within 2 minutes")
	}
	all := out.String()
	for user, p := range pass {
		if k := strings.Count(all, p); k != 1 {
			t.Errorf("%s's password printed %d times", user, k)
		}
	}

	code, _, errOut := runCmd(t, "serve", "--addr", "0.0.0.0:0", "--data-dir", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "loopback") {
		t.Errorf("non-loopback address: exit %d, %s", code, errOut)
	}
	code, _, errOut = runCmd(t, "serve", "--config", "x.yaml", "--load", "t=x.tsv")
	if code != 2 || !strings.Contains(errOut, "--ungoverned") {
		t.Errorf("--load without --ungoverned: exit %d, %s", code, errOut)
	}
}

// TestLedgerKilledMidRelease runs the embedded server in a subprocess while
// four connections release as fast as they can, kills it with SIGKILL,
// and checks that the ledger is consistent and has charged at least every
// release a client received (charged ≥ released; a crash may lose budget,
// never privacy); a restarted server serves the same balance. It then
// stops the restarted server with SIGTERM while a statement runs: the
// statement finishes, the process exits 0 and releases the ledger.
func TestLedgerKilledMidRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a fault test (a server process killed mid-release, restarted and stopped)")
	}
	dataDir := t.TempDir()
	const apw, dpw = "analyst-test-pw", "admin-test-pw"
	srv := startServeProcess(t, dataDir, apw, dpw)

	var (
		mu       sync.Mutex
		received int
		endErrs  []error
		wg       sync.WaitGroup
	)
	db := openAs(t, srv.addr, "analyst", apw, "demo")
	db.SetMaxOpenConns(4)
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(context.Background())
			if err != nil {
				mu.Lock()
				endErrs = append(endErrs, err)
				mu.Unlock()
				return
			}
			defer conn.Close()
			// dp_reuse = OFF: every statement a new, charged release (the
			// same statement would otherwise be answered from the first).
			if _, err := conn.ExecContext(context.Background(), "SET dp_epsilon = 0.01, dp_reuse = OFF"); err != nil {
				mu.Lock()
				endErrs = append(endErrs, err)
				mu.Unlock()
				return
			}
			for {
				rows, err := conn.QueryContext(context.Background(), "SELECT DISTINCT word FROM words")
				if err == nil {
					for rows.Next() {
					}
					err = rows.Err()
					rows.Close()
				}
				mu.Lock()
				if err != nil {
					endErrs = append(endErrs, err)
					mu.Unlock()
					return
				}
				received++
				mu.Unlock()
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	// Let releases run, then kill the server in the middle of them. The
	// deadline is for a loaded machine (a release took over 20 s with the
	// load average at 30); the wait ends as soon as 8 releases are in, or
	// every client has stopped.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		r, ended := received, len(endErrs)
		mu.Unlock()
		if r >= 8 || ended == 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.cmd.Wait()
	close(stop)
	wg.Wait()
	db.Close()
	if received == 0 {
		t.Fatalf("no release completed before the kill; errors: %v", endErrs)
	}
	t.Logf("%d releases received before SIGKILL; the connections ended with: %v", received, endErrs)

	l, err := ledger.Open(dataDir, ledger.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("ledger after SIGKILL: %v", err)
	}
	if err := l.Verify(); err != nil {
		t.Errorf("ledger after SIGKILL: %v", err)
	}
	bal, err := l.Balance(server.DemoAnalyst, "demo")
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	if bal.Releases < int64(received) {
		t.Errorf("charged %d releases but clients received %d", bal.Releases, received)
	}
	if math.Abs(bal.Basic.Epsilon-0.01*float64(bal.Releases)) > 1e-9 {
		t.Errorf("spent ε=%v for %d releases of ε=0.01", bal.Basic.Epsilon, bal.Releases)
	}
	t.Logf("charged %d releases (spent ε=%v) for %d received", bal.Releases, bal.Basic.Epsilon, received)

	// Restart on the same data directory.
	srv2 := startServeProcess(t, dataDir, apw, dpw)
	analyst := openAs(t, srv2.addr, "analyst", apw, "demo")
	var releases int64
	if err := analyst.QueryRow("SELECT releases FROM DP_BUDGET()").Scan(&releases); err != nil || releases != bal.Releases {
		t.Errorf("after restart DP_BUDGET() shows %d releases (%v), the ledger %d", releases, err, bal.Releases)
	}
	analyst.Close()

	// SIGTERM while a statement runs: it finishes, the server exits 0.
	// The signal goes once the statement is seen running (a fixed pause
	// was too short on a loaded machine: SIGTERM came before the
	// statement's connection, which the stopping server then refused).
	admin := openAs(t, srv2.addr, "admin", dpw, "demo")
	watcher := openAs(t, srv2.addr, "admin", dpw, "demo")
	finished := make(chan error, 1)
	go func() {
		var x int
		finished <- admin.QueryRow("SELECT SLEEP(3) + 1").Scan(&x)
	}()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var running int
		err := watcher.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE 'SELECT SLEEP(3)%'").Scan(&running)
		if err == nil && running > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the statement was not seen running within 2 minutes (%v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	watcher.Close()
	if err := srv2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-finished; err != nil {
		t.Errorf("statement running at SIGTERM: %v", err)
	}
	if err := srv2.cmd.Wait(); err != nil {
		t.Errorf("server after SIGTERM: %v\n%s", err, srv2.stderr.String())
	}
	if !strings.Contains(srv2.stderr.String(), "ledger is closed") {
		t.Errorf("stderr after SIGTERM:\n%s", srv2.stderr.String())
	}
	admin.Close()
	l, err = ledger.Open(dataDir, ledger.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("ledger after SIGTERM: %v", err)
	}
	l.Close()
}

// serveProcess is `dpsql serve` running in a subprocess.
type serveProcess struct {
	cmd    *exec.Cmd
	addr   string
	stderr *testserver.Log
}

// startServeProcess runs this test binary as `dpsql serve` (embedded demo)
// on a random loopback port and waits until it listens.
func startServeProcess(t *testing.T, dataDir, analystPW, adminPW string) *serveProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--shutdown-timeout", "10s")
	cmd.Env = append(os.Environ(), "DPSQL_TEST_MAIN=1",
		server.EnvAnalystPassword+"="+analystPW, server.EnvAdminPassword+"="+adminPW)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	p := &serveProcess{cmd: cmd, stderr: &testserver.Log{}}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			fmt.Fprintln(p.stderr, sc.Text())
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addrc <- m[1]
				sent = true
			}
		}
		if !sent {
			close(addrc)
		}
	}()
	select {
	case a, ok := <-addrc:
		if !ok {
			t.Fatalf("server did not start:\n%s", p.stderr.String())
		}
		p.addr = a
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not start in time:\n%s", p.stderr.String())
	}
	return p
}

func waitListening(t *testing.T, r io.Reader) (addr, banner string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	var b strings.Builder
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
		if addr != "" && strings.HasPrefix(sc.Text(), "Stop with Ctrl-C") {
			return addr, b.String()
		}
	}
	t.Fatalf("server did not start:\n%s", b.String())
	return "", ""
}

func openAs(t *testing.T, addr, user, password, database string) *sql.DB {
	t.Helper()
	return testmysql.Connect(t, testmysql.Login{Addr: addr, User: user, Password: password, DB: database, Timeout: 10 * time.Second})
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
