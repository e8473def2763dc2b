package integration

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/server/config"
)

// The hostile analyst of TestLoad: one more analyst in the mix, sending
// the resource attacks of issue 11 in a loop on one connection (and
// short-lived extra connections for the concurrency and disconnect
// attacks). Only attacks the in-process server survives are sent (the
// ones that still end the process are in TestResourceAttacks, skipped as
// known). Every attack must get its expected answer — a MySQL error naming
// the limit, NULL with warning 1301, or a bounded result — while the
// well-behaved analysts' requirements stay as they are.

// EnvLoadHostile set to 0 leaves the hostile analyst out of TestLoad (to
// measure a baseline).
const EnvLoadHostile = "DPSQL_LOAD_HOSTILE"

const loadHostileUser, loadHostilePassword = "hostile", "hostile-pw-0"

// loadExecutionTime is the max_execution_time of TestLoad's server (its
// other limits are the embedded default's): it ends the hostile analyst's
// long statements while staying far above the well-behaved analysts'
// slowest release on a busy machine (p99 ≈ 28 s measured at load average
// 10 on two cores).
const loadExecutionTime = 30 * time.Second

// loadHostileBurst is how many statements the hostile analyst sends at
// once: more than max_statements_per_account (default 8).
const loadHostileBurst = 10

// loadAttack is one attack of the hostile analyst's loop.
type loadAttack struct {
	name string
	sql  string
	want check
}

// loadSlowRelease is a release that runs as long as the row-work budget
// allows: each row builds the first of twenty strings of 10,000 characters
// before the budget skips it (slowFilter,
// resources_test.go; a 10,000-item IN list, which it used to be, is now one
// hash lookup per row, and LPAD to 60,000 characters is over the value
// limit, NULL at once).
var loadSlowRelease = "SELECT DISTINCT word FROM words WHERE " + strings.ReplaceAll(slowFilter, "note", "word")

// loadAttacks are sent in turn on the hostile analyst's first connection,
// with the concurrency and disconnect attacks; loadHeavyAttacks, which hold
// a CPU until max_execution_time, on its second.
var loadAttacks = []loadAttack{
	{"sum 2MB", sumOf(1_000_000), refused(1153, "limits.max_statement_bytes")},
	{"sum 12k terms", sumOf(12_000), refused(1473, "limits.max_operators")},
	{"deep parentheses", "SELECT " + strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000), refused(1473, "limits.max_nesting")},
	{"IN list 200k", "SELECT 1 IN (" + inList(200_000) + ")", refused(1153, "limits.max_statement_bytes")},
	// The code is 1105 today (TestResourceAttacks/InList10001).
	{"IN list 10001", "SELECT 1 IN (" + inList(10_001) + ")", anyOf(refused(1153, "limits.max_in_list"), refused(1105, "limits.max_in_list"))},
	{"nested HEX", "SELECT LENGTH(" + nested("HEX", 30, "'a'") + ")", truncated()},
	{"nested CONCAT", "SELECT LENGTH(" + strings.Repeat("CONCAT(REPEAT('ab', 1000000), ", 12) + "'x'" + strings.Repeat(")", 12) + ")", truncated()},
	{"LIKE many %", "SELECT REPEAT('a', 100000) LIKE CONCAT(REPEAT('%a', 2000), 'b')", value("0")},
	{"LIKE many % release", "SELECT DISTINCT word FROM words WHERE word LIKE '" + strings.Repeat("%e", 200) + "zz'", released()},
	{"backtracking REGEXP release", "SELECT DISTINCT word FROM words WHERE word REGEXP '(e|ee| )*zz'", anyOf(released(), timedOut())},
	{"dp_sips 1000 rounds", "SELECT DP_SET_UNION(word, user_id, 'mechanism=dp_sips, rounds=1000') AS r FROM words", refused(1210, "rounds")},
	{"single_item tiny ε", "SELECT DP_SET_UNION(word, user_id, 'mechanism=single_item, epsilon=1e-8, delta=1e-12') AS r FROM words", refused(1210, "epsilon")},
	{"ε below the floor", "SELECT DP_SET_UNION(word, user_id, 'epsilon=5e-324') AS r FROM words", refused(1210, "limits.min_epsilon")},
	{"backtracking REGEXP", "SELECT REPEAT('a', 30) REGEXP '(a*)*b'", value("0")},
}

var loadHeavyAttacks = []loadAttack{
	// 1.5 s alone on demo.words (the default mechanism: 0.6 s).
	{"dp_sips 100 rounds", "SELECT DP_SET_UNION(word, user_id, 'mechanism=dp_sips, rounds=100') AS r FROM words", anyOf(released(), timedOut())},
	{"nested TO_BASE64 release", "SELECT DISTINCT " + nested("TO_BASE64", 30, "body") + " AS b FROM posts", anyOf(released(), timedOut())},
	{"cross join", "SELECT COUNT(*) FROM information_schema.columns a, information_schema.columns b, information_schema.columns c", timedOut()},
	{"slow release", loadSlowRelease, anyOf(released(), timedOut())},
}

// loadHostileOn reports whether TestLoad runs with the hostile analyst.
func loadHostileOn() bool { return os.Getenv(EnvLoadHostile) != "0" }

// hostileLoad is the hostile analyst's loop and what it saw.
type hostileLoad struct {
	mu         sync.Mutex
	answered   map[string]int // attack → answers as expected
	slowest    map[string]time.Duration
	unexpected []string
	done       chan struct{}

	// bursts is incremented as a burst starts and as it ends: it is odd
	// while one is under way.
	bursts atomic.Uint64
	// burstRefused counts the statements of the heavy loop refused with
	// 1226 because they overlapped a burst, and sent again.
	burstRefused int
	// server is the server under attack (its process list).
	server *govServer
}

func (h *hostileLoad) record(name string, o attackOutcome, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		if len(h.unexpected) < 20 {
			h.unexpected = append(h.unexpected, fmt.Sprintf("%s: %v", name, err))
		}
		return
	}
	h.answered[name]++
	h.slowest[name] = max(h.slowest[name], o.took)
}

// startHostileLoad starts the hostile analyst on s until deadline.
func startHostileLoad(t *testing.T, s *govServer, deadline time.Time) *hostileLoad {
	h := &hostileLoad{answered: map[string]int{}, slowest: map[string]time.Duration{}, done: make(chan struct{}), server: s}
	target := s.analystAs(loadHostileUser, loadHostilePassword)
	db, err := clients.OpenGo(target)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		h.loop(db, deadline, loadAttacks, true)
	}()
	go func() {
		defer wg.Done()
		h.loop(db, deadline, loadHeavyAttacks, false)
	}()
	go func() {
		wg.Wait()
		db.Close()
		close(h.done)
	}()
	return h
}

// loop sends attacks in turn on one connection until deadline, and with
// extra, first in every round, the burst and disconnect attacks.
func (h *hostileLoad) loop(db *dbsql.DB, deadline time.Time, attacks []loadAttack, extra bool) {
	var c *dbsql.Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	n := len(attacks)
	if extra {
		n += 2
	}
	for i := 0; time.Now().Before(deadline); i++ {
		if c == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var err error
			c, err = db.Conn(ctx)
			cancel()
			if err != nil {
				h.record("connect", attackOutcome{}, err)
				return
			}
		}
		k := i % n
		if extra {
			k -= 2
		}
		switch {
		case k >= 0:
			a := attacks[k]
			o := h.attack(c, a)
			h.record(a.name, o, a.want(o))
			if o.err != nil && testmysql.ErrNo(o.err) == 0 {
				c.Close()
				c = nil
			}
		case k == -2:
			h.burst(db)
		default:
			h.disconnect(db)
		}
	}
}

// attack sends a on c. A burst fills the account's
// max_statements_per_account on purpose, and the other loop runs meanwhile:
// its statement (or the SHOW WARNINGS after it) may then be refused with
// 1226, which is the limit working, not a wrong answer. Such a statement is
// sent again. Any other answer counts, even while a burst is under way.
func (h *hostileLoad) attack(c *dbsql.Conn, a loadAttack) attackOutcome {
	for {
		before := h.bursts.Load()
		o, warnErr := attackOnceWarnings(c, a.sql, loadExecutionTime+time.Minute)
		overlapped := before%2 == 1 || h.bursts.Load() != before
		capped := refused(1226, "limits.max_statements_per_account")
		if !overlapped || (capped(o) != nil && (warnErr == nil || capped(attackOutcome{err: warnErr}) != nil)) {
			return o
		}
		h.mu.Lock()
		h.burstRefused++
		h.mu.Unlock()
	}
}

// attackOnceWarnings is attackOnce that also returns the error of its SHOW
// WARNINGS (attackOnce leaves the warnings out then).
func attackOnceWarnings(c *dbsql.Conn, q string, clientBound time.Duration) (attackOutcome, error) {
	ctx, cancel := context.WithTimeout(context.Background(), clientBound)
	defer cancel()
	start := time.Now()
	res, err := queryAll(ctx, c, q)
	o := attackOutcome{took: time.Since(start), err: err, res: res}
	if err != nil {
		return o, nil
	}
	w, err := queryAll(ctx, c, "SHOW WARNINGS")
	if err == nil {
		o.warnings = w.Cells()
	}
	return o, err
}

// burst sends loadHostileBurst statements at once on as many connections:
// those beyond max_statements_per_account must get 1226 naming the
// setting, the others their answer.
func (h *hostileLoad) burst(db *dbsql.DB) {
	h.bursts.Add(1)
	defer h.bursts.Add(1)
	var wg sync.WaitGroup
	outs := make([]attackOutcome, loadHostileBurst)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := db.Conn(ctx)
			if err != nil {
				outs[i] = attackOutcome{err: err}
				return
			}
			defer c.Close()
			outs[i] = attackOnce(c, "SELECT SLEEP(2)", time.Minute)
		}()
	}
	wg.Wait()
	refusedN := 0
	for _, o := range outs {
		switch {
		case o.err == nil:
		case refused(1226, "limits.max_statements_per_account")(o) == nil:
			refusedN++
		default:
			h.record("burst", o, fmt.Errorf("want SLEEP's answer or 1226, got %s", o))
			return
		}
	}
	if refusedN == 0 {
		h.record("burst", attackOutcome{}, fmt.Errorf("%d statements at once, none refused with 1226", loadHostileBurst))
		return
	}
	h.record("burst", outs[0], nil)
}

// disconnect starts the slow release, goes away after 300 ms and waits
// for the server to end the abandoned statement (it notices the closed
// connection within server.peerPoll, or stops it at max_execution_time):
// the abandoned statement holds one of the account's
// max_statements_per_account until then, and without the wait the rounds
// of a fast machine piled them up until the hostile analyst's own
// statements were refused with 1226. The answer is the time the server
// took.
func (h *hostileLoad) disconnect(db *dbsql.DB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := db.Conn(ctx)
	cancel()
	if err != nil {
		h.record("disconnect", attackOutcome{}, err)
		return
	}
	var id uint32
	if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		c.Close()
		h.record("disconnect", attackOutcome{err: err}, err)
		return
	}
	o := attackOnce(c, loadSlowRelease, 300*time.Millisecond)
	c.Close()
	start := time.Now()
	for h.connectionOpen(id) {
		if time.Since(start) > loadExecutionTime+10*time.Second {
			h.record("disconnect", o, fmt.Errorf("connection %d still open on the server %v after its client went away", id, time.Since(start).Round(time.Millisecond)))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	o.took += time.Since(start)
	h.record("disconnect", o, nil)
}

// connectionOpen reports whether the server still has connection id.
func (h *hostileLoad) connectionOpen(id uint32) bool {
	for _, p := range h.server.Engine().ProcessList.Processes() {
		if p.Connection == id {
			return true
		}
	}
	return false
}

// wait waits for the loop to end and for the server to end the hostile
// analyst's statements (an abandoned one runs until max_execution_time:
// TestResourceStatements/DisconnectMidQuery), and reports: every attack
// answered as expected.
func (h *hostileLoad) wait(t *testing.T, s *govServer) {
	<-h.done
	start := time.Now()
	for hostileProcesses(s) > 0 && time.Since(start) < loadExecutionTime+10*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the server ended the hostile analyst's last statements %v after its loop", time.Since(start).Round(time.Millisecond))
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "| attack | answered as expected | slowest |\n|---|---|---|\n")
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range h.answered {
			if !yield(k) {
				return
			}
		}
	})
	total := 0
	for _, n := range names {
		total += h.answered[n]
		fmt.Fprintf(&b, "| %s | %d | %v |\n", n, h.answered[n], h.slowest[n].Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "%d attacks answered as expected, %d otherwise; %d statements of the heavy loop refused with 1226 during a burst and sent again", total, len(h.unexpected), h.burstRefused)
	t.Log("hostile analyst:\n" + b.String())
	for _, u := range h.unexpected {
		t.Errorf("hostile analyst: %s", u)
	}
	if total == 0 {
		t.Error("the hostile analyst's attacks got no expected answer")
	}
}

// hostileProcesses returns how many connections of the hostile analyst the
// server has.
func hostileProcesses(s *govServer) int {
	n := 0
	for _, p := range s.Engine().ProcessList.Processes() {
		if p.User == loadHostileUser {
			n++
		}
	}
	return n
}

// TestStatementSlotFreedBeforeAnswer checks the accounting of
// limits.max_statements_per_account that the hostile analyst of TestLoad
// relies on: a statement's slot is free by the time its client has the
// whole answer (the interceptor leaves before the end of the result set is
// written), so statements one after the other, on different connections of
// one account, are never refused with 1226 at a cap of 1 — for text
// statements, prepared ones, and answers of many packets.
func TestStatementSlotFreedBeforeAnswer(t *testing.T) {
	s := startDemoLimits(t, func(l *config.Limits) { l.MaxStatementsPerAccount = 1 })
	db := openGo(t, s.analyst)
	ctx := context.Background()
	var conns [2]*dbsql.Conn
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	stmts := []struct {
		q    string
		args []any
	}{
		{"SELECT 1", nil},
		{"SELECT ?", []any{2}},
		{"SELECT * FROM information_schema.columns", nil},
		{"SELECT * FROM DP_BUDGET()", nil},
	}
	for i := range 200 {
		st := stmts[i%len(stmts)]
		rows, err := conns[i%2].QueryContext(ctx, st.q, st.args...)
		if err == nil {
			_, err = clients.ScanRows(rows)
		}
		if err != nil {
			t.Fatalf("statement %d (%s), the previous one answered: %v", i, st.q, err)
		}
	}
}
