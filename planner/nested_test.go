package planner_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/release"
)

// TestNestedReleases: a derived table that selects and filters rows of
// one protected table (Metabase's nested question) is released as the
// flat query: with the same random source the rows are identical, and
// the release is charged once.
func TestNestedReleases(t *testing.T) {
	cases := []struct{ nested, flat string }{
		{"SELECT source.item, count(*) AS count FROM (SELECT visits.item AS item, visits.g AS g FROM visits WHERE visits.g > 0) AS source GROUP BY source.item ORDER BY count DESC, source.item ASC",
			"SELECT item, count(*) AS count FROM visits WHERE g > 0 GROUP BY item ORDER BY count DESC, item ASC"},
		{"SELECT `source`.`item` AS `item`, count(*) AS `count` FROM (SELECT `visits`.`item` AS `item`, `visits`.`g` AS `g` FROM `visits`) AS `source` GROUP BY `source`.`item` ORDER BY `source`.`item` ASC",
			"SELECT item, count(*) AS count FROM visits GROUP BY item ORDER BY item ASC"},
		{"SELECT sum(source.g) AS sum FROM (SELECT visits.item AS item, visits.g AS g FROM visits) AS source",
			"SELECT sum(g) AS sum FROM visits"},
		{"SELECT count(*) AS count FROM (SELECT visits.item AS item FROM visits) AS source WHERE source.item = 'even'",
			"SELECT count(*) AS count FROM visits WHERE item = 'even'"},
		{"SELECT s.k, COUNT(*) AS n, AVG(s.v) FROM (SELECT UPPER(item) AS k, g + 1 AS v FROM visits WHERE g < 2) s WHERE s.v > 0 GROUP BY s.k ORDER BY s.k",
			"SELECT UPPER(item) AS k, COUNT(*) AS n, AVG(g + 1) FROM visits WHERE g < 2 AND g + 1 > 0 GROUP BY k ORDER BY k"},
		{"SELECT DISTINCT s.item FROM (SELECT item FROM visits WHERE g = 1) s ORDER BY s.item",
			"SELECT DISTINCT item FROM visits WHERE g = 1 ORDER BY item"},
		{"SELECT t.it, COUNT(*) FROM (SELECT s.item AS it FROM (SELECT item, g FROM visits) s WHERE s.g < 2) t GROUP BY t.it",
			"SELECT item, COUNT(*) FROM visits WHERE g < 2 GROUP BY item"},
		{"SELECT LOWER(s.item) AS w, COUNT(*) FROM (SELECT * FROM visits) s GROUP BY w ORDER BY w",
			"SELECT LOWER(item) AS w, COUNT(*) FROM visits GROUP BY w ORDER BY w"},
		{"SELECT s.a, COUNT(*) FROM (SELECT g AS a, item AS g FROM visits) s GROUP BY s.a ORDER BY s.a", // swapped names: columns go by id
			"SELECT g, COUNT(*) FROM visits GROUP BY g ORDER BY g"},
		{"WITH c AS (SELECT item FROM visits) SELECT DISTINCT item FROM c", // a CTE is a derived table
			"SELECT DISTINCT item FROM visits"},
		{"SELECT COUNT(*) FROM (SELECT DISTINCT item FROM visits) s", // the inner release, post-processed
			"SELECT COUNT(*) FROM (SELECT DISTINCT item FROM visits) s"},
	}
	for _, c := range cases {
		var got [2]string
		for i, q := range []string{c.nested, c.flat} {
			gov := &fakeGov{budget: 100}
			e := newPolicyEngine(t, gov)
			rows, err := query(t, e, "analyst", q)
			if err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			got[i] = flat(rows)
			if len(gov.charged) != 1 {
				t.Errorf("%s: %d charges, want 1", q, len(gov.charged))
			}
		}
		if got[0] != got[1] || got[0] == "" {
			t.Errorf("%s\n  got  %q\n  flat %q", c.nested, got[0], got[1])
		}
	}
}

// TestNestedRefusals: a derived table that could change how many rows a
// user has, or mix users' rows, is refused with 1142 naming the shape,
// before any charge.
func TestNestedRefusals(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT s.item, COUNT(*) FROM (SELECT item FROM visits LIMIT 10) s GROUP BY s.item":                                                     "has a LIMIT",
		"SELECT s.item, COUNT(*) FROM (SELECT item FROM visits ORDER BY g LIMIT 5) s GROUP BY s.item":                                           "LIMIT",
		"SELECT s.item, COUNT(*) FROM (SELECT item, ROW_NUMBER() OVER (PARTITION BY user_id) AS r FROM visits) s WHERE s.r = 1 GROUP BY s.item": "computes a window function",
		"SELECT s.item, COUNT(*) FROM (SELECT item FROM visits UNION ALL SELECT item FROM visits) s GROUP BY s.item":                            "combines SELECTs (UNION)",
		"SELECT s.item, COUNT(*) FROM (SELECT v.item FROM visits v JOIN visits w ON v.user_id = w.user_id) s GROUP BY s.item":                   "joins tables",
		"SELECT s.item, COUNT(*) FROM (SELECT item, RAND() AS r FROM visits) s WHERE s.r < 0.5 GROUP BY s.item":                                 "a non-deterministic function",
		"SELECT s.item, COUNT(*) FROM (SELECT item, (SELECT MAX(n) FROM pages) AS m FROM visits) s GROUP BY s.item":                             "the derived table s",
		"SELECT s.item FROM (SELECT item FROM visits) s":                                                                                        "a plain SELECT returns its rows themselves",
		"SELECT s.u, COUNT(*) FROM (SELECT user_id AS u FROM visits) s GROUP BY s.u HAVING COUNT(*) > 1":                                        "",
	} {
		gov := &fakeGov{budget: 100}
		e := newPolicyEngine(t, gov)
		rows, err := query(t, e, "analyst", q)
		var se *mysql.SQLError
		switch {
		case q == "SELECT s.u, COUNT(*) FROM (SELECT user_id AS u FROM visits) s GROUP BY s.u HAVING COUNT(*) > 1":
			// Allowed: a release over the privacy unit as the key, where
			// no key is held by more than one user: nothing comes out.
			if err != nil || len(rows) != 0 {
				t.Errorf("%s: %v %v", q, rows, err)
			}
			continue
		case err == nil:
			t.Errorf("%s: answered %q", q, flat(rows))
		case !errors.As(err, &se) || se.Num != release.ERTableAccessDenied:
			t.Errorf("%s: error %v, want 1142", q, err)
		case !strings.Contains(se.Message, want):
			t.Errorf("%s: %s, want it to say %q", q, se.Message, want)
		}
		if len(gov.charged) != 0 {
			t.Errorf("%s: charged %v", q, gov.charged)
		}
	}
}

// TestNestedPublicJoin: a derived table over a protected table joined with
// a public one (the join of publicjoin.go) merges like a plain one.
func TestNestedPublicJoin(t *testing.T) {
	for nested, flatQ := range map[string]string{
		"SELECT s.n, COUNT(*) AS c FROM (SELECT v.item AS item, p.n AS n FROM visits v JOIN pages p ON p.name = v.item) AS s GROUP BY s.n ORDER BY s.n": "SELECT p.n, COUNT(*) AS c FROM visits v JOIN pages p ON p.name = v.item GROUP BY p.n ORDER BY p.n",
		"SELECT DISTINCT s.item FROM (SELECT v.item AS item FROM visits v WHERE v.item IN (SELECT name FROM pages WHERE n = 3)) s":                      "SELECT DISTINCT v.item FROM visits v WHERE v.item IN (SELECT name FROM pages WHERE n = 3)",
	} {
		var got [2]string
		for i, q := range []string{nested, flatQ} {
			gov := &publicGov{fakeGov{budget: 100}}
			rows, err := query(t, newPublicEngine(t, gov), "analyst", q)
			if err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			got[i] = flat(rows)
			if len(gov.charged) != 1 {
				t.Errorf("%s: %d charges", q, len(gov.charged))
			}
		}
		if got[0] != got[1] || got[0] == "" {
			t.Errorf("%s: %q, flat %q", nested, got[0], got[1])
		}
	}
}
