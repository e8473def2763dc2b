package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server/config"
)

// TestReuseAcrossClients: the same release sent by different clients is
// charged once. The mysql CLI leaves the server's connection collation,
// pandas sets utf8mb4_0900_ai_ci, Connector/J prepares on the server (a
// string and a typed DATE parameter) or in the driver, mysql2 executes a
// server-side prepared statement, go-sql-driver binds a time.Time (a
// DATETIME parameter): the release key is the analysed release
// (release/canon.go), so every one after the first is reused at no
// charge. A statement that differs only by LIKE's ESCAPE is a new release.
func TestReuseAcrossClients(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "visits.tsv")
	var b strings.Builder
	for u := 1; u <= 300; u++ {
		for k := range 3 {
			fmt.Fprintf(&b, "u%03d\titem%d\t2024-01-%02d\n", u, (u+k)%10, 1+(u+k)%9)
		}
	}
	testmysql.WriteFile(t, data, b.String())
	h := func(pw string) string { return testserver.HashPassword(t, config.NativePassword, pw) }
	srv := testserver.GovernedYAML(t, dir, fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
datasets:
  - database: shop
    table: visits
    file: %s
    columns:
      - {name: user_id, type: VARCHAR(16)}
      - {name: item, type: VARCHAR(32)}
      - {name: day, type: DATE}
    privacy_unit: user_id
accounts:
  admins:
    - {user: admin, password_hash: '%s'}
  analysts:
    - user: alice
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 50, delta: 1e-4}
`, data, h(adminPassword), h(alicePassword)))
	host, port := splitAddr(t, srv.Addr())
	target := clients.Target{Host: host, Port: port, User: "alice", Password: alicePassword, Database: "shop"}
	d := &reuseDeployment{srv: srv}
	watch := d.conn(t, "alice", alicePassword)
	releases := func() string {
		r, err := readAll(context.Background(), watch, "SELECT releases FROM DP_BUDGET() WHERE database_name = 'shop'")
		if err != nil || len(r) != 1 {
			t.Fatalf("DP_BUDGET: %v %v", r, err)
		}
		return r[0][0]
	}

	const text = "SELECT DISTINCT item FROM visits WHERE item LIKE 'item%' AND day >= '2024-01-03'"
	const prepared = "SELECT DISTINCT item FROM visits WHERE item LIKE ? AND day >= ?"
	first := run(t, watch, text)
	mustNew(t, "go-sql-driver, text protocol", first, "0")
	if len(first.rows) < 5 {
		t.Fatalf("first release: %v", first.rows)
	}
	type client struct {
		name   string
		runner func(t *testing.T) clients.Runner
		stmts  []clients.Statement
	}
	cases := []client{
		{"mysql CLI", func(t *testing.T) clients.Runner { return clients.MariaDBCLI{Path: mysqlCLI(t), Stdin: true} },
			[]clients.Statement{clients.Query(text)}},
		{"pandas", func(t *testing.T) clients.Runner { return pythonRunner(t) }, []clients.Statement{clients.Query(text)}},
		{"Connector/J server-side prepared, string parameters", func(t *testing.T) clients.Runner { return jdbcRunner(t) },
			[]clients.Statement{clients.Prepare(prepared, "item%", "2024-01-03")}},
		{"Connector/J server-side prepared, a DATE parameter", func(t *testing.T) clients.Runner { return jdbcRunner(t) },
			[]clients.Statement{clients.Prepare(prepared, "item%", "date:2024-01-03")}},
		{"Connector/J client-side prepared", func(t *testing.T) clients.Runner { return jdbcRunner(t) },
			[]clients.Statement{{SQL: prepared, Prepared: true, ClientSide: true, Args: []any{"item%", "date:2024-01-03"}}}},
		{"Node mysql2 execute", func(t *testing.T) clients.Runner { return nodeRunner(t) },
			[]clients.Statement{clients.Prepare(prepared, "item%", "2024-01-03")}},
		{"Node mysql2 query", func(t *testing.T) clients.Runner { return nodeRunner(t) }, []clients.Statement{clients.Query(text)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.runner(t)
			res := runClient(t, r, target, c.stmts)
			if res[0].Error != nil {
				t.Fatalf("%v", res[0].Error)
			}
			if len(res[0].Rows) != len(first.rows) {
				t.Errorf("%d rows, the first release had %d", len(res[0].Rows), len(first.rows))
			}
			if got := releases(); got != "1" {
				t.Errorf("releases charged: %s, want 1 (the statement was charged again)", got)
			}
		})
	}
	t.Run("go-sql-driver, a DATETIME parameter", func(t *testing.T) {
		r := run(t, watch, prepared, "item%", time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC))
		mustReuse(t, "go-sql-driver time.Time", r, "1")
	})
	t.Run("another ESCAPE", func(t *testing.T) {
		r := run(t, watch, "SELECT DISTINCT item FROM visits WHERE item LIKE 'item%' ESCAPE 'i' AND day >= '2024-01-03'")
		mustNew(t, "ESCAPE 'i'", r, "1")
		if len(r.rows) != 0 {
			t.Errorf("ESCAPE 'i' makes 'i' escape 't': no item matches; got %v", r.rows)
		}
	})
}
