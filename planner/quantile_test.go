package planner_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testengine"
)

// TestQuantiles: MEDIAN and PERCENTILE_CONT over the protected table are
// released privately with the statement's other aggregates, per key and
// global, under aliases, in ORDER BY and in derived tables, charged once;
// over the public table they are exact; misplaced calls and bad levels are
// refused before any charge.
func TestQuantiles(t *testing.T) {
	num := func(v any) float64 { return testengine.Float(t, v) }
	gov := &fakeGov{budget: 1000}
	e := newPolicyEngine(t, gov)
	// visits: 300 users; every row of user u has g = u % 3; "common" is
	// held by all, "even" by the 150 even users (g again 0, 1, 2 equally).
	const hint = "/*+ SET_VAR(dp_epsilon = 20) SET_VAR(dp_contribution_bounds = '0,2') SET_VAR(dp_max_rows_per_group = 1) SET_VAR(dp_max_groups_contributed = 3) */"
	for _, c := range []struct {
		q    string
		want string // rows, columns separated by ",", numbers ± tol
		tol  float64
	}{
		{"SELECT " + hint + " item, MEDIAN(g), PERCENTILE_CONT(g, 0.9) AS p90, COUNT(*) FROM visits GROUP BY item", "common,1,2,300|even,1,2,150", 0.2},
		{"SELECT " + hint + " item, PERCENTILE_CONT(g, 0.1) AS p FROM visits GROUP BY item ORDER BY p DESC, item LIMIT 1", "common,0", 0.2},
		{"SELECT " + hint + " item, MEDIAN(g) FROM visits GROUP BY item ORDER BY 2, 1", "common,1|even,1", 0.2},
		{"SELECT " + hint + " s.m FROM (SELECT item, MEDIAN(g) AS m FROM visits GROUP BY item) s ORDER BY s.m", "1|1", 0.2},
		{"SELECT " + hint + " UPPER(item) AS k, MEDIAN(g) AS m FROM visits GROUP BY k", "COMMON,1|EVEN,1", 0.2},
		{"SELECT " + hint + " item, MEDIAN(g) + 1 FROM visits GROUP BY item", "common,2|even,2", 0.2},
		{"SELECT " + hint + " UPPER(item) AS k, MEDIAN(g) AS m, COUNT(*) AS n FROM visits GROUP BY k ORDER BY m DESC, k", "COMMON,1,300|EVEN,1,150", 0.2},
		{"SELECT " + hint + " item, MEDIAN(g) AS m FROM visits GROUP BY item HAVING m > 0.5 AND COUNT(*) > 200", "common,1", 0.2},
		{"SELECT " + hint + " MEDIAN(g), PERCENTILE_CONT(g, 0), COUNT(*) AS n FROM visits WHERE item = 'common'", "1,0,300", 0.2},
		{"SELECT " + hint + " COUNT(g), MEDIAN(g) FROM visits WHERE item = 'common'", "300,1", 0.2},
		{"SELECT " + hint + " (SELECT MEDIAN(g) FROM visits) + 1 AS m", "2", 0.2},
		// Bounds chosen privately (a 300-user table: the fallback m).
		{"SELECT /*+ SET_VAR(dp_epsilon = 20) */ MEDIAN(g) FROM visits WHERE item = 'common'", "1", 0.3},
	} {
		gov.charged = nil
		rows, err := query(t, e, "analyst", c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		var got []string
		for _, r := range rows {
			var cells []string
			for _, v := range r {
				cells = append(cells, fmt.Sprint(v))
			}
			got = append(got, strings.Join(cells, ","))
		}
		wantRows := strings.Split(c.want, "|")
		if len(got) != len(wantRows) {
			t.Errorf("%s: rows %q, want %q", c.q, got, c.want)
			continue
		}
		for i, w := range wantRows {
			wc, gc := strings.Split(w, ","), strings.Split(got[i], ",")
			if len(wc) != len(gc) {
				t.Errorf("%s: row %q, want %q", c.q, got[i], w)
				continue
			}
			for j := range wc {
				x, err := strconv.ParseFloat(wc[j], 64)
				if err != nil {
					if gc[j] != wc[j] {
						t.Errorf("%s: row %q, want %q", c.q, got[i], w)
					}
					continue
				}
				tol := c.tol
				if x >= 100 {
					tol = x * 0.1 // counts
				}
				if y := num(gc[j]); math.Abs(y-x) > tol {
					t.Errorf("%s: row %q column %d = %v, want %v ± %v", c.q, got[i], j+1, y, x, tol)
				}
			}
		}
		if len(gov.charged) != 1 {
			t.Errorf("%s: %d charges, want 1", c.q, len(gov.charged))
		}
	}

	// Public rows: exact (pages holds n = 1 and 2).
	for q, want := range map[string]string{
		"SELECT MEDIAN(n), PERCENTILE_CONT(n, 0.25) FROM pages":                "1.5,1.25",
		"SELECT name, MEDIAN(n) AS m FROM pages GROUP BY name ORDER BY m DESC": "public,2|common,1",
		"SELECT MEDIAN(n) FROM pages WHERE n > 5":                              "<nil>",
		"SELECT PERCENTILE_CONT(n, 1), COUNT(*), MEDIAN(n * 2) FROM pages":     "2,2,3",
	} {
		rows, err := query(t, e, "analyst", q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if got := flat(rows); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}

	// Refused before any charge.
	gov.charged = nil
	for q, want := range map[string]string{
		"SELECT item FROM visits WHERE MEDIAN(g) > 1 GROUP BY item":         "can only be used in the SELECT list",
		"SELECT PERCENTILE_CONT(g, 1.5) FROM visits":                        "p must be a constant number from 0 to 1",
		"SELECT PERCENTILE_CONT(g, g) FROM visits":                          "p must be a constant number from 0 to 1",
		"SELECT PERCENTILE_CONT(g) FROM visits":                             "it takes 2 arguments",
		"SELECT MEDIAN(DISTINCT g) FROM visits":                             "MEDIAN does not take DISTINCT",
		"SELECT MEDIAN(COUNT(g)) FROM visits":                               "cannot contain aggregates",
		"SELECT item, MEDIAN(g) FROM visits":                                "nonaggregated column",
		"SELECT /*+ SET_VAR(dp_noise = 'laplace') */ MEDIAN(g) FROM visits": "noise laplace needs every contribution bound given",
	} {
		if _, err := query(t, e, "analyst", q); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", q, err, want)
		}
	}
	if len(gov.charged) != 0 {
		t.Errorf("refused queries were charged: %+v", gov.charged)
	}
}

// TestQuantilesPublicKeys: MEDIAN over public keys (pages LEFT JOIN
// visits) releases a value for every public key, the key no user has
// included (a uniform grid point of the bounds), charged once with no
// selection.
func TestQuantilesPublicKeys(t *testing.T) {
	gov := &publicGov{fakeGov{budget: 100}}
	q := "SELECT /*+ SET_VAR(dp_epsilon = 20) SET_VAR(dp_max_groups_contributed = 3) SET_VAR(dp_max_rows_per_group = 1) SET_VAR(dp_contribution_bounds = '0,2') */ " +
		"p.name, MEDIAN(v.g) AS m, COUNT(*) FROM pages p LEFT JOIN visits v ON v.item = p.name GROUP BY p.name"
	rows, err := query(t, newPublicEngine(t, gov), "analyst", q)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || len(gov.charged) != 1 || gov.charged[0].Mechanism != "none (public keys)" {
		t.Fatalf("rows %v, charges %+v", rows, gov.charged)
	}
	for i, name := range []string{"common", "even", "public"} {
		m, ok := rows[i][1].(float64)
		if rows[i][0] != name || !ok || m < 0 || m > 2 || (name != "public" && math.Abs(m-1) > 0.2) {
			t.Errorf("row %d: %v, want %s with a median in [0, 2] (about 1 but for public)", i, rows[i], name)
		}
	}
}
