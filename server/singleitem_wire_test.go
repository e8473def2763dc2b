package server_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/ledger"
)

// TestBasicLedgerSingleItemOverTheWire: a table whose configuration says
// each user has one country (max_groups_contributed: 1) answers a BI
// client's GROUP BY, sent with no SET, on both ledgers through
// go-sql-driver/mysql. On the basic ledger its keys are selected with
// single_item (docs/privacy.md §42), which the real ledger charges and
// audits; on the zCDP ledger with dp_sips, which that ledger can account.
// A SELECT DISTINCT of the country (the table's max_groups_contributed is
// its max_items) does the same.
func TestBasicLedgerSingleItemOverTheWire(t *testing.T) {
	var b strings.Builder
	for u := 1; u <= 400; u++ {
		fmt.Fprintf(&b, "%d\tc%d\n", u, min(u%7, 3))
	}
	for _, c := range []struct{ method, want string }{{"basic", "single_item"}, {"zcdp", "dp_sips"}} {
		dir := t.TempDir()
		testmysql.WriteFile(t, filepath.Join(dir, "searches.tsv"), b.String())
		s := testserver.GovernedYAML(t, dir, fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
reuse: {enabled: false}
accounting: {method: %s}
datasets:
  - database: shop
    table: searches
    file: searches.tsv
    columns:
      - {name: user_id, type: BIGINT}
      - {name: country, type: VARCHAR(8)}
    privacy_unit: user_id
    dp: {max_groups_contributed: 1, max_rows_per_group: 1}
accounts:
  analysts:
    - user: alice
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 10, delta: 1e-4}
`, c.method, testserver.HashPassword(t, config.NativePassword, alicePass)))
		db := testmysql.Connect(t, testmysql.Login{Addr: s.Addr(), User: "alice", Password: alicePass, DB: "shop"})
		const q = "SELECT country, COUNT(*) FROM searches GROUP BY country"
		var mech string
		if err := db.QueryRow("SELECT value FROM DP_EXPLAIN(?) WHERE parameter = 'selection.mechanism'", q).Scan(&mech); err != nil || mech != c.want {
			t.Errorf("%s ledger: DP_EXPLAIN selection.mechanism %q %v, want %s", c.method, mech, err, c.want)
		}
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s ledger: %v", c.method, err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil || n == 0 {
			t.Errorf("%s ledger: %d rows, %v; want the big countries", c.method, n, err)
		}
		rows.Close()
		var countries []string
		rows, err = db.Query("SELECT DISTINCT country FROM searches")
		if err != nil {
			t.Fatalf("%s ledger: SELECT DISTINCT: %v", c.method, err)
		}
		for rows.Next() {
			var k string
			rows.Scan(&k)
			countries = append(countries, k)
		}
		rows.Close()
		if len(countries) == 0 {
			t.Errorf("%s ledger: SELECT DISTINCT released nothing", c.method)
		}
		recs, err := s.Ledger().Audit(ledger.AuditFilter{Analyst: "alice"})
		if err != nil || len(recs) != 2 {
			t.Fatalf("%s ledger: audit %+v %v, want two releases", c.method, recs, err)
		}
		for _, r := range recs {
			if r.Mechanism != c.want {
				t.Errorf("%s ledger: %s audited with %s, want %s", c.method, r.Function, r.Mechanism, c.want)
			}
		}
	}
}
