package integration

import (
	"bufio"
	"context"
	dbsql "database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/governance"
	"github.com/dpsql/dpsql/server/ledger"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// envServeConfig makes the test binary a governed server for the
// configuration file it names (TestMain), so that a test can SIGKILL it.
const envServeConfig = "DPSQL_INTEGRATION_SERVE_CONFIG"

// serveSubprocess serves a configuration until SIGTERM/SIGINT (or SIGKILL),
// printing "listening on ADDR" on stderr once it accepts connections.
func serveSubprocess(path string) int {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := server.NewGoverned(server.GovernedOptions{Config: cfg, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		s.Shutdown(5 * time.Second)
	}()
	fmt.Fprintf(os.Stderr, "listening on %s\n", s.Addr())
	if err := s.Serve(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := s.Shutdown(5 * time.Second); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

var subprocessListenRe = regexp.MustCompile(`listening on (\S+:\d+)`)

// serverProcess is a governed server in a subprocess.
type serverProcess struct {
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	stderr strings.Builder
}

func (p *serverProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startServerProcess runs this test binary as a governed server for the
// configuration at cfgPath and waits until it listens.
func startServerProcess(t *testing.T, cfgPath string) *serverProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServeConfig+"="+cfgPath)
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
	p := &serverProcess{cmd: cmd}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := subprocessListenRe.FindStringSubmatch(sc.Text()); m != nil && !sent {
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
			t.Fatalf("server did not start:\n%s", p.output())
		}
		p.addr = a
	case <-time.After(90 * time.Second):
		t.Fatalf("server did not start in time:\n%s", p.output())
	}
	return p
}

// faultReleases are the releases the SIGKILL test sends on git_rails, each
// at ε = 0.25.
var faultReleases = []string{
	"SELECT DISTINCT LOWER(SUBSTRING_INDEX(message, ' ', 1)) AS first_word FROM commits",
	"SELECT DP_SET_UNION(LOWER(SUBSTRING_INDEX(message, ' ', 2)), user_id) AS released FROM commits",
	"SELECT ngram, n FROM DP_NGRAMS('rails.commits', 'message', 'user_id', 'epsilon=0.25, max_n=2')",
}

// TestFaultKilledMidRelease kills a governed server (the git_rails
// configuration: TLS, caching_sha2_password, a second analyst on
// mysql_native_password) with SIGKILL while four connections of two
// analysts obtain the three kinds of release, then checks the ledger: it
// verifies, every analyst was charged at least the releases received, the
// audit trail has one record per charge, each naming a statement that was
// sent at ε = 0.25; a restarted server shows the same balances and charges
// the next release once; SIGTERM then stops it cleanly. (TestLedger-
// KilledMidRelease in cmd/dpsql does the same for `dpsql serve`'s embedded
// demo and DISTINCT releases.)
func TestFaultKilledMidRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a fault test (kills a server process)")
	}
	dir := t.TempDir()
	cfgPath := writeRailsConfig(t, dir, extraAnalyst{"bob", "bob-pw", 100, 1e-3})
	// Every release charged: the test counts charges against releases
	// received, and repeats the same statements.
	appendFile(t, cfgPath, "reuse: {enabled: false}\n")
	srv := startServerProcess(t, cfgPath)
	host, port := splitAddr(t, srv.addr)
	rails := railsServer(nil, dir, host, port)
	analysts := map[string]clients.Target{"analyst": rails.analyst, "bob": rails.analystAs("bob", "bob-pw")}

	var (
		mu       sync.Mutex
		received = map[string]int64{}
		endErrs  []string
		wg       sync.WaitGroup
	)
	stop := make(chan struct{})
	for i := range 4 {
		user := []string{"analyst", "bob"}[i%2]
		db, err := clients.OpenGo(analysts[user])
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			conn, err := db.Conn(ctx)
			if err == nil {
				_, err = conn.ExecContext(ctx, "SET dp_epsilon = 0.25")
			}
			if err != nil {
				mu.Lock()
				endErrs = append(endErrs, err.Error())
				mu.Unlock()
				return
			}
			defer conn.Close()
			for k := i; ; k++ {
				rows, err := conn.QueryContext(ctx, faultReleases[k%len(faultReleases)])
				if err == nil {
					_, err = clients.ScanRows(rows)
				}
				mu.Lock()
				if err != nil {
					endErrs = append(endErrs, err.Error())
					mu.Unlock()
					return
				}
				received[user]++
				mu.Unlock()
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := received["analyst"] + received["bob"]
		mu.Unlock()
		if n >= 12 || time.Now().After(deadline) {
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
	t.Logf("received before SIGKILL: %v; the connections ended with: %q", received, endErrs)
	if received["analyst"]+received["bob"] == 0 {
		t.Fatal("no release completed before the kill")
	}

	l, err := ledger.Open(filepath.Join(dir, "data"), ledger.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("ledger after SIGKILL: %v", err)
	}
	if err := l.Verify(); err != nil {
		t.Errorf("ledger after SIGKILL: %v", err)
	}
	balances := map[string]ledger.Balance{}
	for user := range analysts {
		bal := ledgerBalance(t, l, user, "rails")
		balances[user] = bal
		recs, err := l.Audit(ledger.AuditFilter{Analyst: user})
		if err != nil {
			t.Fatal(err)
		}
		if bal.Releases < received[user] {
			t.Errorf("%s: charged %d releases but received %d", user, bal.Releases, received[user])
		}
		if int64(len(recs)) != bal.Releases || math.Abs(bal.Basic.Epsilon-0.25*float64(bal.Releases)) > 1e-9 {
			t.Errorf("%s: %d audit records for %d charges, spent ε=%v", user, len(recs), bal.Releases, bal.Basic.Epsilon)
		}
		for _, r := range recs {
			if r.Epsilon != 0.25 || !slices.ContainsFunc(faultReleases, func(q string) bool { return auditOf(r, q) }) {
				t.Errorf("%s: audit record %+v is not one of the releases sent", user, r)
			}
		}
		t.Logf("%s: charged %d releases (ε=%v) for %d received", user, bal.Releases, bal.Basic.Epsilon, received[user])
	}
	l.Close()

	// Restart on the same data directory: the same balances, and the next
	// release is charged once.
	srv2 := startServerProcess(t, cfgPath)
	host, port = splitAddr(t, srv2.addr)
	target := railsServer(nil, dir, host, port).analyst
	res := runClient(t, clients.GoDriver{}, target, []clients.Statement{
		clients.Query("SELECT releases, basic_epsilon FROM DP_BUDGET()"),
		clients.Query("SET dp_epsilon = 0.25"),
		clients.Query(faultReleases[0]),
		clients.Query("SELECT releases, basic_epsilon FROM DP_BUDGET()"),
	})
	for _, r := range res {
		if r.Error != nil {
			t.Fatalf("after restart: %v", r.Error)
		}
	}
	want0 := [][]string{{fmt.Sprint(balances["analyst"].Releases), fmt.Sprint(balances["analyst"].Basic.Epsilon)}}
	want1 := [][]string{{fmt.Sprint(balances["analyst"].Releases + 1), fmt.Sprint(balances["analyst"].Basic.Epsilon + 0.25)}}
	if got := res[0].Cells(); !slices.EqualFunc(got, want0, slices.Equal) {
		t.Errorf("after restart DP_BUDGET() = %q, the ledger had %q", got, want0)
	}
	if got := res[3].Cells(); !slices.EqualFunc(got, want1, slices.Equal) {
		t.Errorf("after one more release DP_BUDGET() = %q, want %q", got, want1)
	}
	if err := srv2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv2.cmd.Wait(); err != nil {
		t.Errorf("server after SIGTERM: %v\n%s", err, srv2.output())
	}
}

// bigRows is the size of the large protected table of the fault tests.
const bigRows = 5_000_000

var (
	bigOnce sync.Once
	bigDir  string
	bigErr  error
)

// bigTable writes (once per test binary) a TSV of bigRows rows
// (user_id, item, note) for 500,000 users: items are 200 common words
// (90% of the rows) or unique to their row; notes are short sentences of
// common words. The file lives until the test binary exits.
func bigTable(t *testing.T) string {
	t.Helper()
	bigOnce.Do(func() {
		start := time.Now()
		bigDir, bigErr = os.MkdirTemp("", "dpsql-big-*")
		if bigErr != nil {
			return
		}
		f, err := os.Create(filepath.Join(bigDir, "events.tsv"))
		if err != nil {
			bigErr = err
			return
		}
		w := bufio.NewWriterSize(f, 1<<20)
		rnd := rand.New(rand.NewPCG(1, 2))
		buf := make([]byte, 0, 64)
		for i := range bigRows {
			buf = buf[:0]
			buf = fmt.Appendf(buf, "%d\t", i/10)
			if rnd.IntN(10) == 0 {
				buf = fmt.Appendf(buf, "u%d\t", i)
			} else {
				buf = fmt.Appendf(buf, "w%d\t", rnd.IntN(200))
			}
			buf = fmt.Appendf(buf, "the w%d went w%d\n", rnd.IntN(50), rnd.IntN(50))
			w.Write(buf)
		}
		if err := w.Flush(); err != nil {
			bigErr = err
			return
		}
		bigErr = f.Close()
		t.Logf("wrote %d rows in %v", bigRows, time.Since(start).Round(time.Millisecond))
	})
	if bigErr != nil {
		t.Fatal(bigErr)
	}
	return filepath.Join(bigDir, "events.tsv")
}

var (
	bigDBOnce sync.Once
	bigTbl    *storage.Table
	bigDBErr  error
)

// bigEvents loads the large table once per test binary (about 10 s of a
// core and 1 GB; TestFault5MRows' two servers loaded it each before): each
// server gets a database of its own holding the same table, which every
// server only reads (a protected table is wrapped in a copy with the
// server's scan guard; the column data are shared).
func bigEvents(t *testing.T) *storage.Database {
	t.Helper()
	path := bigTable(t)
	bigDBOnce.Do(func() {
		start := time.Now()
		bigTbl, _, bigDBErr = storage.LoadFile("events", path, tabfile.TSV, storage.LoadOptions{Columns: []storage.ColumnSpec{
			{Name: "user_id", Type: storage.BigInt, Typed: true},
			{Name: "item", Type: storage.Text, Typed: true},
			{Name: "note", Type: storage.Text, Typed: true},
		}, Header: storage.HeaderNo})
		t.Logf("loaded %d rows in %v", bigRows, time.Since(start).Round(time.Millisecond))
	})
	if bigDBErr != nil {
		t.Fatal(bigDBErr)
	}
	db := storage.NewDatabase("big")
	if err := db.AddTable(bigTbl); err != nil {
		t.Fatal(err)
	}
	return db
}

// startBig serves the large table as the protected big.events, with the
// given server read timeout (0: the default).
func startBig(t *testing.T, readTimeout time.Duration) *govServer {
	t.Helper()
	dir := t.TempDir()
	// The configuration a YAML file would give (testserver.AccountsYAML),
	// built here: a configuration's datasets are loaded from files by every
	// server, and this one serves a table loaded once.
	hash := func(password string) config.PasswordHash {
		h, err := config.HashPassword(config.NativePassword, password)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	admin, analyst, off := hash(adminPassword), hash(analystPassword), false
	cfg := &config.Config{
		DataDir: filepath.Join(dir, "data"),
		Reuse:   config.Reuse{Enabled: &off},
		Limits:  config.Limits{MaxBudgetDelta: 0.5},
		Accounts: config.Accounts{
			Admins: []config.Admin{{User: "admin", Host: "localhost", PasswordHash: admin.String(), Password: admin}},
			Analysts: []config.Analyst{{User: "analyst", Host: "%", PasswordHash: analyst.String(), Password: analyst,
				Budgets: []config.Budget{{Database: "big", Epsilon: 100, Delta: 1e-3}}}},
		},
	}
	s := testserver.Governed(t, server.GovernedOptions{Config: cfg, ConnReadTimeout: readTimeout,
		Databases: []*storage.Database{bigEvents(t)},
		Protected: []governance.ProtectedTable{{Database: "big", Table: "events", PrivacyUnit: "user_id"}}})
	host, port := splitAddr(t, s.Addr())
	return &govServer{Governed: s, name: "big", db: "big", dataDir: filepath.Join(dir, "data"),
		analyst:  clients.Target{Host: host, Port: port, User: "analyst", Password: analystPassword, Database: "big"},
		admin:    clients.Target{Host: host, Port: port, User: "admin", Password: adminPassword, Database: "big"},
		protects: []string{"big.events"},
	}
}

// bigReleases are slow releases over the large table, one of each kind.
var bigReleases = []string{
	"SELECT DISTINCT item FROM events",
	"SELECT DP_SET_UNION(item, user_id) AS released FROM events",
	"SELECT ngram, n FROM DP_NGRAMS('big.events', 'note', 'user_id', 'max_n=2')",
}

// waitGoroutines waits until the process has at most want goroutines
// again, up to timeout; it returns the last count.
func waitGoroutines(want int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// auditCount returns how many audit records of the analyst hold the
// statement q.
func auditCount(t *testing.T, s *govServer, q string) int {
	t.Helper()
	recs, err := s.Ledger().Audit(ledger.AuditFilter{Analyst: s.analyst.User})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if auditOf(r, q) {
			n++
		}
	}
	return n
}

// auditOf tells whether an audit record is a charge for statement q (its
// description is "FUNCTION over db.table: statement").
func auditOf(r ledger.Record, q string) bool {
	return strings.HasSuffix(r.Description, ": "+q)
}

// waitIdle waits until the server has no connection left (its process
// list is empty: every statement ended and every connection closed), up to
// timeout, and returns how long that took.
func waitIdle(t *testing.T, s *govServer, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for len(s.Engine().ProcessList.Processes()) > 0 {
		if time.Since(start) > timeout {
			t.Fatalf("the server still has %d connections after %v", len(s.Engine().ProcessList.Processes()), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// settle waits until the server has no connection left, has ended its
// own builds of release indexes (Governed.IndexesPrebuilt) and has no other
// release index build under way (a build runs outside the statement that started
// it, so it may outlive a client that left; on a loaded machine it takes
// long), and returns the number of goroutines then: the base a statement's
// goroutines must come back to.
func settle(t *testing.T, s *govServer) int {
	t.Helper()
	waitIdle(t, s, 2*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The server's own builds first (it builds the indexes and corpora of
	// its protected tables one after another from the start, each in a
	// goroutine: between two of them WaitIndexBuilds sees none under way,
	// and a base counted then would miss the next one's goroutines).
	select {
	case <-s.IndexesPrebuilt():
	case <-ctx.Done():
		t.Fatal("the server's own release index builds still under way after 5 minutes")
	}
	if err := s.WaitIndexBuilds(ctx); err != nil {
		t.Fatalf("release index builds still under way after 5 minutes: %v", err)
	}
	return runtime.NumGoroutine()
}

// goroutineSettle is how long goroutines of a finished statement and a
// closed connection get to exit: generous, for a loaded machine (the
// wait ends as soon as they have).
const goroutineSettle = time.Minute

// goroutineDump returns the stacks of all goroutines.
func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// TestFault5MRows serves a protected table of five million rows and checks
// that slow releases end cleanly when the client goes away or a timeout
// strikes: the server keeps answering, leaks no goroutine, and charges
// each statement at most once (exactly once when its charge was made).
func TestFault5MRows(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a fault test on five million rows")
	}
	s := startBig(t, 0)
	alive(t, s.analyst)

	// A client that disconnects in the middle of a release (go-sql-driver
	// closes the connection when the context is canceled).
	t.Run("ClientDisconnectsMidRelease", func(t *testing.T) {
		for _, q := range bigReleases {
			base := settle(t, s)
			before := ledgerBalance(t, s.Ledger(), "analyst", "big").Releases
			db, err := clients.OpenGo(s.analyst)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			start := time.Now()
			rows, err := db.QueryContext(ctx, q)
			if err == nil {
				_, err = clients.ScanRows(rows)
			}
			cancel()
			db.Close()
			t.Logf("%s: the client gave up after %v: %v", q, time.Since(start).Round(time.Millisecond), err)
			if err == nil {
				t.Logf("(the release completed within the deadline)")
			}
			// The statement guard notices a closed client socket (it
			// polls its TCP state every 500 ms, server/peer.go) and
			// cancels the statement, which stops the release's scan.
			idle := waitIdle(t, s, 2*time.Minute)
			t.Logf("the server dropped the statement %v after the disconnect", idle.Round(time.Millisecond))
			// The release may have started an index build, which goes on
			// without the statement; it is not a leak once it ends.
			settle(t, s)
			if n := waitGoroutines(base, goroutineSettle); n > base {
				t.Errorf("%s: %d goroutines after the disconnect, %d before:\n%s", q, n, base, goroutineDump())
			}
			after := ledgerBalance(t, s.Ledger(), "analyst", "big").Releases
			if c := auditCount(t, s, q); after-before != int64(c) || c > 1 {
				t.Errorf("%s: charged %d times, %d audit records", q, after-before, c)
			} else {
				t.Logf("charged %d time(s)", c)
			}
			alive(t, s.analyst)
		}
	})

	// A client whose connection read timeout is shorter than the release.
	t.Run("ClientReadTimeout", func(t *testing.T) {
		q := bigReleases[0] + " WHERE user_id >= 0"
		base := settle(t, s)
		cfg, err := clients.GoConfig(s.analyst)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ReadTimeout = 500 * time.Millisecond
		db := openGoConfig(t, cfg)
		start := time.Now()
		rows, err := db.Query(q)
		var res clients.Result
		if err == nil {
			res, err = clients.ScanRows(rows)
		}
		t.Logf("read timeout 500ms: %d rows, %v after %v", len(res.Rows), err, time.Since(start).Round(time.Millisecond))
		db.Close()
		idle := waitIdle(t, s, 2*time.Minute)
		t.Logf("the server dropped the statement %v after the client", idle.Round(time.Millisecond))
		settle(t, s)
		if n := waitGoroutines(base, goroutineSettle); n > base {
			t.Errorf("%d goroutines after the timeout, %d before:\n%s", n, base, goroutineDump())
		}
		if c := auditCount(t, s, q); c > 1 {
			t.Errorf("charged %d times", c)
		}
		alive(t, s.analyst)
	})

	// The server's own connection read timeout, which also bounds the wait
	// for a statement's first row (docs/gms.md §4.6), shorter than a release.
	t.Run("ServerReadTimeout", func(t *testing.T) {
		s.Shutdown(5 * time.Second)
		tight := startBig(t, time.Second)
		// DP_SET_UNION is planned as a Release like DISTINCT: the two
		// paths are the planner's Release and the table function.
		for _, q := range []string{bigReleases[0], bigReleases[2]} {
			db := openGo(t, tight.analyst)
			start := time.Now()
			rows, err := db.Query(q)
			var res clients.Result
			if err == nil {
				res, err = clients.ScanRows(rows)
			}
			d := time.Since(start).Round(time.Millisecond)
			db.Close()
			if err != nil && testmysql.ErrNo(err) == 0 {
				t.Errorf("%s: not a MySQL error after %v: %v", q, d, err)
			} else {
				t.Logf("%s with a 1s server read timeout: %d rows, %v after %v", q, len(res.Rows), err, d)
			}
			if c := auditCount(t, tight, q); c != 1 {
				t.Errorf("%s: %d audit records, want 1", q, c)
			}
			alive(t, tight.analyst)
		}
	})
}

// openGoConfig opens a pool with a driver configuration.
func openGoConfig(t *testing.T, cfg *gomysql.Config) *dbsql.DB {
	t.Helper()
	c, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := dbsql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}
