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

// TestSetUnionAndNgramsDefaultsOverTheWire (issue 21): a BI client that
// sends no SET gets the configured dp: defaults of the table (and of the
// item column) for DP_SET_UNION and DP_NGRAMS, through go-sql-driver/mysql
// against the governed server, as for GROUP BY: the ledger charges the
// table's ε and δ, and DP_EXPLAIN names each option's source.
func TestSetUnionAndNgramsDefaultsOverTheWire(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for u := 1; u <= 300; u++ {
		fmt.Fprintf(&b, "%d\tcommon\tthe quick brown fox\n%d\tword%d\tjumps over the lazy dog\n", u, u, u)
	}
	testmysql.WriteFile(t, filepath.Join(dir, "notes.tsv"), b.String())
	s := testserver.GovernedYAML(t, dir, fmt.Sprintf(`listen: 127.0.0.1:0
data_dir: data
reuse: {enabled: false}
datasets:
  - database: shop
    table: notes
    file: notes.tsv
    columns:
      - {name: user_id, type: BIGINT}
      - name: word
        type: VARCHAR(32)
        dp: {max_groups_contributed: 1}
      - {name: body, type: TEXT}
    privacy_unit: user_id
    dp: {epsilon: 0.25, delta: 1e-7, mechanism: weighted_gaussian, max_groups_contributed: 4}
accounts:
  analysts:
    - user: alice
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 10, delta: 1e-4}
`, testserver.HashPassword(t, config.NativePassword, alicePass)))
	db := testmysql.Connect(t, testmysql.Login{Addr: s.Addr(), User: "alice", Password: alicePass, DB: "shop"})

	var out string
	if err := db.QueryRow("SELECT DP_SET_UNION(word, user_id) FROM notes").Scan(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"common"`) {
		t.Errorf("DP_SET_UNION released %s, want common among the keys", out)
	}
	rows, err := db.Query("SELECT ngram FROM DP_NGRAMS('notes', 'body', 'user_id')")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	recs, err := s.Ledger().Audit(ledger.AuditFilter{Analyst: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want 2", len(recs))
	}
	for _, r := range recs {
		if r.Epsilon != 0.25 || r.Delta != 1e-7 || r.Mechanism != "weighted_gaussian" {
			t.Errorf("%s charged ε = %v, δ = %v, mechanism %s; want the table's 0.25, 1e-7, weighted_gaussian", r.Function, r.Epsilon, r.Delta, r.Mechanism)
		}
	}

	explain := func(q string) map[string]string {
		t.Helper()
		rows, err := db.Query("SELECT parameter, value FROM DP_EXPLAIN(?)", q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]string{}
		for rows.Next() {
			var p, v string
			if err := rows.Scan(&p, &v); err != nil {
				t.Fatal(err)
			}
			got[p] = v
		}
		return got
	}
	su := explain("SELECT DP_SET_UNION(word, user_id) FROM notes")
	for p, want := range map[string]string{"source.epsilon": "table configuration", "source.mechanism": "table configuration",
		"source.max_items": "column configuration", "max_items": "1"} {
		if su[p] != want {
			t.Errorf("DP_EXPLAIN of DP_SET_UNION: %s = %q, want %q (all: %v)", p, su[p], want, su)
		}
	}
	ng := explain("SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'epsilon=0.5')")
	for p, want := range map[string]string{"source.epsilon": "statement", "source.delta": "table configuration", "source.max_items": "table configuration"} {
		if ng[p] != want {
			t.Errorf("DP_EXPLAIN of DP_NGRAMS: %s = %q, want %q (all: %v)", p, ng[p], want, ng)
		}
	}
}
