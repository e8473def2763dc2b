package integration

import (
	"bufio"
	"context"
	dbsql "database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server/config"
)

// The resource suite's server: the test binary serving a generated
// configuration in a subprocess (TestMain, envServeConfig) under a memory
// limit, so that an attack that exhausts memory or crashes the process
// ends the subprocess and not the test.
//
// The memory limit is two-fold: GOMEMLIMIT (the Go collector works harder
// as the heap nears it) and a hard cap on the address space, RLIMIT_AS,
// set by util-linux prlimit(1) (or `ulimit -v` in sh when prlimit is
// missing) on the subprocess's command line. A process beyond the hard cap
// gets ENOMEM from mmap and the Go runtime ends it ("fatal error: out of
// memory"), as the kernel's OOM killer would under a cgroup limit. A
// cgroup would bound the resident set instead of the address space, but
// creating one needs root and a writable cgroup hierarchy, which CI
// machines and developer containers rarely give; RLIMIT_AS needs nothing.

const (
	// resMemLimit is the subprocess's GOMEMLIMIT.
	resMemLimit = "384MiB"
	// resAddressSpace is its RLIMIT_AS: the idle server's address space is
	// about 1.7 GiB (VmPeak, mostly the Go runtime's reservations), so the
	// cap leaves about 1.3 GiB for what attacks allocate.
	resAddressSpace = 3 << 30
	// resUsers × resRowsPerUser rows in the protected table hx.events.
	resUsers       = 20_000
	resRowsPerUser = 10
	// resPublicRows rows in the public table hx.pub.
	resPublicRows = 2_000
)

// Passwords of the resource suite's accounts: two analysts (the attacker
// mallory and the well-behaved alice), five filler analysts for the
// connection caps, and the administrator.
const (
	malloryPassword = "mallory-pw-0"
	alicePassword   = "alice-pw-0"
)

// resLimits are the limits: section of the suite's configuration (YAML, in
// the limits: mapping); each test states the values it relies on.
type resLimits struct {
	MaxExecutionTime        time.Duration
	MaxStatementsPerAccount int
	MaxConnections          int
	AdminConnections        int
	MaxConnsPerAccount      int
	HandshakeTimeout        time.Duration
	MaxPendingHandshakes    int
}

func (l resLimits) yaml() string {
	var b strings.Builder
	b.WriteString("limits:\n  max_budget_delta: 0.5\n")
	if l.MaxExecutionTime > 0 {
		fmt.Fprintf(&b, "  max_execution_time: %s\n", l.MaxExecutionTime)
	}
	if l.MaxStatementsPerAccount > 0 {
		fmt.Fprintf(&b, "  max_statements_per_account: %d\n", l.MaxStatementsPerAccount)
	}
	if l.MaxConnections > 0 {
		fmt.Fprintf(&b, "  max_connections: %d\n", l.MaxConnections)
	}
	if l.AdminConnections > 0 {
		fmt.Fprintf(&b, "  admin_connections: %d\n", l.AdminConnections)
	}
	if l.MaxConnsPerAccount > 0 {
		fmt.Fprintf(&b, "  max_connections_per_account: %d\n", l.MaxConnsPerAccount)
	}
	if l.HandshakeTimeout > 0 {
		fmt.Fprintf(&b, "  handshake_timeout: %s\n", l.HandshakeTimeout)
	}
	if l.MaxPendingHandshakes > 0 {
		fmt.Fprintf(&b, "  max_pending_handshakes: %d\n", l.MaxPendingHandshakes)
	}
	return b.String()
}

// resServer is a governed server subprocess of the resource suite.
type resServer struct {
	cmd     *exec.Cmd
	addr    string
	limits  resLimits
	admin   clients.Target
	alice   clients.Target
	mallory clients.Target

	mu      sync.Mutex
	stderr  strings.Builder
	exited  chan struct{} // closed when the process has exited
	waitErr error
}

func (s *resServer) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// tail returns the last n bytes of the server's output.
func (s *resServer) tail(n int) string {
	out := s.output()
	if len(out) > n {
		out = "…" + out[len(out)-n:]
	}
	return out
}

// exitedWith reports whether the process has exited, and how.
func (s *resServer) exitedWith() (bool, string) {
	select {
	case <-s.exited:
		return true, fmt.Sprint(s.waitErr)
	default:
		return false, ""
	}
}

// settle waits up to d for the process to exit, so that a connection
// broken by the process's end is reported as that end.
func (s *resServer) settle(d time.Duration) {
	select {
	case <-s.exited:
	case <-time.After(d):
	}
}

// requireAlive fails the test when the server process has exited, with
// how it ended (crashReport).
func (s *resServer) requireAlive(t testing.TB) {
	t.Helper()
	if gone, how := s.exitedWith(); gone {
		t.Fatalf("the server process exited (%s):\n%s", how, s.crashReport())
	}
}

// crashReport returns the Go fatal error or panic in the server's output
// and the function frames of the goroutine that raised it (without
// arguments and file lines), or the end of the output when there is none.
func (s *resServer) crashReport() string {
	lines := strings.Split(s.output(), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime: out of memory") {
			start = i
			break
		}
	}
	if start < 0 {
		return s.tail(2000)
	}
	var b strings.Builder
	frames := 0
	for _, l := range lines[start:] {
		switch {
		case strings.HasPrefix(l, "\t"), l == "":
			continue
		case strings.HasPrefix(l, "goroutine "):
			if frames > 0 {
				return b.String()
			}
			b.WriteString(l + "\n")
		default:
			if i := strings.LastIndex(l, "("); i > 0 && strings.Contains(l[:i], ".") && !strings.HasPrefix(l, "fatal") && !strings.HasPrefix(l, "runtime: out") {
				l = l[:i] + "(…)"
				frames++
				if frames > 25 {
					return b.String() + "…\n"
				}
			}
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// memory returns the server's resident set and its peak (VmRSS, VmHWM) in
// MiB, from /proc.
func (s *resServer) memory() (rss, peak float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1, -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return rss, peak
}

// resetPeak resets the server's peak resident set (Linux clear_refs 5), so
// that memory() reports the peak since this call; false when the kernel
// refuses.
func (s *resServer) resetPeak() bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0) == nil
}

// memoryCapCommand returns the command line that runs argv under the
// address-space cap, or an error naming the missing tool.
func memoryCapCommand(argv []string) ([]string, error) {
	if p, err := exec.LookPath("prlimit"); err == nil {
		return append([]string{p, fmt.Sprintf("--as=%d", resAddressSpace), "--"}, argv...), nil
	}
	if sh, err := exec.LookPath("sh"); err == nil {
		q := make([]string, len(argv))
		for i, a := range argv {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		return []string{sh, "-c", fmt.Sprintf("ulimit -v %d && exec %s", resAddressSpace>>10, strings.Join(q, " "))}, nil
	}
	return nil, fmt.Errorf("neither prlimit (util-linux) nor sh is on PATH: cannot cap the server's memory")
}

// needMemoryCap skips the test (fails it under DPSQL_CI=1) when the
// memory cap cannot be applied.
func needMemoryCap(t testing.TB) {
	t.Helper()
	if _, err := memoryCapCommand([]string{"true"}); err != nil {
		if testenv.CI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

var (
	resDataOnce sync.Once
	resDataDir  string
	resDataErr  error
)

// resData writes (once per test binary) the suite's tables: the protected
// events(user_id, item, note) — resUsers users with resRowsPerUser rows,
// items among 300 shared words or unique to the user, notes of common
// words — and the public pub(id, s).
func resData(t testing.TB) string {
	t.Helper()
	resDataOnce.Do(func() {
		resDataDir, resDataErr = os.MkdirTemp("", "dpsql-res-*")
		if resDataErr != nil {
			return
		}
		var b strings.Builder
		for u := range resUsers {
			for k := range resRowsPerUser {
				item := fmt.Sprintf("w%d", (u*7+k*13)%300)
				if k == 0 {
					item = fmt.Sprintf("own%d", u)
				}
				fmt.Fprintf(&b, "%d\t%s\tthe w%d and w%d went to w%d\n", u, item, (u+k)%40, (u*k)%40, k)
			}
		}
		if resDataErr = os.WriteFile(filepath.Join(resDataDir, "events.tsv"), []byte(b.String()), 0o600); resDataErr != nil {
			return
		}
		b.Reset()
		for i := range resPublicRows {
			fmt.Fprintf(&b, "%d\tpublic text %d %s\n", i, i%97, strings.Repeat("ab", i%50))
		}
		resDataErr = os.WriteFile(filepath.Join(resDataDir, "pub.tsv"), []byte(b.String()), 0o600)
	})
	if resDataErr != nil {
		t.Fatal(resDataErr)
	}
	return resDataDir
}

// startResServer starts the suite's server as a subprocess under the
// memory limit, with the given limits, and waits until it listens. The
// configuration: database hx with the protected events and the public
// pub; the administrator admin; the analysts mallory (the attacker) and
// alice (well-behaved), each with an ample budget and per-release caps of
// ε = 10, δ = 1e-3; the analysts filler0…filler4 (small budgets) for the
// connection caps.
func startResServer(t testing.TB, lim resLimits) *resServer {
	t.Helper()
	needMemoryCap(t)
	data := resData(t)
	dir := t.TempDir()
	var fillers strings.Builder
	for i := range 5 {
		fmt.Fprintf(&fillers, "    - user: filler%d\n      password_hash: '%s'\n      budgets:\n        - {database: hx, epsilon: 1, delta: 1e-6}\n",
			i, testserver.HashPassword(t, config.NativePassword, fmt.Sprintf("filler-pw-%d", i)))
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
datasets:
  - database: hx
    table: events
    file: %s
    columns:
      - {name: user_id, type: BIGINT}
      - {name: item, type: VARCHAR(64)}
      - {name: note, type: TEXT}
    privacy_unit: user_id
  - database: hx
    table: pub
    file: %s
    columns:
      - {name: id, type: BIGINT}
      - {name: s, type: TEXT}
    public: true
accounts:
  admins:
    - {user: admin, password_hash: '%s'}
  analysts:
    - user: mallory
      password_hash: '%s'
      budgets:
        - {database: hx, epsilon: 1000000, delta: 0.5, max_release: {epsilon: 10, delta: 1e-3}}
    - user: alice
      password_hash: '%s'
      budgets:
        - {database: hx, epsilon: 1000000, delta: 0.5, max_release: {epsilon: 10, delta: 1e-3}}
%s%s`, filepath.Join(data, "events.tsv"), filepath.Join(data, "pub.tsv"),
		testserver.HashPassword(t, config.NativePassword, adminPassword),
		testserver.HashPassword(t, config.NativePassword, malloryPassword),
		testserver.HashPassword(t, config.NativePassword, alicePassword),
		fillers.String(), lim.yaml())
	cfgPath := filepath.Join(dir, "dpsql.yaml")
	testmysql.WriteFile(t, cfgPath, cfg)

	argv, err := memoryCapCommand([]string{os.Args[0], "-test.run=^$"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), envServeConfig+"="+cfgPath, "GOMEMLIMIT="+resMemLimit)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &resServer{cmd: cmd, limits: lim, exited: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		sent := false
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := subprocessListenRe.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addrc <- m[1]
				sent = true
			}
		}
		if !sent {
			close(addrc)
		}
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		if gone, _ := s.exitedWith(); !gone {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-s.exited
			}
		}
	})
	select {
	case a, ok := <-addrc:
		if !ok {
			<-s.exited
			t.Fatalf("the server did not start (%v):\n%s", s.waitErr, s.output())
		}
		s.addr = a
	case <-time.After(90 * time.Second):
		t.Fatalf("the server did not start in time:\n%s", s.output())
	}
	host, port := splitAddr(t, s.addr)
	target := func(user, pw string) clients.Target {
		return clients.Target{Host: host, Port: port, User: user, Password: pw, Database: "hx"}
	}
	s.admin = target("admin", adminPassword)
	s.alice = target("alice", alicePassword)
	s.mallory = target("mallory", malloryPassword)
	return s
}

// filler returns the target of filler analyst i.
func (s *resServer) filler(i int) clients.Target {
	t := s.alice
	t.User, t.Password = fmt.Sprintf("filler%d", i), fmt.Sprintf("filler-pw-%d", i)
	return t
}

// conn opens one connection of target (its pool closed when the test
// ends).
func resConn(t testing.TB, target clients.Target) *dbsql.Conn {
	t.Helper()
	db := openGo(t, target)
	db.SetMaxIdleConns(0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("%s cannot connect: %v", target.User, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// queryAll runs q on c and reads every row, with a client-side bound.
func queryAll(ctx context.Context, c *dbsql.Conn, q string) (clients.Result, error) {
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		return clients.Result{}, err
	}
	return clients.ScanRows(rows)
}

// connectionID returns the server's id of connection c.
func connectionID(t testing.TB, c *dbsql.Conn) int64 {
	t.Helper()
	var id int64
	if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}
