package planner_test

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release"
)

// specOf runs the statements on one session and returns the reuse
// specification of the last one's release, and whether it was reused.
func specOf(t *testing.T, g *reuseGov, run func(...string) ([]string, bool), stmts ...string) (string, bool) {
	t.Helper()
	g.specs = nil
	specs, reused := run(stmts...)
	if len(specs) != 1 || specs[0] == "" {
		t.Fatalf("%q: specifications %q", stmts, specs)
	}
	return specs[0], reused
}

// TestReuseKeyCanonical: the reuse key is the analysed release, not its
// printed text. go-mysql-server prints LIKE without its ESCAPE, so
// `item LIKE 'x%' ESCAPE 'x'` (a literal '%') and `item LIKE 'x%'` (a
// prefix) once shared a key: the second was answered from the first's
// stored release, wrong rows at no charge. And the same release under
// settings its evaluation does not read (sql_mode, the connection's
// collation for a literal compared with a column) is one release.
func TestReuseKeyCanonical(t *testing.T) {
	e, g := newReuseEngine(t)
	run := func(stmts ...string) ([]string, bool) {
		_, w, err := session(t, e, stmts...)
		if err != nil {
			t.Fatalf("%q: %v", stmts, err)
		}
		return g.specs, reusedNote(w)
	}
	distinct := [][]string{
		{"SELECT DISTINCT item FROM visits WHERE item LIKE 'o%'"},
		{"SELECT DISTINCT item FROM visits WHERE item LIKE 'o%' ESCAPE 'o'"},
		{"SELECT DISTINCT item FROM visits WHERE item LIKE 'o%' ESCAPE '!'"},
		{"SELECT DISTINCT item FROM visits WHERE CAST(g / 3 AS DECIMAL(5,1)) = 0.3"},
		{"SELECT DISTINCT item FROM visits WHERE CAST(g / 3 AS DECIMAL(5,2)) = 0.3"},
		{"SELECT DISTINCT item FROM visits WHERE item COLLATE utf8mb4_0900_ai_ci = 'COMMON'"},
		{"SELECT DISTINCT item FROM visits WHERE item COLLATE utf8mb4_0900_bin = 'COMMON'"},
		{"SELECT DISTINCT item FROM visits WHERE g = 1"},
		{"SELECT DISTINCT item FROM visits WHERE g = '1'"},
		{"SELECT DISTINCT item FROM visits WHERE g = 1.0"},
		{"SELECT DISTINCT item FROM visits WHERE g = 1.00"},
		{"SELECT DISTINCT MD5(item) FROM visits WHERE MD5(item) < 'a'"},
		{"SET collation_connection = 'utf8mb4_0900_ai_ci'", "SELECT DISTINCT MD5(item) FROM visits WHERE MD5(item) < 'a'"},
		{"SELECT DISTINCT FROM_UNIXTIME(g) FROM visits"},
		{"SET time_zone = '+05:00'", "SELECT DISTINCT FROM_UNIXTIME(g) FROM visits"},
	}
	seen := map[string][]string{}
	for _, stmts := range distinct {
		spec, reused := specOf(t, g, run, stmts...)
		if prev, ok := seen[spec]; ok {
			t.Errorf("%q and %q share a reuse key", stmts, prev)
		}
		if reused {
			t.Errorf("%q: answered from another statement's release", stmts)
		}
		seen[spec] = stmts
	}
	same := [][][]string{
		{
			{"SELECT DISTINCT item FROM visits WHERE item = 'common'"},
			{"SET collation_connection = 'utf8mb4_0900_ai_ci'", "SELECT DISTINCT item FROM visits WHERE item = 'common'"},
			{"SET NAMES utf8mb4 COLLATE utf8mb4_general_ci", "SELECT DISTINCT item FROM visits WHERE item = 'common'"},
			{"SET sql_mode = 'TRADITIONAL'", "SELECT DISTINCT item FROM visits WHERE item = 'common'"},
			{"SET time_zone = '+05:00'", "SELECT DISTINCT item FROM visits WHERE item = 'common'"},
		},
		{
			{"SELECT DISTINCT item FROM visits WHERE item LIKE 'o%' ESCAPE '!'"},
			{"SET collation_connection = 'utf8mb4_0900_ai_ci'", "SELECT DISTINCT item FROM visits WHERE item LIKE 'o%' ESCAPE '!'"},
		},
		{
			{"SELECT DISTINCT item FROM visits WHERE item > 'e'"},
			{"SET collation_connection = 'utf8mb4_0900_ai_ci'", "SELECT DISTINCT item FROM visits WHERE item > 'e'"},
		},
	}
	for _, group := range same {
		first, _ := specOf(t, g, run, group[0]...)
		for _, stmts := range group[1:] {
			spec, reused := specOf(t, g, run, stmts...)
			if spec != first || !reused {
				t.Errorf("%q: not the release of %q (reused %v)", stmts, group[0], reused)
			}
		}
	}
}

// TestStatementMemoCanonical: two releases of one statement are made once
// only when they are the same release. The memo once keyed them by printed
// SQL, so a release with another ESCAPE took the first one's rows.
func TestStatementMemoCanonical(t *testing.T) {
	e, _ := newReuseEngine(t)
	q := "SELECT DISTINCT item FROM visits WHERE item LIKE 'c%' UNION ALL SELECT DISTINCT item FROM visits WHERE item LIKE 'c%' ESCAPE 'c'"
	rows, _, err := session(t, e, "SET dp_reuse = OFF", q)
	if err != nil {
		t.Fatal(err)
	}
	// 'c%' matches "common", held by every user; with ESCAPE 'c' the
	// pattern is the literal "%", which no item is.
	if len(rows) != 1 || rows[0][0] != "common" {
		t.Errorf("rows %v, want [[common]]", rows)
	}
	same := "SELECT DISTINCT item FROM visits WHERE item LIKE 'c%' UNION ALL SELECT DISTINCT item FROM visits WHERE item LIKE 'c%'"
	if rows, _, err = session(t, e, "SET dp_reuse = OFF", same); err != nil || len(rows) != 2 {
		t.Errorf("the same release twice: rows %v, %v", rows, err)
	}
}

// specGov is publicGov recording the reuse specification of every release.
type specGov struct {
	publicGov
	specs []string
}

func (g *specGov) ChargeOrReuse(ctx *sql.Context, reqs []release.Request) (*release.Reuse, error) {
	g.specs = append(g.specs, reqs[0].Reuse.Spec)
	return &release.Reuse{}, release.Charge(ctx, &g.publicGov, reqs)
}

// TestPublicReleasesKeyed: releases that read a public table through IN,
// EXISTS or a JOIN have a reuse specification (they are reused), which
// holds the public side: another public filter is another release.
func TestPublicReleasesKeyed(t *testing.T) {
	g := &specGov{publicGov: publicGov{fakeGov: fakeGov{budget: 1000}}}
	eng := newPublicEngine(t, g)
	seen := map[string]string{}
	for _, q := range []string{
		"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name = v.item",
		"SELECT DISTINCT v.item FROM visits v JOIN pages p ON p.name = v.item AND p.n > 1",
		"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages)",
		"SELECT DISTINCT item FROM visits WHERE item IN (SELECT name FROM pages WHERE n > 1)",
		"SELECT DISTINCT item FROM visits v WHERE EXISTS (SELECT 1 FROM pages p WHERE p.name = v.item)",
	} {
		g.specs = nil
		if _, err := query(t, eng, "analyst", q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(g.specs) != 1 || g.specs[0] == "" {
			t.Fatalf("%s: specifications %q (a release that is never reused)", q, g.specs)
		}
		if prev, ok := seen[g.specs[0]]; ok {
			t.Errorf("%s and %s share a specification", q, prev)
		}
		seen[g.specs[0]] = q
	}
}
