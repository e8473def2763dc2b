package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testmysql"
)

// newPublicKeysDeployment: shop.searches (protected, 300 users searching
// from US, FR and unlisted ZZ), shop.countries (public: DE, FR, JP, US —
// DE and JP searched by no one) and shop.cities (public, 100,001 rows: more
// keys than one release may release); zCDP accounting.
func newPublicKeysDeployment(t *testing.T) *deployment {
	t.Helper()
	d := newDeploymentWith(t, false, "zcdp") // the configuration's default accounting

	var b strings.Builder
	for u := 1; u <= 300; u++ {
		fmt.Fprintf(&b, "%d\tUS\t%d\n", u, u%7)
		if u%2 == 0 {
			fmt.Fprintf(&b, "%d\tFR\t3\n", u)
		}
		fmt.Fprintf(&b, "%d\tZZ\t5\n", u) // no such public key: dropped
	}
	testmysql.WriteFile(t, filepath.Join(d.dir, "searches.tsv"), b.String())
	testmysql.WriteFile(t, filepath.Join(d.dir, "countries.csv"), "code,name\nUS,United States\nFR,France\nDE,Germany\nJP,Japan\n")
	b.Reset()
	b.WriteString("code\n")
	for i := range 100_001 {
		fmt.Fprintf(&b, "c%d\n", i)
	}
	testmysql.WriteFile(t, filepath.Join(d.dir, "cities.csv"), b.String())
	raw, err := os.ReadFile(d.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(raw)
	cfg = strings.Replace(cfg, "accounts:\n", `  - database: shop
    table: searches
    file: searches.tsv
    columns:
      - {name: user_id, type: BIGINT}
      - {name: country, type: CHAR(2)}
      - {name: amount, type: BIGINT}
    privacy_unit: user_id
  - database: shop
    table: countries
    file: countries.csv
    header: true
    columns:
      - {name: code, type: CHAR(2)}
      - {name: name, type: VARCHAR(32)}
    public: true
  - database: shop
    table: cities
    file: cities.csv
    header: true
    columns:
      - {name: code, type: VARCHAR(16)}
    public: true
accounts:
`, 1)
	testmysql.WriteFile(t, d.cfgPath, cfg)
	return d
}

// TestPublicKeysOverTheWire: over the MySQL protocol (go driver), a GROUP
// BY over the keys of a public table, written LEFT JOIN or RIGHT JOIN,
// returns every public key in key order — the ones no user has too — is
// charged once, and DP_EXPLAIN names it; a public side with too many keys
// is refused (1104) before any charge. dp_noise_after_bounds = ON keeps
// noise auto's Laplace for these hand-set bounds, for which the counts'
// tolerances are made: under the zCDP ledger's default (OFF) auto takes the
// Gaussian at this (ε, δ) (privacy §31), whose wider spread at ε = 0.3 put
// JP's count above 100 in a CI run.
func TestPublicKeysOverTheWire(t *testing.T) {
	d := newPublicKeysDeployment(t)
	s := d.start(t)
	alice := sessionConn(t, d.connect(t, s.Addr(), "bob", bobPass, false), "shop") // bob: no per-release cap
	ctx := context.Background()
	const hint = "/*+ SET_VAR(dp_epsilon = 0.3) SET_VAR(dp_max_groups_contributed = 2) SET_VAR(dp_max_rows_per_group = 1) SET_VAR(dp_contribution_bounds = '0,10') SET_VAR(dp_noise_after_bounds = ON) */ "
	for i, q := range []string{
		"SELECT " + hint + "c.code, COUNT(*), SUM(s.amount) FROM countries c LEFT JOIN searches s ON s.country = c.code GROUP BY c.code",
		"SELECT " + hint + "c.code, COUNT(*), SUM(s.amount) FROM searches s RIGHT JOIN countries c ON c.code = s.country GROUP BY c.code",
	} {
		before := budget(t, alice)[0].Releases
		rows, err := alice.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var codes []string
		counts := map[string]int64{}
		for rows.Next() {
			var code string
			var n int64
			var sum float64
			if err := rows.Scan(&code, &n, &sum); err != nil {
				t.Fatal(err)
			}
			codes = append(codes, code)
			counts[code] = n
		}
		rows.Close()
		if strings.Join(codes, ",") != "DE,FR,JP,US" {
			t.Fatalf("query %d: keys %q, want every public key in order", i, codes)
		}
		if n := counts["US"]; n < 200 || n > 400 {
			t.Errorf("query %d: US count %d, want about 300", i, n)
		}
		if n := counts["JP"]; n > 100 {
			t.Errorf("query %d: JP count %d, want noise around 0", i, n)
		}
		if after := budget(t, alice)[0].Releases; after != before+1 {
			t.Errorf("query %d: %d releases charged, want 1", i, after-before)
		}
	}
	var value string
	err := alice.QueryRowContext(ctx, "SELECT value FROM DP_EXPLAIN('SELECT c.code, COUNT(DISTINCT s.user_id) FROM countries c LEFT JOIN searches s ON s.country = c.code GROUP BY c.code') WHERE parameter = 'key_selection'").Scan(&value)
	if err != nil || value != "public keys: 4, no selection" {
		t.Errorf("DP_EXPLAIN key_selection: %q, %v", value, err)
	}
	before := budget(t, alice)[0]
	_, err = alice.QueryContext(ctx, "SELECT c.code, COUNT(*) FROM cities c LEFT JOIN searches s ON s.country = c.code GROUP BY c.code")
	testmysql.WantErrNo(t, "100,001 public keys", err, 1104)
	if err == nil || !strings.Contains(err.Error(), "filter the public table in WHERE") {
		t.Errorf("too many keys: %v", err)
	}
	if after := budget(t, alice)[0]; after.Releases != before.Releases || after.SpentEps != before.SpentEps {
		t.Errorf("the refused release was charged: %+v → %+v", before, after)
	}
	// Filtered in WHERE, the same public table is fine.
	var n int
	if err := alice.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT c.code, COUNT(*) AS n FROM cities c LEFT JOIN searches s ON s.country = c.code WHERE c.code LIKE 'c1000%' GROUP BY c.code) x").Scan(&n); err != nil || n != 12 {
		t.Errorf("filtered public keys: %d rows, %v; want 11", n, err)
	}
}
