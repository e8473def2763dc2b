package server_test

import (
	"context"
	"strings"
	"testing"
)

// TestRefusalsSayWhatToDo: over the wire (go driver), each refusal of
// issue 21 has MySQL's number and a text that names the shape and says
// what to write; EXPLAIN of a private release notes DP_EXPLAIN, and
// DP_EXPLAIN names aggregates after their SELECT position and alias.
func TestRefusalsSayWhatToDo(t *testing.T) {
	d := newPublicKeysDeployment(t)
	s := d.start(t)
	bob := sessionConn(t, d.connect(t, s.Addr(), "bob", bobPass, false), "shop")
	ctx := context.Background()
	cases := []struct {
		q    string
		code uint16
		want []string
	}{
		{"SELECT s.country, COUNT(*) FROM searches s JOIN visits v ON v.user_id = s.user_id GROUP BY s.country", 1142,
			[]string{"joins the protected tables shop.searches and shop.visits", "declares public"}},
		{"SELECT country, COUNT(*), RANK() OVER (ORDER BY COUNT(*) DESC) FROM searches GROUP BY country", 1140,
			[]string{"RANK(…) OVER (…)", "compute the aggregates in a derived table"}},
		{"SELECT country, COUNT(*) OVER () FROM searches GROUP BY country", 1142,
			[]string{"apply it to a release's rows instead"}},
		{"SELECT c.code, COUNT(*) FROM countries c LEFT JOIN searches s ON s.country = c.code WHERE s.amount > 1 GROUP BY c.code", 1142,
			[]string{"move it into ON"}},
	}
	before := budget(t, bob)[0].Releases
	for _, c := range cases {
		_, err := bob.QueryContext(ctx, c.q)
		wantCode(t, c.q, err, c.code)
		if err == nil || strings.Contains(err.Error(), "%!") {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", c.q, err, w)
			}
		}
	}
	// The forms the refusals suggest run.
	rows, err := bob.QueryContext(ctx, "SELECT /*+ SET_VAR(dp_epsilon = 0.2) */ country, n, RANK() OVER (ORDER BY n DESC) FROM (SELECT country, COUNT(*) AS n FROM searches GROUP BY country) AS r")
	if err != nil {
		t.Errorf("the derived-table form: %v", err)
	} else {
		rows.Close()
	}
	// EXPLAIN points to DP_EXPLAIN, in a Note.
	rows, err = bob.QueryContext(ctx, "EXPLAIN SELECT country, COUNT(*) FROM searches GROUP BY country")
	if err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	rows.Close()
	warnings, err := bob.QueryContext(ctx, "SHOW WARNINGS")
	if err != nil {
		t.Fatal(err)
	}
	noted := false
	for warnings.Next() {
		var level, msg string
		var code int
		if err := warnings.Scan(&level, &code, &msg); err != nil {
			t.Fatal(err)
		}
		noted = noted || level == "Note" && strings.Contains(msg, "SELECT * FROM DP_EXPLAIN('<the query>')")
	}
	warnings.Close()
	if !noted {
		t.Error("EXPLAIN of a private release: no Note pointing to DP_EXPLAIN")
	}
	// DP_EXPLAIN's aggregates by SELECT position and alias.
	got := map[string]string{}
	rows, err = bob.QueryContext(ctx, "SELECT parameter, value FROM DP_EXPLAIN('SELECT country, COUNT(*) AS n, SUM(amount) AS total FROM searches GROUP BY country') WHERE parameter LIKE 'aggregate%.column'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p, v string
		if err := rows.Scan(&p, &v); err != nil {
			t.Fatal(err)
		}
		got[p] = v
	}
	rows.Close()
	if got["aggregate_2.column"] != "n" || got["aggregate_3.column"] != "total" {
		t.Errorf("DP_EXPLAIN aggregate labels %v", got)
	}
	if after := budget(t, bob)[0].Releases; after != before+1 {
		t.Errorf("%d releases charged, want 1 (the derived-table form)", after-before)
	}
}
