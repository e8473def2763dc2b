package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/integration/replay"
	"github.com/dpsql/dpsql/internal/testserver"
)

// Hostile data and hostile SQL, through the governed server as an analyst:
// every statement gets a DP release or a clean MySQL error, the connection
// keeps answering, nothing protected leaks, and the server stays up.

// hostileTable is a protected table of the hostile deployment, written as
// TSV (NULL is \N).
type hostileTable struct {
	name string
	rows func(emit func(unit, item string))
}

const (
	hostileBigCell = 1 << 20 // bytes of the oversized cells
	hostileHeavy   = 1_000_000
)

var hostileTables = []hostileTable{
	// Oversized cells, invalid UTF-8, NULLs and empty privacy units, control
	// and 4-byte characters, next to 300 users who share "common" and
	// "café ☕ 𝄞".
	{"cells", func(emit func(unit, item string)) {
		for u := range 300 {
			unit := fmt.Sprintf("p%d", u)
			emit(unit, "common")
			emit(unit, "café ☕ 𝄞")
			emit(unit, `\N`)
		}
		emit("p1", strings.Repeat("α", hostileBigCell/2))
		emit("p2", "big "+strings.Repeat("z", hostileBigCell))
		emit("p3", "bad \xff\xfe utf8 \xc3\x28 here")
		emit("p4", "nul \x00 byte and bell \x07")
		emit(`\N`, "a row without privacy unit")
		emit("", "a row with an empty privacy unit")
		emit(`\N`, `\N`)
	}},
	// Every row has a NULL privacy unit or a NULL item.
	{"nulls", func(emit func(unit, item string)) {
		for u := range 500 {
			emit(`\N`, fmt.Sprintf("orphan %d", u%7))
			emit(fmt.Sprintf("n%d", u), `\N`)
		}
	}},
	// One user with a million distinct items, 100 users sharing a few.
	{"heavy", func(emit func(unit, item string)) {
		for i := range hostileHeavy {
			emit("whale", fmt.Sprintf("whale item %d", i))
		}
		for u := range 100 {
			for k := range 5 {
				emit(fmt.Sprintf("h%d", u), fmt.Sprintf("shared %d", k))
			}
		}
	}},
	// A table with a single user.
	{"solo", func(emit func(unit, item string)) {
		for i := range 1000 {
			emit("hermit", fmt.Sprintf("solitary thought %d", i%37))
		}
	}},
}

// startHostile writes the hostile tables and serves them (database
// hostile, analyst with an ample budget); it returns the server and the
// leak check of the tables' secrets.
func startHostile(t *testing.T) (*govServer, *leakCheck) {
	t.Helper()
	if testing.Short() {
		// Minutes of a loaded 2-core machine: the full run's, not the
		// quick lane's.
		t.Skip("-short: hostile input over 1 MB cells and a user with 10⁶ items")
	}
	dir := t.TempDir()
	leaks := newLeakCheck()
	var datasets strings.Builder
	for _, ht := range hostileTables {
		path := filepath.Join(dir, ht.name+".tsv")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		scan := newTableScan("hostile." + ht.name)
		ht.rows(func(unit, item string) {
			fmt.Fprintf(w, "%s\t%s\n", unit, item)
			if unit != `\N` && unit != "" && item != `\N` {
				scan.add(unit, item)
			}
		})
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		scan.into(leaks)
		fmt.Fprintf(&datasets, `  - database: hostile
    table: %s
    file: %s
    null: '\N'
    columns:
      - {name: user_id, type: VARCHAR(64)}
      - {name: item, type: TEXT}
    privacy_unit: user_id
`, ht.name, path)
	}
	srv := testserver.GovernedYAML(t, dir, fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
datasets:
%s%s`, datasets.String(), testserver.AccountsYAML(t, adminPassword, analystPassword, "hostile", 10000, 0.1)))
	host, port := splitAddr(t, srv.Addr())
	s := &govServer{Governed: srv, name: "hostile", db: "hostile", dataDir: filepath.Join(dir, "data"),
		analyst: clients.Target{Host: host, Port: port, User: "analyst", Password: analystPassword, Database: "hostile"},
		admin:   clients.Target{Host: host, Port: port, User: "admin", Password: adminPassword, Database: "hostile"},
	}
	for _, ht := range hostileTables {
		s.protects = append(s.protects, "hostile."+ht.name)
	}
	// Public values: the deployment's identifiers.
	return s, leaks.withPublic("hostile", "cells", "nulls", "heavy", "solo", "user_id", "item", "analyst")
}

// hostileStatements are the text-protocol statements of TestHostile.
func hostileStatements() []string {
	big := strings.Repeat("y", hostileBigCell)
	var out []string
	for _, ht := range hostileTables {
		tbl := ht.name
		out = append(out,
			"SELECT DISTINCT item FROM "+tbl,
			"SELECT item FROM "+tbl+" GROUP BY item",
			"SELECT DP_SET_UNION(item, user_id) FROM "+tbl,
			"SELECT DP_SET_UNION(item, user_id, 'max_items=1000000') FROM "+tbl,
			"SELECT ngram, n FROM DP_NGRAMS('hostile."+tbl+"', 'item', 'user_id')",
			"SELECT DISTINCT user_id FROM "+tbl,
			"SELECT DISTINCT item, user_id FROM "+tbl+" WHERE item IS NULL OR user_id IS NULL",
		)
	}
	out = append(out,
		// Oversized strings: in a filter, as an option, as a table name, as
		// a key computed from protected rows.
		"SELECT DISTINCT item FROM cells WHERE item <> '"+big+"'",
		"SELECT DP_SET_UNION(item, user_id, '"+big+"') FROM cells",
		"SELECT DP_SET_UNION(item, user_id, 'epsilon="+strings.Repeat("9", 100_000)+"') FROM cells",
		"SELECT * FROM DP_NGRAMS('"+big+"', 'item', 'user_id')",
		"SELECT * FROM DP_NGRAMS('hostile.cells', '"+big+"', 'user_id')",
		"SELECT DISTINCT REPEAT(item, 100) AS r FROM cells WHERE user_id IN ('p1', 'p2', 'p5')",
		"SELECT DISTINCT CONCAT(item, '"+big+"') AS r FROM solo",
		// Results that would be terabytes (go-mysql-server v0.20.0 alone dies
		// of a fatal out-of-memory error: gmsfix.Guarded).
		"SELECT LENGTH(REPEAT(REPEAT('xxxxxxxxxx', 1000000), 2000000)) AS l",
		"SELECT DISTINCT REPEAT(item, 2000000000) AS r FROM cells",
		"SELECT DP_SET_UNION(LPAD(item, 2000000000, 'ab'), user_id) FROM cells",
		"SELECT DISTINCT REPLACE(item, 'o', REPEAT('o', 1000000000)) AS r FROM cells",
		"SELECT LENGTH(SPACE(2000000000)) AS l",
		// Invalid UTF-8 in the statement text.
		"SELECT DISTINCT item FROM cells WHERE item <> '\xff\xfe'",
		"SELECT DP_SET_UNION(item, user_id, 'epsilon=\xff') FROM cells",
		"SELECT * FROM DP_NGRAMS('hostile.\xc3\x28', 'item', 'user_id')",
		"SELECT DISTINCT item AS `\xff` FROM cells",
		"SELECT DISTINCT CONVERT(item USING latin1) AS l FROM cells",
		"SELECT DISTINCT HEX(item) AS h FROM cells",
		// NULLs everywhere.
		"SELECT DP_SET_UNION(NULL, NULL) FROM cells",
		"SELECT DP_SET_UNION(NULL, user_id) FROM cells",
		"SELECT DP_SET_UNION(item, user_id, NULL) FROM cells",
		"SELECT * FROM DP_NGRAMS(NULL, NULL, NULL)",
		"SELECT * FROM DP_NGRAMS('hostile.cells', NULL, 'user_id')",
		"SELECT * FROM DP_NGRAMS('hostile.cells', 'item', 'user_id', NULL)",
		"SELECT DISTINCT NULL FROM cells",
		"SELECT DISTINCT item FROM cells WHERE NULL",
		"SELECT DISTINCT NULLIF(item, 'common') AS x FROM cells",
		"SET dp_epsilon = NULL",
		"SET dp_max_items = NULL",
		"SET dp_mechanism = NULL",
		"SELECT DISTINCT item FROM cells",
		// Extreme options.
		"SELECT DP_SET_UNION(item, user_id, 'epsilon=1e308, delta=0.999999') FROM heavy",
		"SELECT DP_SET_UNION(item, user_id, 'epsilon=1e-300') FROM heavy",
		"SELECT * FROM DP_NGRAMS('hostile.heavy', 'item', 'user_id', 'max_n=10, max_items=1000000, epsilon=1000')",
		"SELECT * FROM DP_BUDGET()",
	)
	return out
}

// TestHostile sends hostile SQL over hostile data through the server as an
// analyst, one connection, and requires a release or a clean MySQL error
// for each statement (the replay runner's classification: no panic,
// driver error, dropped connection or timeout, and the connection answers
// SELECT 1 afterwards), no leak, and a server that still serves new
// connections.
func TestHostile(t *testing.T) {
	s, leaks := startHostile(t)
	var qs []replay.Query
	for i, q := range hostileStatements() {
		qs = append(qs, replay.Query{File: "hostile", Line: i + 1, Source: "TestHostile", SQL: q})
	}
	r := replay.Runner{Target: s.analyst, KeepRows: -1, Timeout: 2 * time.Minute}
	res := runReplay(t, r, qs)
	for _, x := range res {
		if x.Outcome == replay.Failure {
			t.Errorf("%s (%s): %s", x.ID(), clipString(x.Sent, 200), clipString(x.Message, 500))
		}
		leaks.checkRows(t, fmt.Sprintf("%s (%s)", x.ID(), clipString(x.Sent, 80)), x.Rows)
	}
	alive(t, s.analyst)
	alive(t, s.admin)
}

// TestHostilePrepared sends hostile arguments to server-side prepared
// statements: NULLs, invalid UTF-8, oversized strings and wrong types in
// every argument of DISTINCT, DP_SET_UNION and DP_NGRAMS.
func TestHostilePrepared(t *testing.T) {
	s, leaks := startHostile(t)
	big := strings.Repeat("q", hostileBigCell)
	hostile := []any{nil, "\xff\xfe", big, "", int64(-1), 1e308, []byte{0, 1, 2}}
	var stmts []clients.Statement
	for _, a := range hostile {
		stmts = append(stmts,
			clients.Prepare("SELECT DISTINCT item FROM cells WHERE item <> ?", a),
			clients.Prepare("SELECT DP_SET_UNION(item, user_id, ?) FROM cells", a),
			clients.Prepare("SELECT ngram FROM DP_NGRAMS(?, 'item', 'user_id')", a),
			clients.Prepare("SELECT ngram FROM DP_NGRAMS('hostile.cells', ?, 'user_id')", a),
			clients.Prepare("SELECT ngram FROM DP_NGRAMS('hostile.cells', 'item', ?)", a),
			clients.Prepare("SELECT ngram FROM DP_NGRAMS('hostile.cells', 'item', 'user_id', ?)", a),
		)
	}
	stmts = append(stmts, clients.Query("SELECT 1"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := clients.GoDriver{}.Run(ctx, s.analyst, stmts)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		desc := fmt.Sprintf("%s %s", clipString(stmts[i].SQL, 80), clipString(fmt.Sprintf("%q", stmts[i].Args), 40))
		switch {
		case r.Error == nil:
			t.Logf("%s → %d rows", desc, len(r.Rows))
		case r.Error.Code == 0:
			t.Errorf("%s → not a MySQL error: %v", desc, clipString(r.Error.Message, 300))
		default:
			t.Logf("%s → %d %s", desc, r.Error.Code, clipString(r.Error.Message, 150))
		}
		leaks.checkRows(t, desc, r.Rows)
	}
	if last := res[len(res)-1]; last.Error != nil {
		t.Errorf("the connection no longer answers: %v", last.Error)
	}
	alive(t, s.analyst)
}
