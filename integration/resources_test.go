package integration

import (
	"context"
	dbsql "database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testmysql"
)

// The hostile-analyst suite of issue 11: every resource attack an analyst
// can send is a clean MySQL error (or a bounded answer) within a stated
// time, the server process lives, and a second, well-behaved analyst's
// releases complete while the attack runs and after it.
//
// The server is a subprocess under a memory limit (resources_harness_test.go:
// GOMEMLIMIT=384MiB and RLIMIT_AS = 3 GiB), serving a protected table of
// 200,000 rows (20,000 users) and a public table of 2,000 rows. The
// attacker is the analyst mallory, the bystander the analyst alice; they
// are different accounts, so per-account limits of one never apply to the
// other.
//
// Attacks that still kill or wedge the server are written as tests of the
// behaviour issue 11 asks for and skipped with "known: …" (what happens
// today, where, how long, how much memory); DPSQL_HOSTILE_KNOWN=1 runs them.
// Attacks whose only failure is in the answer (a wrong error code, a KILL
// refused) run every time: the rest is asserted, and the known part skips
// when it shows the known symptom, so that the test starts asserting it as
// soon as the server is fixed.

// envHostileKnown runs the attacks that still fail (they may take minutes
// or end the server subprocess).
const envHostileKnown = "DPSQL_HOSTILE_KNOWN"

// Bounds the suite asserts (generous: the machine is shared and the
// measured times are far below; the log has the measured ones).
const (
	// resRefuseBound bounds the answer to a statement refused before it
	// runs (text and IN-list limits): measured 0–30 ms.
	resRefuseBound = 10 * time.Second
	// resAttackExecTime is the max_execution_time of the attack server.
	resAttackExecTime = 2 * time.Second
	// resExecSlack is how late after max_execution_time the 3024 may come.
	resExecSlack = 5 * time.Second
	// resComputeBound bounds an attack the server may answer by computing
	// and sending a bounded result rather than refusing or stopping it
	// (CONCAT of 60 values of 4 MB, sized before it is built; a row of 60
	// such columns, 240 MB): seconds alone, 10.2 s and 15.7 s at load
	// averages ~20 and ~7 on 2 shared cores.
	resComputeBound = 60 * time.Second
	// resAliceBound bounds each of alice's releases during an attack
	// (measured alone: about 0.1 s).
	resAliceBound = 30 * time.Second
	// resMaxRepeats bounds how often a fast attack is repeated while
	// alice's release runs.
	resMaxRepeats = 200
)

// aliceRelease is the bystander's release, over the protected table.
const aliceRelease = "SELECT DP_SET_UNION(item, user_id, 'epsilon=0.1') AS released FROM events"

// skipKnown skips a test of a known failure unless DPSQL_HOSTILE_KNOWN is
// set.
func skipKnown(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(envHostileKnown) == "" {
		t.Skipf("known: %s (%s=1 runs it)", why, envHostileKnown)
	}
	t.Logf("known failure, run because %s is set: %s", envHostileKnown, why)
}

// bystander is alice, the well-behaved analyst, on one connection.
type bystander struct {
	s    *resServer
	c    *dbsql.Conn
	base time.Duration // her release's time with no attack
}

func newBystander(t *testing.T, s *resServer) *bystander {
	t.Helper()
	b := &bystander{s: s, c: resConn(t, s.alice)}
	for range 3 { // warm: the first release builds the table's index
		d, err := b.release()
		if err != nil {
			t.Fatalf("alice's release with no attack: %v", err)
		}
		b.base = d
	}
	return b
}

// release runs alice's release once and checks its answer: one row, a
// non-empty JSON array of items.
func (b *bystander) release() (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), resAliceBound)
	defer cancel()
	start := time.Now()
	res, err := queryAll(ctx, b.c, aliceRelease)
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("alice's release failed after %v: %w", d.Round(time.Millisecond), err)
	}
	var items []string
	if len(res.Rows) != 1 || res.Rows[0][0] == nil || json.Unmarshal([]byte(*res.Rows[0][0]), &items) != nil || len(items) == 0 {
		return d, fmt.Errorf("alice's release answered %q", res.Cells())
	}
	return d, nil
}

// reconnect replaces alice's connection (after a server restart).
func (b *bystander) reconnect(t *testing.T, s *resServer) {
	b.s, b.c = s, resConn(t, s.alice)
}

// attackOutcome is what the attacker saw for one statement.
type attackOutcome struct {
	took     time.Duration
	err      error
	res      clients.Result
	warnings [][]string // SHOW WARNINGS after a statement that succeeded
}

func (o attackOutcome) String() string {
	if o.err != nil {
		return fmt.Sprintf("error after %v: %s", o.took.Round(time.Millisecond), clipString(o.err.Error(), 300))
	}
	return fmt.Sprintf("%q after %v, warnings %q", clipString(fmt.Sprint(o.res.Cells()), 200), o.took.Round(time.Millisecond), o.warnings)
}

// check is what an attack must answer.
type check func(o attackOutcome) error

// refused wants MySQL error code with a message naming setting.
func refused(code int, setting string) check {
	return func(o attackOutcome) error {
		if o.err == nil {
			return fmt.Errorf("want error %d naming %s, got %s", code, setting, o)
		}
		if got := testmysql.ErrNo(o.err); int(got) != code || !strings.Contains(o.err.Error(), setting) {
			return fmt.Errorf("want error %d naming %s, got %s", code, setting, o)
		}
		return nil
	}
}

// timedOut wants MySQL error 3024 naming limits.max_execution_time.
func timedOut() check { return refused(3024, "limits.max_execution_time") }

// outOfMemory: stopped by the memory guard, with error 1041 naming the
// limit.
func outOfMemory() check { return refused(1041, "limits.max_memory_bytes") }

// truncated wants a single NULL value with warning 1301 (a string beyond
// limits.max_string_bytes).
func truncated() check {
	return func(o attackOutcome) error {
		if o.err != nil || len(o.res.Rows) != 1 || o.res.Rows[0][0] != nil {
			return fmt.Errorf("want NULL with warning 1301, got %s", o)
		}
		for _, w := range o.warnings {
			if len(w) > 1 && w[1] == "1301" {
				return nil
			}
		}
		return fmt.Errorf("want warning 1301, got %s", o)
	}
}

// value wants the single value v.
func value(v string) check {
	return func(o attackOutcome) error {
		if o.err != nil || len(o.res.Rows) != 1 || len(o.res.Rows[0]) != 1 || o.res.Rows[0][0] == nil || *o.res.Rows[0][0] != v {
			return fmt.Errorf("want %q, got %s", v, o)
		}
		return nil
	}
}

// released wants a release's answer (rows, no error).
func released() check {
	return func(o attackOutcome) error {
		if o.err != nil {
			return fmt.Errorf("want a release, got %s", o)
		}
		return nil
	}
}

// anyOf accepts what one of the checks accepts.
func anyOf(cs ...check) check {
	return func(o attackOutcome) error {
		var msgs []string
		for _, c := range cs {
			err := c(o)
			if err == nil {
				return nil
			}
			msgs = append(msgs, err.Error())
		}
		return errors.New(strings.Join(msgs, "; or "))
	}
}

// resourceAttack is one attack of the suite.
type resourceAttack struct {
	name  string
	sql   func() string
	want  check
	bound time.Duration // the answer must come within
	// known, when set, describes the failure the attack still causes; the
	// test is skipped unless DPSQL_HOSTILE_KNOWN is set.
	known string
	// symptom, when set, recognises a known wrong or late answer: the test
	// asserts everything else and then skips, quoting it.
	symptom func(o attackOutcome) string
	// once: run the attack once rather than repeating it until alice's
	// release completes (slow attacks).
	once bool
	// uncharged: the attack must not be charged to mallory's budget.
	uncharged bool
}

// sumOf returns SELECT 1+1+…+1 with n terms.
func sumOf(n int) string {
	var b strings.Builder
	b.Grow(2*n + 8)
	b.WriteString("SELECT 1")
	for range n - 1 {
		b.WriteString("+1")
	}
	return b.String()
}

// nested returns fn(fn(…(arg)…)), depth calls deep.
func nested(fn string, depth int, arg string) string {
	return strings.Repeat(fn+"(", depth) + arg + strings.Repeat(")", depth)
}

// inList returns "0,1,…,n-1".
func inList(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i)
	}
	return b.String()
}

// repeated returns n copies of s joined by sep.
func repeated(s, sep string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = s
	}
	return strings.Join(parts, sep)
}

func lit(q string) func() string { return func() string { return q } }

// resourceAttacks are the attacks of issue 11 and variants, against the
// attack server (limits: the defaults but max_execution_time 2s and
// max_statements_per_account 4). Default limits: max_statement_bytes 1 MiB,
// max_statement_tokens 100,000, max_operators 10,000, max_nesting 200,
// max_in_list 10,000, max_string_bytes 16 MiB; releases: 64 KiB values,
// 1 MiB work per row.
var resourceAttacks = []resourceAttack{
	// Statement size and shape (before: a 1M-term sum overflowed the
	// planner's goroutine stack and ended the process).
	{name: "Sum2MB", sql: func() string { return sumOf(1_000_000) }, want: refused(1153, "limits.max_statement_bytes"), bound: resRefuseBound},
	{name: "Sum10MB", sql: func() string { return sumOf(5_000_000) }, want: refused(1153, "limits.max_statement_bytes"), bound: resRefuseBound},
	{name: "Sum300kTerms", sql: func() string { return sumOf(300_000) }, want: refused(1473, "limits.max_operators"), bound: resRefuseBound},
	{name: "Columns150k", sql: func() string { return "SELECT " + repeated("1", ",", 150_000) }, want: refused(1153, "limits.max_statement_tokens"), bound: resRefuseBound},
	{name: "Sum12kTerms", sql: func() string { return sumOf(12_000) }, want: refused(1473, "limits.max_operators"), bound: resRefuseBound},
	{name: "Sum3000Terms", sql: func() string { return sumOf(3_000) }, want: anyOf(value("3000"), timedOut(), refused(1473, "limits.max_operators")), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "DeepParentheses", sql: func() string { return "SELECT " + strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000) }, want: refused(1473, "limits.max_nesting"), bound: resRefuseBound},
	{name: "Parentheses199", sql: func() string { return "SELECT " + strings.Repeat("(", 199) + "1" + strings.Repeat(")", 199) }, want: value("1"), bound: resRefuseBound},
	{name: "Unary2000", sql: func() string { return "SELECT " + strings.Repeat("- ", 2000) + "1" }, want: anyOf(value("1"), refused(1064, "syntax"), refused(1473, "limits.max_operators")), bound: resRefuseBound},
	// IN lists (before: 200k items planned for minutes, unstoppable).
	{name: "InList200k", sql: func() string { return "SELECT 1 IN (" + inList(200_000) + ")" }, want: refused(1153, "limits.max_statement_bytes"), bound: resRefuseBound},
	{name: "InList200kShort", sql: func() string { return "SELECT 1 IN (" + repeated("1", ",", 200_000) + ")" }, want: refused(1153, "limits.max_in_list"), bound: resRefuseBound},
	{name: "InList10001", sql: func() string { return "SELECT 1 IN (" + inList(10_001) + ")" }, want: refused(1153, "limits.max_in_list"), bound: resRefuseBound,
		symptom: func(o attackOutcome) string {
			if testmysql.ErrNo(o.err) == 1105 && strings.Contains(o.err.Error(), "limits.max_in_list") && strings.Contains(o.err.Error(), "(errno 1153)") {
				return "the max_in_list refusal reaches the client as error 1105 (\"… (errno 1153) (sqlstate 08S01)\"), not 1153: server.Limits.InListCheck runs inside " +
					"planner.GuardParser, and go-mysql-server's planbuilder (sql/planbuilder/parse.go:79) wraps every parser error in ErrSyntaxError"
			}
			return ""
		}},
	{name: "InList10000Public", sql: func() string { return "SELECT COUNT(*) FROM pub WHERE id IN (" + inList(10_000) + ")" }, want: value("2000"), bound: resRefuseBound},
	// Strings beyond limits.max_string_bytes (before: nested HEX, CONCAT,
	// TO_BASE64 doubled values until the process was killed).
	{name: "NestedHEX", sql: lit("SELECT LENGTH(" + nested("HEX", 30, "'a'") + ")"), want: truncated(), bound: resRefuseBound},
	{name: "NestedTO_BASE64", sql: lit("SELECT LENGTH(" + nested("TO_BASE64", 60, "REPEAT('a', 1000)") + ")"), want: truncated(), bound: resRefuseBound},
	{name: "NestedCONCAT", sql: lit("SELECT LENGTH(" + strings.Repeat("CONCAT(REPEAT('ab', 1000000), ", 12) + "'x'" + strings.Repeat(")", 12) + ")"), want: truncated(), bound: resRefuseBound},
	{name: "CONCAT20x16MB", sql: lit("SELECT LENGTH(CONCAT(" + repeated("REPEAT('a', 16000000)", ",", 20) + "))"), want: truncated(), bound: resRefuseBound, once: true},
	{name: "NestedHEXPublicTable", sql: lit("SELECT MAX(LENGTH(" + nested("HEX", 30, "s") + ")) FROM pub"), want: anyOf(timedOut(), truncated()), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "NestedHEXRelease", sql: lit("SELECT DISTINCT LENGTH(" + nested("HEX", 30, "note") + ") AS l FROM events"), want: anyOf(timedOut(), released()), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "NestedTO_BASE64Release", sql: lit("SELECT DISTINCT " + nested("TO_BASE64", 30, "note") + " AS l FROM events"), want: anyOf(timedOut(), released()), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "NestedCONCATRelease", sql: lit("SELECT DP_SET_UNION(" + strings.Repeat("CONCAT(note, ", 20) + "note" + strings.Repeat(")", 20) + ", user_id) AS r FROM events"), want: anyOf(timedOut(), released()), bound: resAttackExecTime + resExecSlack, once: true},
	// The string limit bounds each function's result (CONCAT is sized
	// before it is built), not what a statement holds at once: 60 values of
	// 4 MB are built before CONCAT sees them, and a row of 60 such columns
	// is 240 MB. The memory guard stops them (1041) or the row is served;
	// the process lives (before the guard: fatal error: out of memory in
	// sql.(*ByteBuffer).Double after 1.1–1.6 s). On a loaded machine
	// max_execution_time (2 s here) may stop either first (3024, seen after
	// 9.2 s at load average ~6): as good an answer, and one a scheduler
	// delay decides, so it is accepted.
	{name: "CONCAT60x4MB", sql: lit("SELECT LENGTH(CONCAT(" + repeated("REPEAT('a', 4000000)", ",", 60) + "))"), want: anyOf(truncated(), outOfMemory(), timedOut()), bound: resComputeBound, once: true},
	{name: "Columns60x4MB", sql: lit("SELECT " + repeated("REPEAT('a', 4000000)", ",", 60)), want: anyOf(refused(1153, "limits."), outOfMemory(), released(), timedOut()), bound: resComputeBound, once: true},
	// Aggregates and sorts hold what they accumulate: the memory guard
	// (limits.max_memory_bytes; 90% of GOMEMLIMIT here) stops them with 1041
	// while alice's release is served. Before it: GROUP_CONCAT / JSON_ARRAYAGG
	// of 2,000 values of 10 MB and a sort of 4M rows of 500 KB held 0.9–1.2
	// GiB or ended the process (fatal error: out of memory after 1.2–3.3 s).
	// At load average ~20, max_execution_time stopped GROUP_CONCAT and
	// JSON_ARRAYAGG (3024) before they grew past the guard: accepted too.
	{name: "GROUP_CONCATBig", sql: lit("SELECT LENGTH(GROUP_CONCAT(REPEAT('x', 4000000))) FROM pub"), want: anyOf(value("1024"), refused(1153, "limits."), outOfMemory(), timedOut()), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "JSON_ARRAYAGGBig", sql: lit("SELECT LENGTH(JSON_ARRAYAGG(REPEAT('x', 4000000))) FROM pub"), want: anyOf(refused(1153, "limits."), outOfMemory(), timedOut()), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "SortBigRows", sql: lit("SELECT COUNT(*) FROM (SELECT REPEAT(a.s, 5000) AS r FROM pub a, pub b ORDER BY 1) x"), want: anyOf(timedOut(), outOfMemory()), bound: resAttackExecTime + resExecSlack, once: true},
	// LIKE (linear matcher) and regular expressions.
	{name: "LIKEManyPercent", sql: lit("SELECT REPEAT('a', 100000) LIKE CONCAT(REPEAT('%a', 2000), 'b')"), want: value("0"), bound: resRefuseBound},
	// These two took 2.0 and 1.3 s at load average 20 (26 Nov 2026), so
	// max_execution_time (2 s) may stop them on a loaded machine: either
	// outcome is the server bounding the attack.
	{name: "LIKEManyPercentPublic", sql: lit("SELECT COUNT(*) FROM pub WHERE REPEAT(s, 100) LIKE CONCAT(REPEAT('%a', 200), 'zz')"), want: anyOf(value("0"), timedOut()), bound: resRefuseBound},
	{name: "LIKEManyPercentRelease", sql: lit("SELECT DISTINCT item FROM events WHERE note LIKE '" + strings.Repeat("%w", 200) + "zz'"), want: anyOf(released(), timedOut()), bound: resRefuseBound},
	// Regular expressions: RE2 semantics since the h-regex merge (before:
	// REPEAT('a', 30) REGEXP '(a*)*b' ran for minutes and froze the whole
	// process at the next garbage collection, since wazero's native code
	// cannot be preempted).
	{name: "RegexpBacktracking", sql: lit("SELECT REPEAT('a', 30) REGEXP '(a*)*b'"), want: value("0"), bound: resRefuseBound},
	{name: "RegexpBacktrackingPublic", sql: lit("SELECT COUNT(*) FROM pub WHERE REPEAT(s, 100) REGEXP '(a|ab|b)*c'"), want: value("2000"), bound: resRefuseBound},
	{name: "RegexpBacktrackingRelease", sql: lit("SELECT DISTINCT item FROM events WHERE note REGEXP '(w|w1|w2| )*zz'"), want: anyOf(released(), timedOut()), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "RegexpGroupsRelease", sql: lit("SELECT DISTINCT item FROM events WHERE REGEXP_LIKE(note, '" + strings.Repeat("(a?)", 500) + "')"), want: anyOf(released(), timedOut(), refused(1142, "")), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "RegexpGroups5000", sql: lit("SELECT 'a' REGEXP REPEAT('(a?)', 5000)"), want: anyOf(value("1"), refused(1139, ""), refused(1105, "too much memory")), bound: resRefuseBound, once: true},
	{name: "RegexpGroups20000", sql: lit("SELECT 'a' REGEXP REPEAT('(a?)', 20000)"), want: anyOf(value("1"), refused(1139, ""), refused(1105, "too much memory")), bound: resRefuseBound, once: true},
	{name: "REGEXP_REPLACEBig", sql: lit("SELECT LENGTH(REGEXP_REPLACE(REPEAT('a', 1000000), 'a', REPEAT('b', 1000)))"), want: truncated(), bound: resRefuseBound, once: true},
	// Mechanism parameters and the budget's edges (before: single_item with
	// ε = 1e-8 built an unbounded calibration table and crashed the
	// server; ε down to 5e-324 was accepted). Refused releases are not
	// charged.
	{name: "SingleItemTinyEpsilonPublic", sql: lit("SELECT DP_SET_UNION(s, id, 'mechanism=single_item, epsilon=1e-8, delta=1e-12') AS r FROM pub"), want: refused(1210, "epsilon"), bound: resRefuseBound, once: true},
	{name: "SingleItemTinyEpsilonRelease", sql: lit("SELECT DP_SET_UNION(item, user_id, 'mechanism=single_item, epsilon=1e-8, delta=1e-12') AS r FROM events"), want: refused(1210, "epsilon"), bound: resRefuseBound, once: true, uncharged: true},
	{name: "EpsilonBelowFloor", sql: lit("SELECT DP_SET_UNION(item, user_id, 'epsilon=5e-324') AS r FROM events"), want: refused(1210, "limits.min_epsilon"), bound: resRefuseBound, uncharged: true},
	{name: "DeltaBelowFloor", sql: lit("SELECT DP_SET_UNION(item, user_id, 'delta=5e-324') AS r FROM events"), want: refused(1210, "limits.min_delta"), bound: resRefuseBound, uncharged: true},
	{name: "SIPS100RoundsPublic", sql: lit("SELECT DP_SET_UNION(s, id, 'mechanism=dp_sips, rounds=100') AS r FROM pub"), want: anyOf(released(), refused(1210, "rounds")), bound: resRefuseBound, once: true},
	{name: "SIPS100RoundsRelease", sql: lit("SELECT DP_SET_UNION(item, user_id, 'mechanism=dp_sips, rounds=100') AS r FROM events"), want: anyOf(released(), refused(1210, "rounds")), bound: resRefuseBound, once: true},
	{name: "SIPS1000Rounds", sql: lit("SELECT DP_SET_UNION(item, user_id, 'mechanism=dp_sips, rounds=1000') AS r FROM events"), want: refused(1210, "rounds"), bound: resRefuseBound, uncharged: true},
	{name: "SIPS100RoundsSlow", sql: lit("SELECT DP_SET_UNION(CONCAT(user_id, note), user_id, 'mechanism=dp_sips, rounds=100, max_items=100') AS r FROM events"), want: timedOut(), bound: resAttackExecTime + time.Second, once: true,
		symptom: func(o attackOutcome) string {
			if testmysql.ErrNo(o.err) == 3024 || o.err == nil {
				return fmt.Sprintf("dp_sips is not stopped at max_execution_time: a release of 100 rounds over 200,000 distinct items (5.4 s "+
					"alone) answered after %v with max_execution_time %v, where the other releases stop at the limit (2.0 s); on demo.words with "+
					"500 ms, 3024 came after 1.8–2.1 s, its whole running time; in TestLoad, after 54.7 s under 30 s", o.took.Round(time.Millisecond), resAttackExecTime)
			}
			return ""
		}},
	// Execution time.
	{name: "CrossJoinPublic", sql: lit("SELECT COUNT(*) FROM pub a, pub b, pub c"), want: timedOut(), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "Sleep", sql: lit("SELECT SLEEP(100)"), want: timedOut(), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "RecursiveCTE", sql: lit("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < 100000000) SELECT COUNT(*) FROM r"), want: anyOf(timedOut(), refused(1105, "iteration limit")), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "SlowRelease", sql: lit(slowRelease), want: anyOf(timedOut(), released()), bound: resAttackExecTime + resExecSlack, once: true},
	{name: "SlowSetUnion", sql: lit("SELECT DP_SET_UNION(item, user_id) AS r FROM events WHERE " + slowFilter), want: anyOf(timedOut(), released()), bound: resAttackExecTime + resExecSlack, once: true},
	// A 10,000-item IN list inside a release is one hash lookup per row
	// (it ran for more than 60 s before): answered within the limit.
	{name: "InList10000Release", sql: lit("SELECT DISTINCT item FROM events WHERE user_id IN (" + inList(10_000) + ")"), want: released(), bound: resAttackExecTime + resExecSlack, once: true},
}

// TestResourceAttacks runs each attack of resourceAttacks against the
// attack server (a subprocess under the memory limit, max_execution_time
// 2s) as mallory, repeating fast ones until alice's release completes,
// and requires: the answer the attack lists within its bound, on every
// repetition; the server process alive; alice's release completing during
// the attack (within 30 s) and after it; mallory's connection still
// answering SELECT 1. The log has, per attack, what mallory saw, how long
// it took, the server's peak resident set, and alice's times against her
// baseline.
func TestResourceAttacks(t *testing.T) {
	fullRunOnly(t)
	lim := resLimits{MaxExecutionTime: resAttackExecTime, MaxStatementsPerAccount: 4}
	s := startResServer(t, lim)
	alice := newBystander(t, s)
	t.Logf("alice's release alone: %v", alice.base.Round(time.Millisecond))
	var summary strings.Builder
	fmt.Fprintf(&summary, "| attack | answer | time | repeats | peak RSS MiB | alice during | alice after |\n|---|---|---|---|---|---|---|\n")
	for _, a := range resourceAttacks {
		t.Run(a.name, func(t *testing.T) {
			if a.known != "" {
				skipKnown(t, a.known)
			}
			if gone, how := s.exitedWith(); gone {
				t.Logf("the previous attack ended the server (%s); starting a new one", how)
				s = startResServer(t, lim)
				alice.reconnect(t, s)
			}
			row, knownSymptom := runResourceAttack(t, s, alice, a)
			fmt.Fprintf(&summary, "| %s | %s |\n", a.name, row)
			if knownSymptom != "" {
				t.Skipf("known: %s", knownSymptom)
			}
		})
	}
	t.Log("attacks:\n" + summary.String())
}

// runResourceAttack runs one attack and asserts its requirements; it
// returns the summary row and the known symptom seen, if any.
func runResourceAttack(t *testing.T, s *resServer, alice *bystander, a resourceAttack) (string, string) {
	q := a.sql()
	var charged0 int64
	if a.uncharged {
		charged0 = malloryReleases(t, s)
	}
	s.resetPeak()
	mc := resConn(t, s.mallory)

	// Alice's release, started with the attack.
	type aliceResult struct {
		d   time.Duration
		err error
	}
	aliceDone := make(chan aliceResult, 1)
	go func() {
		d, err := alice.release()
		aliceDone <- aliceResult{d, err}
	}()
	var (
		outs    []attackOutcome
		during  *aliceResult
		symptom string
	)
	for len(outs) < resMaxRepeats {
		o := attackOnce(mc, q, a.bound+30*time.Second)
		outs = append(outs, o)
		failed := false
		err := a.want(o)
		if err == nil && o.took > a.bound {
			err = fmt.Errorf("answered after %v, more than the bound of %v", o.took.Round(time.Millisecond), a.bound)
		}
		if err != nil {
			if a.symptom != nil && symptom == "" {
				symptom = a.symptom(o)
			}
			if symptom == "" {
				t.Errorf("attack %d: %v", len(outs), err)
				failed = true
			}
		}
		if failed {
			break // once is enough to tell
		}
		if gone, _ := s.exitedWith(); gone || (o.err != nil && testmysql.ErrNo(o.err) == 0) {
			break // the connection or the server is gone: reported below
		}
		if a.once {
			break
		}
		select {
		case r := <-aliceDone:
			during = &r
		default:
		}
		if during != nil {
			break
		}
	}
	if during == nil {
		r := <-aliceDone
		during = &r
	}
	rss, peak := s.memory()
	if last := outs[len(outs)-1]; last.err != nil && testmysql.ErrNo(last.err) == 0 {
		s.settle(3 * time.Second)
	}
	s.requireAlive(t)
	if during.err != nil {
		t.Errorf("during the attack: %v", during.err)
	}
	// After: mallory's connection and alice's release.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	var one int
	if err := mc.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Errorf("mallory's connection no longer answers after the attack: %v", err)
	}
	cancel()
	after, err := alice.release()
	if err != nil {
		t.Errorf("after the attack: %v", err)
	}
	alive(t, s.admin)
	if a.uncharged {
		if n := malloryReleases(t, s) - charged0; n != 0 {
			t.Errorf("the refused release was charged %d times", n)
		}
	}

	var maxTook time.Duration
	for _, o := range outs {
		maxTook = max(maxTook, o.took)
	}
	first := outs[0]
	answer := "rows"
	if first.err != nil {
		answer = fmt.Sprintf("%d %s", testmysql.ErrNo(first.err), clipString(errMessage(first.err), 90))
	} else if len(first.res.Rows) == 1 && len(first.res.Rows[0]) == 1 {
		v := "NULL"
		if p := first.res.Rows[0][0]; p != nil {
			v = clipString(*p, 30)
		}
		answer = v
		if len(first.warnings) > 0 {
			answer += fmt.Sprintf(" (warning %s: %s)", first.warnings[0][1], clipString(first.warnings[0][2], 80))
		}
	}
	t.Logf("%s: %s; %d time(s), max %v; server RSS %.0f MiB, peak %.0f MiB; alice during %v, after %v (alone %v)",
		a.name, first, len(outs), maxTook.Round(time.Millisecond), rss, peak,
		during.d.Round(time.Millisecond), after.Round(time.Millisecond), alice.base.Round(time.Millisecond))
	row := fmt.Sprintf("%s | %v | %d | %.0f | %v | %v", answer, maxTook.Round(time.Millisecond), len(outs), peak,
		during.d.Round(time.Millisecond), after.Round(time.Millisecond))
	return row, symptom
}

// attackOnce sends q on c with a client-side bound, and reads the
// warnings of a statement that succeeded.
func attackOnce(c *dbsql.Conn, q string, clientBound time.Duration) attackOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), clientBound)
	defer cancel()
	start := time.Now()
	res, err := queryAll(ctx, c, q)
	o := attackOutcome{took: time.Since(start), err: err, res: res}
	if err == nil {
		if w, err := queryAll(ctx, c, "SHOW WARNINGS"); err == nil {
			o.warnings = w.Cells()
		}
	}
	return o
}

// errMessage returns a MySQL error's message without the driver's prefix.
func errMessage(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "): "); i >= 0 && strings.HasPrefix(msg, "Error ") {
		return msg[i+3:]
	}
	return msg
}

// slowRelease runs for seconds on the suite's table, so that it is still
// running when it is killed or its client goes away: each of its 200,000
// rows builds the first of twenty strings of 10,000 characters (each within
// limits.release_value_bytes at 4 bytes a character, so none is cut to
// NULL) and reaches the row's work budget at the second (docs/privacy.md
// §35: 16 KiB plus 64 bytes per byte of the row's values; it built all
// twenty, 800 KB of work, under limits.release_row_work alone). A
// release's time is bounded by its rows times that budget, so on idle cores
// it may end before the attack server's max_execution_time: the attacks
// that run it accept either. (It used to be a 10,000-item IN list, which
// releases now evaluate as one hash lookup per row; then three LPADs to
// 60,000 characters, which the value limit turns into NULL at once.)
var slowRelease = "SELECT DISTINCT item FROM events WHERE " + slowFilter

// slowFilter is slowRelease's filter.
var slowFilter = func() string {
	e := "note"
	for i := range 20 {
		e = fmt.Sprintf("LPAD(%s, 10000, '%c')", e, 'a'+i)
	}
	return "LENGTH(" + e + ") > 0"
}()

// processCount returns how many connections the administrator sees that
// match cond, an SQL condition on information_schema.processlist.
func processCount(t testing.TB, admin *dbsql.DB, cond string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE "+cond, args...).Scan(&n); err != nil {
		t.Fatalf("the administrator cannot read the process list: %v", err)
	}
	return n
}

// waitProcesses waits until processCount(cond, args) is n, up to timeout;
// it returns how long that took.
func waitProcesses(t testing.TB, admin *dbsql.DB, n int, timeout time.Duration, cond string, args ...any) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := processCount(t, admin, cond, args...)
		if got == n {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%d connections with %s %v after %v, want %d", got, cond, args, timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runAsync runs q on c in a goroutine; the channel receives its outcome.
func runAsync(c *dbsql.Conn, q string, clientBound time.Duration) <-chan attackOutcome {
	ch := make(chan attackOutcome, 1)
	go func() { ch <- attackOnce(c, q, clientBound) }()
	return ch
}

// aliceDuring runs alice's releases until stop is closed (at least one)
// and reports the first error and the slowest release.
func aliceDuring(alice *bystander, stop <-chan struct{}) <-chan aliceReport {
	ch := make(chan aliceReport, 1)
	go func() {
		var r aliceReport
		for {
			d, err := alice.release()
			r.n++
			r.slowest = max(r.slowest, d)
			if err != nil && r.err == nil {
				r.err = err
			}
			select {
			case <-stop:
				ch <- r
				return
			default:
			}
		}
	}()
	return ch
}

type aliceReport struct {
	n       int
	slowest time.Duration
	err     error
}

func (r aliceReport) check(t *testing.T) {
	t.Helper()
	if r.err != nil {
		t.Errorf("during the attack: %v", r.err)
	}
	t.Logf("alice during the attack: %d releases, the slowest %v", r.n, r.slowest.Round(time.Millisecond))
}

// TestResourceStatements attacks with statements that hold the server:
// more at once than the per-account limit, a release killed by an
// administrator, by the analyst from a second connection, or abandoned by
// its client, and session state that grows. The server: a subprocess under
// the memory limit with max_execution_time 10s and
// max_statements_per_account 4.
func TestResourceStatements(t *testing.T) {
	fullRunOnly(t)
	lim := resLimits{MaxExecutionTime: 10 * time.Second, MaxStatementsPerAccount: 4}
	s := startResServer(t, lim)
	alice := newBystander(t, s)
	admin := openGo(t, s.admin)
	const killBound = 5 * time.Second // a KILL QUERY must stop the statement within

	// Four statements of mallory's at once, then two more: refused with
	// 1226 naming the setting (one through COM_STMT_EXECUTE), alice
	// unaffected (another account).
	t.Run("BeyondStatementsPerAccount", func(t *testing.T) {
		stop := make(chan struct{})
		during := aliceDuring(alice, stop)
		var running []<-chan attackOutcome
		for range lim.MaxStatementsPerAccount {
			running = append(running, runAsync(resConn(t, s.mallory), "SELECT SLEEP(4)", 40*time.Second))
		}
		waitProcesses(t, admin, lim.MaxStatementsPerAccount, 10*time.Second, "user = 'mallory' AND info LIKE 'SELECT SLEEP%'")
		want := refused(1226, "limits.max_statements_per_account")
		o := attackOnce(resConn(t, s.mallory), "SELECT 1", resRefuseBound)
		if err := want(o); err != nil || o.took > resRefuseBound {
			t.Errorf("a fifth statement: %v (after %v)", err, o.took)
		}
		t.Logf("a fifth statement: %s", o)
		pc := resConn(t, s.mallory)
		start := time.Now()
		var one int
		err := pc.QueryRowContext(context.Background(), "SELECT ? + 0", 1).Scan(&one) // COM_STMT_PREPARE + EXECUTE
		o = attackOutcome{took: time.Since(start), err: err}
		if err := want(o); err != nil {
			t.Errorf("a fifth statement, prepared: %v", err)
		}
		t.Logf("a fifth statement, prepared: %s", o)
		for i, ch := range running {
			if o := <-ch; o.err != nil || o.took > 10*time.Second {
				t.Errorf("running statement %d: %s", i, o)
			}
		}
		close(stop)
		(<-during).check(t)
		// The slots are free again.
		if o := attackOnce(resConn(t, s.mallory), "SELECT 1", resRefuseBound); o.err != nil {
			t.Errorf("after the four ended: %s", o)
		}
		s.requireAlive(t)
	})

	// An administrator's KILL QUERY stops an analyst's running release and
	// the connection stays usable.
	t.Run("AdminKillsRelease", func(t *testing.T) {
		o := testKill(t, s, alice, admin, func(t *testing.T, id int64) (time.Duration, error) {
			start := time.Now()
			_, err := admin.ExecContext(context.Background(), fmt.Sprintf("KILL QUERY %d", id))
			return time.Since(start), err
		}, killBound)
		// MySQL answers a statement stopped by KILL QUERY with 1317.
		t.Run("ErrorCode", func(t *testing.T) {
			if code := testmysql.ErrNo(o.err); code != 1317 {
				t.Errorf("a statement stopped by KILL QUERY answers %d %q, where MySQL answers 1317 \"Query execution was interrupted\"", code, errMessage(o.err))
			}

		})
	})

	// The analyst stops their own release from a second connection (issue
	// 11: "KILL QUERY (an analyst on their own connections …)").
	t.Run("AnalystKillsOwnRelease", func(t *testing.T) {
		second := resConn(t, s.mallory)
		testKill(t, s, alice, admin, func(t *testing.T, id int64) (time.Duration, error) {
			start := time.Now()
			_, err := second.ExecContext(context.Background(), fmt.Sprintf("KILL QUERY %d", id))
			if err != nil && testmysql.ErrNo(err) != 0 {
				// Refused: stop the release as the administrator, then
				// report the known failure.
				admin.ExecContext(context.Background(), fmt.Sprintf("KILL QUERY %d", id))
				t.Cleanup(func() {
					if !t.Failed() {
						t.Skipf("known: an analyst's KILL QUERY of their own running statement is refused: %v", err)
					}
				})
				return time.Since(start), nil
			}
			return time.Since(start), err
		}, killBound)
	})

	// A client that goes away in the middle of a statement: the server
	// drops it (go-mysql-server polls the socket every 5 s while it sends
	// rows), for a release and for a plain query.
	t.Run("DisconnectMidRelease", func(t *testing.T) { testDisconnect(t, s, alice, admin, slowRelease, true) })
	t.Run("DisconnectMidQuery", func(t *testing.T) {
		testDisconnect(t, s, alice, admin, "SELECT COUNT(*) FROM pub a, pub b, pub c", false)
	})

	// Session state an analyst can grow: user variables of 4 MB each
	// (max_string_bytes), bounded together per session by
	// limits.max_user_variable_bytes (16 MiB). Before the bound: 72–79
	// variables of 16 MB on one connection ended the process (fatal error:
	// out of memory in strings.Repeat under rowexec.setUserVar, 1.2–1.3 GB
	// in use, RLIMIT_AS 3 GiB).
	t.Run("UserVariables", func(t *testing.T) {
		c := resConn(t, s.mallory)
		refusedAt := -1
		for i := range 120 {
			o := attackOnce(c, fmt.Sprintf("SET @v%d = REPEAT('a', 4000000)", i), resRefuseBound)
			if o.err != nil {
				t.Logf("SET @v%d: %s", i, o)
				if err := outOfMemory()(o); err != nil && !strings.Contains(o.err.Error(), "limits.max_user_variable_bytes") {
					t.Errorf("SET @v%d: want error 1041 naming limits.max_user_variable_bytes, got %v", i, o.err)
				}
				refusedAt = i
				break
			}
		}
		if refusedAt < 0 || refusedAt > 8 {
			t.Errorf("user variables of 4 MB: refused at the %dth, want within the first 8 (16 MiB)", refusedAt)
		}
		// Freeing a variable makes room again.
		if o := attackOnce(c, "SET @v0 = NULL", resRefuseBound); o.err != nil {
			t.Errorf("SET @v0 = NULL: %v", o.err)
		}
		if o := attackOnce(c, fmt.Sprintf("SET @v%d = REPEAT('a', 4000000)", refusedAt), resRefuseBound); o.err != nil {
			t.Errorf("after freeing @v0: %v", o.err)
		}
		s.requireAlive(t)
		if _, err := alice.release(); err != nil {
			t.Errorf("after: %v", err)
		}
	})
}

// malloryReleases returns the releases charged to mallory (DP_BUDGET()).
func malloryReleases(t testing.TB, s *resServer) int64 {
	t.Helper()
	db, err := clients.OpenGo(s.mallory)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow("SELECT releases FROM DP_BUDGET()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// testKill starts mallory's slow release, kills it with kill once it runs
// and requires: the release answers an error within bound of the KILL,
// the connection answers SELECT 1, alice's releases complete during and
// after, the server lives, and the release is charged at most once.
func testKill(t *testing.T, s *resServer, alice *bystander, admin *dbsql.DB, kill func(t *testing.T, id int64) (time.Duration, error), bound time.Duration) attackOutcome {
	before := malloryReleases(t, s)
	stop := make(chan struct{})
	during := aliceDuring(alice, stop)
	c := resConn(t, s.mallory)
	id := connectionID(t, c)
	ch := runAsync(c, slowRelease, 60*time.Second)
	waitProcesses(t, admin, 1, 10*time.Second, "id = ? AND info LIKE 'SELECT DISTINCT item%'", id)
	time.Sleep(300 * time.Millisecond) // into the scan
	killed := time.Now()
	d, err := kill(t, id)
	if err != nil {
		t.Fatalf("KILL QUERY %d: %v (after %v)", id, err, d)
	}
	o := <-ch
	stopped := time.Since(killed)
	close(stop)
	(<-during).check(t)
	t.Logf("KILL QUERY answered in %v; the release answered %v after the KILL: %s", d.Round(time.Millisecond), stopped.Round(time.Millisecond), o)
	switch {
	case o.err == nil:
		t.Errorf("the killed release completed: %s", o)
	case testmysql.ErrNo(o.err) == 0:
		t.Errorf("the killed release's connection broke: %v", o.err)
	case stopped > bound:
		t.Errorf("the release stopped %v after the KILL, more than %v", stopped.Round(time.Millisecond), bound)
	}
	var one int
	if err := c.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Errorf("the connection no longer answers after KILL QUERY: %v", err)
	}
	if n := malloryReleases(t, s) - before; n > 1 {
		t.Errorf("the killed release was charged %d times", n)
	} else {
		t.Logf("the killed release was charged %d time(s)", n)
	}
	s.requireAlive(t)
	if _, err := alice.release(); err != nil {
		t.Errorf("after: %v", err)
	}
	return o
}

// disconnectBound bounds how long after its client went away a statement
// may go on: go-mysql-server checks the socket every 5 s.
const disconnectBound = 8 * time.Second

// testDisconnect sends q as mallory, gives up after 500 ms (the driver
// closes the connection) and requires the server to drop the statement and
// the connection within disconnectBound, alice's releases to complete
// during and after, and a release to be charged at most once.
func testDisconnect(t *testing.T, s *resServer, alice *bystander, admin *dbsql.DB, q string, release bool) {
	before := malloryReleases(t, s)
	stop := make(chan struct{})
	during := aliceDuring(alice, stop)
	c := resConn(t, s.mallory)
	id := connectionID(t, c)
	o := attackOnce(c, q, 500*time.Millisecond)
	t.Logf("the client gave up: %s", o)
	c.Close()
	left := time.Now()
	var took time.Duration
	for processCount(t, admin, "id = ?", id) > 0 {
		took = time.Since(left)
		if took > s.limits.MaxExecutionTime+resExecSlack {
			t.Fatalf("the statement is still running %v after its client left, beyond max_execution_time %v", took, s.limits.MaxExecutionTime)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took = time.Since(left)
	close(stop)
	(<-during).check(t)
	t.Logf("the server dropped the statement and the connection %v after the client left", took.Round(time.Millisecond))
	if n := malloryReleases(t, s) - before; n > 1 || (!release && n != 0) {
		t.Errorf("charged %d times", n)
	} else if release {
		t.Logf("the abandoned release was charged %d time(s)", n)
	}
	s.requireAlive(t)
	if _, err := alice.release(); err != nil {
		t.Errorf("after: %v", err)
	}
	if took > disconnectBound {
		t.Errorf("the server dropped the statement %v after its client left, more than %v", took.Round(time.Millisecond), disconnectBound)
	}
}
