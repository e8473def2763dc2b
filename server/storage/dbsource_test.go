package storage_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/internal/testdb"
	"github.com/dpsql/dpsql/server/storage"
)

// dbServers starts both servers with the same orders table.
func dbServers(t *testing.T) []*testdb.Server {
	t.Helper()
	my := testdb.MariaDB(t)
	my.Exec(t, `CREATE TABLE orders (user_id BIGINT NOT NULL, item VARCHAR(32), amount DECIMAL(10,2), price DOUBLE, day DATE,
		at DATETIME(6), flag BOOLEAN, note TEXT, qty INT UNSIGNED, shape POINT)`,
		`INSERT INTO orders VALUES
		 (1, 'apple', 1.50, 0.25, '2024-01-02', '2024-01-02 03:04:05.123456', TRUE, NULL, 3, POINT(1,2)),
		 (2, '\\N', NULL, NULL, NULL, NULL, FALSE, '', 0, NULL)`)
	pg := testdb.PostgreSQL(t)
	pg.Exec(t, `CREATE TABLE orders (user_id BIGINT NOT NULL, item VARCHAR(32), amount NUMERIC(10,2), price DOUBLE PRECISION, day DATE,
		at TIMESTAMP(6), flag BOOLEAN, note TEXT, qty INTEGER, shape INTERVAL)`,
		`INSERT INTO orders VALUES
		 (1, 'apple', 1.50, 0.25, '2024-01-02', '2024-01-02 03:04:05.123456', TRUE, NULL, 3, '1 day'),
		 (2, '\N', NULL, NULL, NULL, NULL, FALSE, '', 0, NULL)`)
	return []*testdb.Server{my, pg}
}

func rowsOf(t *testing.T, tbl *storage.Table) []sql.Row {
	t.Helper()
	ctx := sql.NewEmptyContext()
	parts, err := tbl.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []sql.Row
	for {
		p, err := parts.Next(ctx)
		if err != nil {
			break
		}
		it, err := tbl.PartitionRows(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := sql.RowIterToRows(ctx, it)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
	return out
}

// TestLoadDBTypes loads the same table from MariaDB and PostgreSQL: types
// from the schema, values (NULL, the text \N, the empty string, decimals,
// microseconds, booleans), an unknown type refused with a fix, and
// declared columns overriding the schema.
func TestLoadDBTypes(t *testing.T) {
	for _, s := range dbServers(t) {
		t.Run(s.Driver, func(t *testing.T) {
			src := storage.DBSource{Driver: s.Driver, DSN: s.DSN, Query: "SELECT user_id, item, amount, price, day, at, flag, note, qty FROM orders ORDER BY user_id", Describe: s.Driver + " query"}
			tbl, info, err := storage.LoadDB(context.Background(), "orders", src, storage.DBLoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range info.Columns {
				got = append(got, c.Name+" "+c.Type.String())
			}
			want := "user_id BIGINT, item TEXT, amount DOUBLE, price DOUBLE, day DATE, at DATETIME, flag BIGINT, note TEXT, qty BIGINT"
			if strings.Join(got, ", ") != want {
				t.Errorf("columns %s, want %s", strings.Join(got, ", "), want)
			}
			rows := rowsOf(t, tbl)
			if len(rows) != 2 {
				t.Fatalf("%d rows, want 2", len(rows))
			}
			r := rows[0]
			at := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
			if r[0] != int64(1) || r[1] != "apple" || r[2] != 1.5 || r[3] != 0.25 || !r[4].(time.Time).Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)) ||
				!r[5].(time.Time).Equal(at) || r[6] != int64(1) || r[7] != nil || r[8] != int64(3) {
				t.Errorf("row 1: %#v", r)
			}
			r = rows[1]
			if r[1] != `\N` || r[2] != nil || r[3] != nil || r[4] != nil || r[5] != nil || r[6] != int64(0) || r[7] != "" {
				t.Errorf(`row 2 (text \N, NULLs, empty text): %#v`, r)
			}

			// The load runs in a read-only transaction (a write fails) at
			// REPEATABLE READ, as the source itself reports it (PostgreSQL;
			// MariaDB shows a transaction's level nowhere a SELECT reads).
			if s.Driver == "mysql" {
				s.Exec(t, "CREATE TABLE writes (x INT)", "CREATE FUNCTION write_one() RETURNS INT MODIFIES SQL DATA BEGIN INSERT INTO writes VALUES (1); RETURN 1; END")
				_, _, err := storage.LoadDB(context.Background(), "w", storage.DBSource{Driver: s.Driver, DSN: s.AdminDSN, Query: "SELECT write_one() AS x", Describe: "w"}, storage.DBLoadOptions{})
				if err == nil || !strings.Contains(err.Error(), "READ ONLY") {
					t.Errorf("a write inside a load: %v, want MariaDB's refusal in a READ ONLY transaction", err)
				}
			} else {
				q := "SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro"
				tx, _, err := storage.LoadDB(context.Background(), "tx", storage.DBSource{Driver: s.Driver, DSN: s.DSN, Query: q, Describe: "tx"}, storage.DBLoadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := rowsOf(t, tx); len(got) != 1 || got[0][0] != "repeatable read" || got[0][1] != "on" {
					t.Errorf("transaction of a load: %v, want repeatable read, read-only", got)
				}
			}

			// The whole table has a column dpsql cannot type.
			src = storage.DBSource{Driver: s.Driver, DSN: s.DSN, Table: "orders", Describe: s.Driver + " table orders"}
			_, _, err = storage.LoadDB(context.Background(), "orders", src, storage.DBLoadOptions{})
			if err == nil || !strings.Contains(err.Error(), "column shape has type") || !strings.Contains(err.Error(), "declare") {
				t.Errorf("unknown type: got %v, want an error naming column shape and the fix", err)
			}
			// Declared columns: read by source name, typed as declared.
			_, info, err = storage.LoadDB(context.Background(), "orders", src, storage.DBLoadOptions{Columns: []storage.DBColumn{
				{Name: "uid", Source: "user_id", Type: storage.BigInt}, {Name: "shape", Type: storage.Text}, {Name: "qty", Type: storage.Text}}})
			if err != nil {
				t.Fatal(err)
			}
			if info.Rows != 2 || info.Columns[0].Name != "uid" || info.Columns[1].Type != storage.Text {
				t.Errorf("declared columns: %+v", info)
			}
		})
	}
}

// TestLoadDBErrors: every bad input fails with the dataset's source, what
// to fix, and never the password.
func TestLoadDBErrors(t *testing.T) {
	for _, s := range dbServers(t) {
		t.Run(s.Driver, func(t *testing.T) {
			cases := []struct {
				name, dsn, table, query, want string
			}{
				{"wrong password", s.BadPasswordDSN(), "orders", "", "password"},
				{"missing table", s.DSN, "nosuch", "", "no such table"},
				{"bad query", s.DSN, "", "SELECT FROM WHERE", "fix source.query"},
				{"nothing listens", strings.Replace(s.DSN, s.Addr, "127.0.0.1:1", 1), "orders", "", "nothing listens"},
			}
			for _, c := range cases {
				src := storage.DBSource{Driver: s.Driver, DSN: c.dsn, Table: c.table, Query: c.query, Describe: s.Driver + " source"}
				_, _, err := storage.LoadDB(context.Background(), "orders", src, storage.DBLoadOptions{ConnectTimeout: 5 * time.Second})
				switch {
				case err == nil:
					t.Errorf("%s: loaded", c.name)
				case !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), s.Driver+" source"):
					t.Errorf("%s: %v; want the source and %q", c.name, err, c.want)
				case strings.Contains(err.Error(), testdb.Password):
					t.Errorf("%s: the error shows the password: %v", c.name, err)
				}
			}
			// A DSN that does not parse, holding a password.
			bad := "dpsql:" + testdb.Password + "@tcp(127.0.0.1:1/shop"
			if s.Driver == "postgres" {
				bad = "postgres://dpsql:" + testdb.Password + "@127.0.0.1:99999999/shop"
			}
			_, _, err := storage.LoadDB(context.Background(), "orders", storage.DBSource{Driver: s.Driver, DSN: bad, Table: "orders", Describe: "src"}, storage.DBLoadOptions{ConnectTimeout: 5 * time.Second})
			if err == nil || strings.Contains(err.Error(), testdb.Password) {
				t.Errorf("bad DSN: %v", err)
			}
			t.Logf("bad DSN: %v", err)

			// A Check error (the server's memory guard) stops the load.
			gen := "SELECT seq, REPEAT('x', 40) FROM seq_1_to_300000"
			if s.Driver == "postgres" {
				gen = "SELECT n, REPEAT('x', 40) FROM generate_series(1, 300000) AS n"
			}
			s.Exec(t, "CREATE TABLE big (user_id BIGINT, pad VARCHAR(64))", "INSERT INTO big "+gen)
			src := storage.DBSource{Driver: s.Driver, DSN: s.DSN, Table: "big", Describe: s.Driver + " table big"}
			_, _, err = storage.LoadDB(context.Background(), "big", src, storage.DBLoadOptions{Check: func(int64) error { return errors.New("out of memory: test") }})
			if err == nil || !strings.Contains(err.Error(), "stopped after 65536 rows: out of memory") {
				t.Errorf("load stopped by Check: %v", err)
			}
			// The connection is lost mid-load (the server is killed).
			_, _, err = storage.LoadDB(context.Background(), "big", src, storage.DBLoadOptions{Check: func(int64) error { s.Kill(); return nil }})
			if err == nil || !strings.Contains(err.Error(), "connection to the source was lost after") {
				t.Errorf("load whose source died: %v", err)
			}
			t.Logf("source killed mid-load: %v", err)
		})
	}
}

// TestDigestIgnoresOrder: the content digest depends on the rows, not on
// their order.
func TestDigestIgnoresOrder(t *testing.T) {
	build := func(rows ...[]any) *storage.Table {
		b, err := storage.NewTableBuilder("t", []storage.Column{{Name: "u", Type: storage.BigInt}, {Name: "s", Type: storage.Text}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if err := b.Append(r...); err != nil {
				t.Fatal(err)
			}
		}
		tbl, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	a := storage.Digest(build([]any{int64(1), "x"}, []any{int64(2), nil}))
	b := storage.Digest(build([]any{int64(2), nil}, []any{int64(1), "x"}))
	c := storage.Digest(build([]any{int64(2), ""}, []any{int64(1), "x"}))
	d := storage.Digest(build([]any{int64(1), "x"}, []any{int64(1), "x"}, []any{int64(2), nil}))
	if a != b || a == c || a == d {
		t.Errorf("digests: %s %s %s %s", a, b, c, d)
	}
}

// TestReplaceTableKeepsRunningScans: a statement that resolved a table
// before a reload swapped it scans the old snapshot to the end; later
// statements see the new one (what reloads rely on).
func TestReplaceTableKeepsRunningScans(t *testing.T) {
	build := func(n int) *storage.Table {
		b, err := storage.NewTableBuilder("t", []storage.Column{{Name: "u", Type: storage.BigInt}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := b.Append(int64(i)); err != nil {
				t.Fatal(err)
			}
		}
		tbl, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	db := storage.NewDatabase("shop")
	if err := db.AddTable(build(3)); err != nil {
		t.Fatal(err)
	}
	ctx := sql.NewEmptyContext()
	resolved, _, _ := db.GetTableInsensitive(ctx, "t")
	parts, err := resolved.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parts.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it, err := resolved.PartitionRows(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	first, err := it.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db.ReplaceTable(build(5)) // the reload swaps in a new snapshot mid-scan
	rest, err := sql.RowIterToRows(ctx, it)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest)+1 != 3 || first[0] != int64(0) {
		t.Errorf("the running scan read %d rows after the swap, want the old snapshot's 2", len(rest))
	}
	now, _ := db.Table("t")
	if got := len(rowsOf(t, now)); got != 5 {
		t.Errorf("a later statement reads %d rows, want the new snapshot's 5", got)
	}
}

// BenchmarkLoadDB loads 1M rows (BIGINT user, VARCHAR item, DOUBLE
// amount, DATETIME) from MariaDB and PostgreSQL:
//
//	go test -run '^$' -bench BenchmarkLoadDB -benchtime 1x ./server/storage
func BenchmarkLoadDB(b *testing.B) {
	const n = 1_000_000
	for _, start := range []func(testing.TB) *testdb.Server{testdb.MariaDB, testdb.PostgreSQL} {
		s := start(b)
		gen := fmt.Sprintf("SELECT seq, CONCAT('item', seq %% 1000), seq / 7, TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_%d", n)
		if s.Driver == "postgres" {
			gen = fmt.Sprintf("SELECT n, 'item' || (n %% 1000), n / 7.0, TIMESTAMP '2024-01-01' + n * INTERVAL '1 second' FROM generate_series(1, %d) AS n", n)
		}
		s.Exec(b, "CREATE TABLE big (user_id BIGINT, item VARCHAR(32), amount DOUBLE PRECISION, at TIMESTAMP)", "INSERT INTO big "+gen)
		b.Run(s.Driver, func(b *testing.B) {
			for b.Loop() {
				_, info, err := storage.LoadDB(context.Background(), "big", storage.DBSource{Driver: s.Driver, DSN: s.DSN, Table: "big", Describe: "big"}, storage.DBLoadOptions{})
				if err != nil || info.Rows != n {
					b.Fatal(info.Rows, err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
