package planner_test

import (
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// TestPublicKeysGroupBy: a GROUP BY over the keys of a public table
// (pages LEFT JOIN visits, and visits RIGHT JOIN pages) releases a row for
// every public key that passes WHERE, in key order, with no selection:
// "public" (no visit) and the NULL-named page (its key matches nothing and
// is not a key) behave as the proof says; each is charged once.
func TestPublicKeysGroupBy(t *testing.T) {
	hint := "/*+ SET_VAR(dp_max_groups_contributed = 3) SET_VAR(dp_max_rows_per_group = 1) SET_VAR(dp_contribution_bounds = '0,10') */ "
	run := func(q string) []sql.Row {
		t.Helper()
		gov := &publicGov{fakeGov{budget: 100}}
		rows, err := query(t, newPublicEngine(t, gov), "analyst", q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(gov.charged) != 1 {
			t.Fatalf("%s: %d charges", q, len(gov.charged))
		}
		if m := gov.charged[0].Mechanism; m != "none (public keys)" {
			t.Errorf("%s: mechanism %q", q, m)
		}
		return rows
	}
	for _, q := range []string{
		"SELECT " + hint + "p.name, COUNT(*), COUNT(DISTINCT v.user_id), SUM(v.g) FROM pages p LEFT JOIN visits v ON v.item = p.name GROUP BY p.name",
		"SELECT " + hint + "p.name, COUNT(*), COUNT(DISTINCT v.user_id), SUM(v.g) FROM visits v RIGHT JOIN pages p ON p.name = v.item GROUP BY p.name",
	} {
		rows := run(q)
		var names []string
		for _, r := range rows {
			names = append(names, r[0].(string))
		}
		// Every public key (the NULL name matches nothing: not a key),
		// in key order, including "public", which no user has.
		if strings.Join(names, ",") != "common,even,public" {
			t.Fatalf("%s: keys %q", q, names)
		}
		// common: 300 users; even: 150; public: none (noise around 0).
		for i, want := range []float64{300, 150, 0} {
			for j := 1; j <= 2; j++ {
				got := float64(rows[i][j].(int64))
				if got < want-40 || got > want+40 {
					t.Errorf("%s: %s column %d = %v, want about %v", q, names[i], j, got, want)
				}
			}
		}
	}
	// WHERE on the public table filters the keys; ON on the protected
	// table filters its rows (SQL's semantics: keys stay).
	rows := run("SELECT " + hint + "p.name, COUNT(*) FROM pages p LEFT JOIN visits v ON v.item = p.name AND v.g = 1 WHERE p.n >= 2 GROUP BY p.name ORDER BY p.name DESC")
	if len(rows) != 2 || rows[0][0] != "public" || rows[1][0] != "even" {
		t.Fatalf("filtered: %v", rows)
	}
	if c := rows[1][1].(int64); c < 10 || c > 90 { // even users with g = 1: 50
		t.Errorf("even with v.g = 1: %d, want about 50", c)
	}
	// Grouping by a public column that is not the join key: its distinct
	// values are the keys (n is unique here, user_id of pages is not).
	rows = run("SELECT " + hint + "p.user_id, COUNT(*) FROM pages p LEFT JOIN visits v ON v.item = p.name GROUP BY p.user_id")
	if len(rows) != 2 || rows[0][0] != int64(1) || rows[1][0] != int64(2) {
		t.Fatalf("by user_id: %v", rows)
	}
	if c := rows[0][1].(int64); c < 260 || c > 340 { // common only: "public" has none
		t.Errorf("pages of user_id 1: %d, want about 300", c)
	}
}

// TestPublicKeysRefusals: the shapes a GROUP BY over public keys does not
// take are refused before any charge, each saying what to write instead.
func TestPublicKeysRefusals(t *testing.T) {
	cases := []struct{ q, want string }{
		{"SELECT p.name, COUNT(*) FROM pages p LEFT JOIN visits v ON v.item = p.name WHERE v.g = 1 GROUP BY p.name", "move it into ON"},
		{"SELECT p.name, COUNT(*) FROM pages p LEFT JOIN visits v ON v.item = p.name AND p.n = 1 GROUP BY p.name", "filter the public rows in WHERE"},
		{"SELECT v.item, COUNT(*) FROM pages p LEFT JOIN visits v ON v.item = p.name GROUP BY v.item", "write FROM visits JOIN mydb.pages"},
		{"SELECT COUNT(*) FROM pages p LEFT JOIN visits v ON v.item = p.name", "group by the public table's columns"},
		{"SELECT DISTINCT p.name FROM pages p LEFT JOIN visits v ON v.item = p.name", "add COUNT(*)"},
		{"SELECT p.name FROM pages p LEFT JOIN visits v ON v.item = p.name GROUP BY p.name", "add COUNT(*)"},
		{"SELECT p.name, COUNT(*) FROM pages p LEFT JOIN visits v ON v.item > p.name GROUP BY p.name", "neither public_table.c = T.col"},
	}
	for _, c := range cases {
		gov := &publicGov{fakeGov{budget: 100}}
		_, err := query(t, newPublicEngine(t, gov), "analyst", c.q)
		refusedUncharged(t, &gov.fakeGov, c.q, err, c.want)
	}
}

// TestPublicKeysApartFromSelection: the same scan with key selection
// (visits JOIN pages) and over public keys (pages LEFT JOIN visits) in one
// statement are two releases, charged twice, not one shared by the
// statement's memo: the public-keys one has every public key.
func TestPublicKeysApartFromSelection(t *testing.T) {
	gov := &publicGov{fakeGov{budget: 100}}
	q := "SELECT p.name, COUNT(*) FROM visits v JOIN pages p ON p.name = v.item GROUP BY p.name UNION ALL " +
		"SELECT p.name, COUNT(*) FROM pages p LEFT JOIN visits v ON v.item = p.name GROUP BY p.name"
	rows, err := query(t, newPublicEngine(t, gov), "analyst", q)
	if err != nil {
		t.Fatal(err)
	}
	if len(gov.charged) != 2 {
		t.Errorf("%d charges, want 2", len(gov.charged))
	}
	public := 0
	for _, r := range rows {
		if r[0] == "public" {
			public++
		}
	}
	if public != 1 || len(rows) < 4 {
		t.Errorf("rows %v: want the selected keys, then every public key", rows)
	}
}
