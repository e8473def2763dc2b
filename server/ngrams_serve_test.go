package server_test

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	gmssql "github.com/dolthub/go-mysql-server/sql"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testengine"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/demo"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

type ngramRow struct {
	ngram string
	n     int
}

// TestServerNgrams runs DP_NGRAMS through go-sql-driver/mysql on a real
// loopback connection over the demo data: docs/ngrams.md's example, a
// server-side prepared statement with ? arguments, errors that leave the
// connection usable, and a full release at a large ε.
func TestServerNgrams(t *testing.T) {
	addr := startServer(t)
	db := openDB(t, addr, "demo")
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	scan := func(q string, args ...any) ([]ngramRow, error) {
		rows, err := conn.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []ngramRow
		for rows.Next() {
			var r ngramRow
			if err := rows.Scan(&r.ngram, &r.n); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, rows.Err()
	}

	// docs/ngrams.md's example, and the column types clients see.
	rows, err := conn.QueryContext(ctx, "SELECT * FROM DP_NGRAMS('demo.posts', 'body', 'user_id', 'epsilon=4') WHERE n = 2 LIMIT 10")
	if err != nil {
		t.Fatal(err)
	}
	cts, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	if len(cts) != 2 || cts[0].Name() != "ngram" || cts[0].DatabaseTypeName() != "VARCHAR" || cts[1].Name() != "n" || cts[1].DatabaseTypeName() != "INT" {
		t.Errorf("columns %s %s, %s %s", cts[0].Name(), cts[0].DatabaseTypeName(), cts[1].Name(), cts[1].DatabaseTypeName())
	}
	var got int
	for rows.Next() {
		var r ngramRow
		if err := rows.Scan(&r.ngram, &r.n); err != nil {
			t.Fatal(err)
		}
		if r.n != 2 || len(strings.Fields(r.ngram)) != 2 {
			t.Errorf("row %+v", r)
		}
		got++
	}
	rows.Close()
	if got != 10 {
		t.Errorf("docs/ngrams.md example returned %d rows, want 10", got)
	}

	// A server-side prepared statement (COM_STMT_PREPARE, then EXECUTE)
	// whose table-function arguments are all ?.
	stmt, err := conn.PrepareContext(ctx, "SELECT ngram, n FROM DP_NGRAMS(?, ?, ?, ?) WHERE n = ? ORDER BY ngram LIMIT 5")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	for _, n := range []int{1, 2} {
		rows, err := stmt.QueryContext(ctx, "demo.posts", "body", "user_id", "epsilon=4, max_n=2", n)
		if err != nil {
			t.Fatal(err)
		}
		var rs []string
		for rows.Next() {
			var r ngramRow
			if err := rows.Scan(&r.ngram, &r.n); err != nil {
				t.Fatal(err)
			}
			if r.n != n {
				t.Errorf("prepared n = %d: row %+v", n, r)
			}
			rs = append(rs, r.ngram)
		}
		rows.Close()
		if len(rs) != 5 || !slices.IsSorted(rs) {
			t.Errorf("prepared n = %d: %q", n, rs)
		}
	}
	// Bad arguments of the same statement: a MySQL error, and the
	// connection stays usable.
	_, err = stmt.QueryContext(ctx, "demo.nothing", "body", "user_id", "epsilon=4", 1)
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1146 || me.Message != "Table 'demo.nothing' doesn't exist (DP_NGRAMS reads base tables, not views)" {
		t.Fatalf("unknown table: %v", err)
	}
	_, err = stmt.QueryContext(ctx, "demo.posts", "body", "user_id", "max_n=11", 1)
	if !errors.As(err, &me) || me.Number != 1210 || me.Message != "DP_NGRAMS: max_n must be an integer from 1 to 10, got 11" {
		t.Fatalf("max_n = 11: %v", err)
	}
	_, err = scan("SELECT * FROM DP_NGRAMS('posts', 'user_id', 'user_id')")
	if !errors.As(err, &me) || me.Number != 1210 || !strings.Contains(me.Message, "is BIGINT, not text") {
		t.Fatalf("numeric text column: %v", err)
	}

	// The whole release at a large ε: ordered by n then ngram, n tokens
	// per n-gram, several levels populated.
	all, err := scan("SELECT * FROM DP_NGRAMS('posts', 'body', 'user_id', 'epsilon=10')")
	if err != nil {
		t.Fatal(err)
	}
	perLevel := map[int]int{}
	for i, r := range all {
		if len(strings.Fields(r.ngram)) != r.n || strings.Join(strings.Fields(r.ngram), " ") != r.ngram || strings.ToLower(r.ngram) != r.ngram {
			t.Errorf("malformed n-gram %+v", r)
		}
		if i > 0 && cmp.Or(cmp.Compare(all[i-1].n, r.n), strings.Compare(all[i-1].ngram, r.ngram)) >= 0 {
			t.Errorf("rows %d and %d out of order: %+v, %+v", i-1, i, all[i-1], r)
		}
		perLevel[r.n]++
	}
	t.Logf("demo.posts at ε = 10: released per level %v", perLevel)
	if perLevel[1] < 500 || perLevel[2] < 50 || perLevel[3] < 1 || len(perLevel) > 3 {
		t.Errorf("released per level %v", perLevel)
	}
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM DP_NGRAMS('posts', 'body', 'user_id', 'epsilon=10') WHERE n = 2").Scan(&got); err != nil || got < 50 {
		t.Errorf("COUNT over the release: %d, %v", got, err)
	}
}

// TestServerNgramsGoverned: over the wire, a governed analyst's prepared
// DP_NGRAMS is charged once, with the statement's text, and a refused
// charge reaches the client as the Governor's error.
func TestServerNgramsGoverned(t *testing.T) {
	reads := new(atomic.Int64)
	gov := &testengine.FakeGov{Analysts: map[string]bool{"alice": true}, Units: map[string]string{"mydb.notes": "user_id"}, Reads: reads}
	e, err := server.NewEngine(server.Config{
		Provider:  testengine.CountingProvider{Provider: testengine.NgramsProvider(t), Reads: reads},
		Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(7) }, Governor: gov},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := testserver.Serve(t, e, server.ServerConfig{DefaultDatabase: "mydb"})
	db := testmysql.Connect(t, testmysql.Login{Addr: s.Addr(), User: "alice", DB: "mydb"})

	const q = "SELECT COUNT(*) FROM DP_NGRAMS(?, 'body', ?, 'epsilon=0.5, alpha=6, eta=1e-9')"
	var n int
	if err := db.QueryRow(q, "notes", "user_id").Scan(&n); err != nil {
		t.Fatal(err)
	}
	gov.Mu.Lock()
	charges := gov.Charges
	gov.Mu.Unlock()
	if len(charges) != 1 || charges[0].Query != q || charges[0].Epsilon != 0.5 || charges[0].Table != "notes" {
		t.Fatalf("charges %+v", charges)
	}
	gov.Counts()

	gov.ChargeErr = errors.New("privacy budget exceeded: no ε left")
	err = db.QueryRow(q, "notes", "user_id").Scan(&n)
	if err == nil || !strings.Contains(err.Error(), "privacy budget exceeded: no ε left") {
		t.Fatalf("refused charge: %v", err)
	}
	if _, _, r := gov.Counts(); r != 0 {
		t.Fatalf("%d scans after a refused charge", r)
	}
	var me *gomysql.MySQLError
	err = db.QueryRow(q, "notes", "uname").Scan(&n)
	if !errors.As(err, &me) || me.Number != 1142 || !strings.Contains(me.Message, "is the column 'user_id'") {
		t.Fatalf("wrong privacy unit: %v", err)
	}
}

// BenchmarkNgramsDemo times one DP_NGRAMS release (T = 3, ε = 4) over
// demo.posts (67,290 posts, 740,996 tokens) on the embedded engine, from
// the query to the last row:
//
//	go test -run '^$' -bench NgramsDemo -benchtime 5x ./server/
func BenchmarkNgramsDemo(b *testing.B) {
	p, err := storage.NewProvider()
	if err != nil {
		b.Fatal(err)
	}
	ddb, _, err := demo.New()
	if err != nil {
		b.Fatal(err)
	}
	if err := p.AddDatabase(ddb); err != nil {
		b.Fatal(err)
	}
	e, err := server.NewEngine(server.Config{Provider: p})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ResetTimer()
	for b.Loop() {
		ctx := server.NewContext(context.Background(), "", "demo")
		_, it, _, err := e.Query(ctx, "SELECT * FROM DP_NGRAMS('posts', 'body', 'user_id', 'epsilon=4')")
		if err != nil {
			b.Fatal(err)
		}
		rows, err := gmssql.RowIterToRows(ctx, it)
		if err != nil || len(rows) == 0 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
		b.ReportMetric(float64(len(rows)), "ngrams/op")
	}
}
