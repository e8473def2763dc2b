package integration

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/server/config"
)

// EnvLoadDuration sets how long TestLoad runs (a Go duration such as 60s
// or 5m); without it the test runs loadDuration, under CI too.
const EnvLoadDuration = "DPSQL_LOAD_DURATION"

// EnvLoadProfile names a file where TestLoad writes a CPU profile of the
// load phase (the server runs in the test's process): for profiling a warm
// release under load.
const EnvLoadProfile = "DPSQL_LOAD_CPUPROFILE"

// startLoadProfile starts the CPU profile of EnvLoadProfile, if set, and
// returns its stop.
func startLoadProfile(t *testing.T) func() {
	path := os.Getenv(EnvLoadProfile)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// EnvLoadWarmAccounts set to 0 leaves the building of every analyst's
// own expression index but the first's in TestLoad's timed load (as
// before 26 November 2026), for comparing with earlier figures.
const EnvLoadWarmAccounts = "DPSQL_LOAD_WARM_ACCOUNTS"

// EnvLoadIndex set to 0 runs TestLoad without release indexes
// (limits.release_index_bytes = -1), for a before/after comparison.
const EnvLoadIndex = "DPSQL_LOAD_INDEX"

const (
	// loadDuration: 15 s serves hundreds of releases and metadata queries
	// on a busy two-core machine, runs every small analyst's budget out
	// and lets the hostile analyst's statements reach max_execution_time;
	// CI ran 60 s until 27 November 2026, which cost its critical path
	// (integration) 45 s of wall and about as much CPU (the process used
	// 63-102 % of a core) for more of the same statements.
	loadDuration        = 15 * time.Second
	loadBigAnalysts     = 8 // × loadConnsPerAnalyst connections with ample budgets
	loadConnsPerAnalyst = 4
	loadSmallAnalysts   = 2 // × 2 connections whose budgets run out
	// loadSmallEpsilon is the small analysts' budget: three releases of
	// ε = 0.5 fit under the ledger's zCDP accounting, the fourth is refused
	// (with ε = 3, 24 fit: more than a busy two-core machine serves a small
	// analyst in 60 s; at load average 10 it serves about one release per
	// connection every 10 s).
	loadSmallEpsilon = 1
)

// loadOp is one kind of statement the load test sends.
type loadOp struct {
	name    string
	release bool // charged: a DP release
	sql     func(r *rand.Rand) string
}

var loadOps = []loadOp{
	{"DISTINCT", true, func(r *rand.Rand) string {
		return fmt.Sprintf("SELECT DISTINCT word FROM words WHERE user_id <= %d ORDER BY word", 2000+r.IntN(4000))
	}},
	{"DP_SET_UNION", true, func(r *rand.Rand) string {
		return fmt.Sprintf("SELECT DP_SET_UNION(LOWER(SUBSTRING_INDEX(body, ' ', 2)), user_id, 'epsilon=0.5, max_items=20') AS released FROM posts WHERE user_id > %d", r.IntN(10_000))
	}},
	{"DP_NGRAMS", true, func(*rand.Rand) string {
		return "SELECT ngram, n FROM DP_NGRAMS('demo.posts', 'body', 'user_id', 'epsilon=0.5, max_n=2') WHERE n = 2"
	}},
	// The whole column: answered from the release index.
	{"DISTINCT (index)", true, func(r *rand.Rand) string {
		return fmt.Sprintf("SELECT /*+ SET_VAR(dp_max_items = %d) */ DISTINCT word FROM words ORDER BY word", 20+r.IntN(100))
	}},
	{"metadata", false, func(r *rand.Rand) string {
		return []string{
			"SHOW TABLES",
			"SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'demo' ORDER BY table_name, ordinal_position",
			"DESCRIBE words",
			"SHOW CREATE TABLE posts",
			"SELECT table_name, table_rows FROM information_schema.tables WHERE table_schema = 'demo'",
			"SELECT * FROM DP_BUDGET()",
			"SHOW TABLE STATUS",
		}[r.IntN(7)]
	}},
}

// loadStats gathers what the connections saw.
type loadStats struct {
	mu        sync.Mutex
	latency   map[string][]time.Duration
	released  map[string]int64 // releases received, by analyst
	refusals  map[string]int64 // budget refusals (1226), by analyst
	errors    []string         // anything else
	connected int
}

func (s *loadStats) record(analyst, op string, release bool, d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var me *gomysql.MySQLError
	switch {
	case err == nil:
		s.latency[op] = append(s.latency[op], d)
		if release {
			s.released[analyst]++
		}
	case errors.As(err, &me) && me.Number == 1226:
		s.refusals[analyst]++
		s.latency["refused (1226)"] = append(s.latency["refused (1226)"], d)
	default:
		if len(s.errors) < 20 {
			s.errors = append(s.errors, fmt.Sprintf("%s %s: %v", analyst, op, err))
		}
	}
}

// heapAfterGC returns the live heap after two collections.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLoad runs loadBigAnalysts analysts with four connections each and
// loadSmallAnalysts analysts with two connections each and a budget of a
// few releases against the governed demo over loopback, for
// DPSQL_LOAD_DURATION: each connection sends, in a bounded loop, a mix of
// DP releases (rewritten DISTINCT, DP_SET_UNION, DP_NGRAMS) and metadata
// queries. It requires zero errors other than the small analysts' budget
// refusals (1226), a ledger that charged exactly the releases received and
// never more than a budget, and no goroutine or heap growth once the
// clients are gone; it logs p50/p99 latency per kind of statement. One
// more analyst, hostile, sends the resource attacks of issue 11 in a loop
// meanwhile (load_hostile_test.go; DPSQL_LOAD_HOSTILE=0 leaves it out):
// each must get its expected answer.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a load test of several minutes")
	}
	duration := loadDuration
	if v := os.Getenv(EnvLoadDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive Go duration such as 60s", EnvLoadDuration, v)
		}
		duration = d
	}
	type analyst struct {
		name, password string
		conns          int
		small          bool
	}
	var analysts []analyst
	var extra []extraAnalyst
	for i := range loadBigAnalysts {
		a := analyst{fmt.Sprintf("big%d", i), fmt.Sprintf("big-pw-%d", i), loadConnsPerAnalyst, false}
		analysts = append(analysts, a)
		extra = append(extra, extraAnalyst{a.name, a.password, 1e6, 0.5})
	}
	for i := range loadSmallAnalysts {
		a := analyst{fmt.Sprintf("small%d", i), fmt.Sprintf("small-pw-%d", i), 2, true}
		analysts = append(analysts, a)
		extra = append(extra, extraAnalyst{a.name, a.password, loadSmallEpsilon, 1e-5})
	}
	if loadHostileOn() {
		extra = append(extra, extraAnalyst{loadHostileUser, loadHostilePassword, 1e6, 0.5})
	}
	noIndex := os.Getenv(EnvLoadIndex) == "0"
	s := startDemoLimits(t, func(l *config.Limits) {
		l.MaxExecutionTime = loadExecutionTime
		if noIndex {
			l.ReleaseIndexBytes = -1
		}
	}, extra...)
	leaks := demoLeakCheck(t)
	// The server builds the columns' indexes and corpora itself after
	// loading (issue 20): the load measures the steady state after them.
	prebuildStart := time.Now()
	<-s.IndexesPrebuilt()
	t.Logf("the server's own index and corpus builds ended %v after the start", time.Since(prebuildStart).Round(time.Millisecond))

	// Baseline: the server is up and idle; warm the engine once so that
	// lazily started goroutines and caches are not counted as growth.
	warm := openGo(t, s.analystAs(analysts[0].name, analysts[0].password))
	if _, err := warm.Exec("SELECT * FROM DP_BUDGET()"); err != nil {
		t.Fatal(err)
	}
	// One release of each kind builds its release index (with indexes
	// on: the word column's, the DP_SET_UNION item expression's, the
	// n-gram corpus of posts.body), as a server's first such releases do:
	// the load then measures the steady state. They are charged to the
	// first analyst.
	warmups := []string{
		"SELECT DISTINCT word FROM words",
		loadOps[1].sql(rand.New(rand.NewPCG(0, 0))),
		loadOps[2].sql(nil),
	}
	for _, q := range warmups {
		warmStart := time.Now()
		if _, err := warm.Exec(q); err != nil {
			t.Fatal(err)
		}
		t.Logf("first release (builds its release index when indexes are on): %v: %s", time.Since(warmStart).Round(time.Millisecond), q)
	}
	warm.Close()
	// Expressions' release indexes are per account (docs/privacy.md
	// §12.2): every other analyst's first DP_SET_UNION builds its own
	// (about 0.1 s of CPU each on the demo, a quarter of the CPU of a
	// 15-second run at load average 18). One such release each, charged
	// to that analyst, keeps the builds out of the steady state measured;
	// DPSQL_LOAD_WARM_ACCOUNTS=0 leaves them in the load, as before.
	warmed := map[string]int64{analysts[0].name: int64(len(warmups))}
	if os.Getenv(EnvLoadWarmAccounts) != "0" {
		for _, a := range analysts[1:] {
			db := openGo(t, s.analystAs(a.name, a.password))
			if _, err := db.Exec(warmups[1]); err != nil {
				t.Fatal(err)
			}
			db.Close()
			warmed[a.name]++
		}
	}
	time.Sleep(200 * time.Millisecond)
	goroutines0, heap0, index0 := runtime.NumGoroutine(), heapAfterGC(), s.ReleaseIndexBytes()

	stats := &loadStats{latency: map[string][]time.Duration{}, released: map[string]int64{}, refusals: map[string]int64{}}
	var leakMu sync.Mutex
	leaked := 0
	deadline := time.Now().Add(duration)
	start, cpu0 := time.Now(), processCPU()
	stopProfile := startLoadProfile(t)
	var hostile *hostileLoad
	if loadHostileOn() {
		hostile = startHostileLoad(t, s, deadline)
	}
	var wg sync.WaitGroup
	var dbs []*dbsql.DB
	for ai, a := range analysts {
		db, err := clients.OpenGo(s.analystAs(a.name, a.password))
		if err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, db)
		db.SetMaxOpenConns(a.conns)
		for c := range a.conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(uint64(ai), uint64(c)))
				ctx := context.Background()
				conn, err := db.Conn(ctx)
				if err != nil {
					stats.record(a.name, "connect", false, 0, err)
					return
				}
				defer conn.Close()
				// Every statement a new release: the load is of releases,
				// not of answers reused from the ledger (the DP_NGRAMS
				// statement is always the same).
				if _, err := conn.ExecContext(ctx, "SET dp_reuse = OFF"); err != nil {
					stats.record(a.name, "connect", false, 0, err)
					return
				}
				stats.mu.Lock()
				stats.connected++
				stats.mu.Unlock()
				for i := 0; time.Now().Before(deadline); i++ {
					op := loadOps[len(loadOps)-1] // metadata
					if i%2 == 0 {
						op = loadOps[rnd.IntN(len(loadOps)-1)]
					}
					q := op.sql(rnd)
					t0 := time.Now()
					rows, err := conn.QueryContext(ctx, q)
					var res clients.Result
					if err == nil {
						res, err = clients.ScanRows(rows)
					}
					stats.record(a.name, op.name, op.release, time.Since(t0), err)
					if err == nil && op.release {
						leakMu.Lock()
						leaked += leaks.checkRows(t, q, res.Rows)
						leakMu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	stopProfile()
	if hostile != nil {
		hostile.wait(t, s)
	}
	for _, db := range dbs {
		db.Close()
	}

	// Report.
	var b strings.Builder
	var total, releases, refusals int64
	fmt.Fprintf(&b, "%d connections (%d analysts), %v, release indexes %v, load average %s\n", stats.connected, len(analysts),
		elapsed.Round(time.Millisecond), !noIndex, loadAverage())
	fmt.Fprintf(&b, "| statement | count | p50 | p99 | max |\n|---|---|---|---|---|\n")
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range stats.latency {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		l := stats.latency[name]
		slices.Sort(l)
		total += int64(len(l))
		fmt.Fprintf(&b, "| %s | %d | %v | %v | %v |\n", name, len(l), pct(l, 0.50), pct(l, 0.99), l[len(l)-1].Round(time.Millisecond))
	}
	for _, n := range stats.released {
		releases += n
	}
	for _, n := range stats.refusals {
		refusals += n
	}
	fmt.Fprintf(&b, "%d statements (%.1f/s), %d releases (%.1f/s), %d budget refusals, %d other errors\n",
		total, float64(total)/elapsed.Seconds(), releases, float64(releases)/elapsed.Seconds(), refusals, len(stats.errors))
	// The server, the clients and the hostile analyst share the process:
	// its CPU time per release is what the load costs whatever share of
	// the cores it gets on a busy machine.
	fmt.Fprintf(&b, "process CPU %.2f s (%.0f%% of a core), %.1f ms per release", cpu.Seconds(),
		100*cpu.Seconds()/elapsed.Seconds(), float64(cpu.Milliseconds())/float64(max(releases, 1)))
	t.Log("load:\n" + b.String())

	if stats.connected != loadBigAnalysts*loadConnsPerAnalyst+2*loadSmallAnalysts {
		t.Errorf("%d connections opened", stats.connected)
	}
	for _, e := range stats.errors {
		t.Errorf("error under load: %s", e)
	}
	if leaked > 0 {
		t.Errorf("%d leaking cells under load", leaked)
	}
	for _, a := range analysts {
		bal := ledgerBalance(t, s.Ledger(), a.name, "demo")
		stats.released[a.name] += warmed[a.name]
		if bal.Releases != stats.released[a.name] {
			t.Errorf("%s: the ledger charged %d releases, the clients received %d", a.name, bal.Releases, stats.released[a.name])
		}
		if bal.Spent.Epsilon > bal.Budget.Epsilon+1e-9 || bal.Spent.Delta > bal.Budget.Delta*(1+1e-9) {
			t.Errorf("%s overspent: spent %v of %v", a.name, bal.Spent, bal.Budget)
		}
		if a.small && stats.refusals[a.name] == 0 {
			t.Errorf("%s (budget ε=%v) was never refused", a.name, loadSmallEpsilon)
		}
		if !a.small && stats.refusals[a.name] != 0 {
			t.Errorf("%s (ample budget) was refused %d times", a.name, stats.refusals[a.name])
		}
	}
	if err := s.Ledger().Verify(); err != nil {
		t.Errorf("ledger after the load: %v", err)
	}

	// The clients are gone: the server must be back to its idle state,
	// once the release index builds the load started (which run outside
	// the statements, and may outlive them) have ended. The wait is
	// generous for a loaded machine and ends as soon as the count is back.
	buildCtx, buildCancel := context.WithTimeout(context.Background(), 5*time.Minute)
	if err := s.WaitIndexBuilds(buildCtx); err != nil {
		t.Errorf("release index builds still under way 5 minutes after the load: %v", err)
	}
	buildCancel()
	var goroutines1 int
	for wait := time.Now().Add(time.Minute); ; {
		goroutines1 = runtime.NumGoroutine()
		if goroutines1 <= goroutines0+2 || time.Now().After(wait) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Release indexes the load built (the hostile analyst's expressions
	// make some) are a bounded cache, not growth.
	heap1, index1 := heapAfterGC(), s.ReleaseIndexBytes()
	t.Logf("goroutines %d → %d; live heap %.1f MB → %.1f MB, of which release indexes %.1f MB → %.1f MB",
		goroutines0, goroutines1, float64(heap0)/1e6, float64(heap1)/1e6, float64(index0)/1e6, float64(index1)/1e6)
	heap1 -= uint64(max(index1-index0, 0))
	if goroutines1 > goroutines0+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines grew from %d to %d after the load:\n%s", goroutines0, goroutines1, buf[:runtime.Stack(buf, true)])
	}
	if heap1 > heap0+heap0/4+16<<20 {
		t.Errorf("live heap grew from %.1f MB to %.1f MB after the load", float64(heap0)/1e6, float64(heap1)/1e6)
	}
	alive(t, s.analyst)
}

// loadAverage returns the machine's 1, 5 and 15-minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// pct returns the q-quantile of sorted durations.
func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i].Round(time.Millisecond)
}
