package planner_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/planner"
)

// TestWindowRefusals: a window function next to an aggregate is refused
// with 1140 and a message that is well formed and says what to write (the
// form it suggests is accepted); a window function over a protected
// table's rows says the same as a 1142.
func TestWindowRefusals(t *testing.T) {
	gov := &publicGov{fakeGov{budget: 100}}
	e := newPublicEngine(t, gov)
	_, err := query(t, e, "analyst", "SELECT item, COUNT(*), RANK() OVER (ORDER BY COUNT(*) DESC) FROM visits GROUP BY item")
	if err == nil || !strings.Contains(err.Error(), "(errno 1140)") || strings.Contains(err.Error(), "%!") ||
		!strings.Contains(err.Error(), "compute the aggregates in a derived table") {
		t.Errorf("window with aggregate: %v", err)
	}
	rows, err := query(t, e, "analyst", "SELECT item, n, RANK() OVER (ORDER BY n DESC) FROM (SELECT item, COUNT(*) AS n FROM visits GROUP BY item) AS r ORDER BY item")
	if err != nil || len(rows) == 0 { // "common" (300 users) is released; whether "even" (150) is depends on the noise
		t.Errorf("the suggested form: %v %v", rows, err)
	}
	_, err = query(t, e, "analyst", "SELECT item, COUNT(*) OVER () FROM visits GROUP BY item")
	if err == nil || !strings.Contains(err.Error(), "(errno 1142)") || !strings.Contains(err.Error(), "a window function (… OVER (…)) over its rows is not a private release; apply it to a release's rows instead") {
		t.Errorf("window over protected rows: %v", err)
	}
}

// TestExplainPointsToDPExplain: EXPLAIN of a private release runs and adds
// one Note naming DP_EXPLAIN; EXPLAIN of a query without release does not.
func TestExplainPointsToDPExplain(t *testing.T) {
	gov := &publicGov{fakeGov{budget: 100}}
	e := newPublicEngine(t, gov)
	for q, want := range map[string]int{
		"EXPLAIN SELECT item, COUNT(*) FROM visits GROUP BY item": 1,
		"EXPLAIN SELECT name FROM pages":                          0,
	} {
		ctx := engine.NewContext(context.Background(), "analyst", "mydb").WithQuery(q)
		_, it, _, err := e.Query(ctx, q)
		if err == nil {
			_, err = sql.RowIterToRows(ctx, it)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n := 0
		for _, w := range ctx.Session.Warnings() {
			if w.Level == "Note" && strings.Contains(w.Message, "SELECT * FROM DP_EXPLAIN('<the query>')") {
				n++
			}
		}
		if n != want {
			t.Errorf("%s: %d DP_EXPLAIN notes, want %d", q, n, want)
		}
	}
	if len(gov.charged) != 0 {
		t.Errorf("EXPLAIN charged %d", len(gov.charged))
	}
}

// TestExplainAggregateLabels: DP_EXPLAIN names each aggregate after its
// position in the SELECT list, with its alias; one aggregate shown twice
// is named once with both columns; one used only in HAVING is hidden.
func TestExplainAggregateLabels(t *testing.T) {
	gov := &publicGov{fakeGov{budget: 100}}
	e := newPublicEngine(t, gov)
	rows, err := query(t, e, "analyst", "SELECT parameter, value FROM DP_EXPLAIN('SELECT item, AVG(g) AS mean, COUNT(*) AS n, COUNT(*) AS m FROM visits GROUP BY item HAVING SUM(g) > 0') WHERE parameter LIKE 'aggregate%.column' OR parameter LIKE 'aggregate%.kind'")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r[0].(string)] = r[1].(string)
	}
	want := map[string]string{
		"aggregate_2.column": "mean", "aggregate_2.kind": "avg of values clamped to [0, 1]",
		"aggregate_3.column": "n, also m (column 4)", "aggregate_3.kind": "count",
		"aggregate_hidden_3.column": "sum(visits.g)",
	}
	for k, v := range want {
		if !strings.HasPrefix(got[k], v) {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// TestRefusalsSayWhatToWrite: the guard's refusals of common shapes name
// the shape and say what to write (1142, nothing charged).
func TestRefusalsSayWhatToWrite(t *testing.T) {
	cases := []struct{ q, want string }{
		{"SELECT item FROM visits ORDER BY item LIMIT 3", "a plain SELECT returns its rows themselves, which no analyst may see; for the values that many users share write SELECT DISTINCT item FROM visits, for counts SELECT item, COUNT(*) FROM visits GROUP BY item"},
		{"SELECT * FROM visits WHERE g = 1", "write SELECT DISTINCT item, g FROM visits"},
		{"SELECT COUNT(*), item FROM visits", "item is outside every aggregate: without GROUP BY a private release is one row of aggregates (COUNT(*), SUM(x), AVG(x) …); add GROUP BY item"},
		{"SELECT item, COUNT(*) FROM visits GROUP BY item ORDER BY g", "g is neither a GROUP BY key nor inside an aggregate (in the SELECT list, HAVING or ORDER BY); add it to GROUP BY, or use it inside COUNT"},
		{"SELECT item, user_id, COUNT(*) FROM visits GROUP BY item", "user_id is neither a group key nor an aggregate; a private GROUP BY shows only its keys and noisy aggregates: add it to GROUP BY"},
		{"SELECT DISTINCT item FROM visits ORDER BY g", "add it to the SELECT list (it then becomes part of the released key) or order by a selected column"},
		{"SELECT DISTINCT v.item FROM visits v JOIN secrets s ON s.item = v.item", "this query joins the protected tables mydb.secrets and mydb.visits; a private release reads one protected table, so join two only after releasing each"},
	}
	for _, c := range cases {
		gov := &publicGov{fakeGov{budget: 100}}
		_, err := query(t, newPublicEngine(t, gov), "analyst", c.q)
		if err == nil || !strings.Contains(err.Error(), "(errno 1142)") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want 1142 saying %q", c.q, err, c.want)
		}
		if len(gov.charged) != 0 {
			t.Errorf("%s: charged %d", c.q, len(gov.charged))
		}
	}
}

// TestWindowCheck: the parser check refuses an aggregate beside a window
// function in one SELECT (either order, HAVING and ORDER BY included) and
// nothing else: not an aggregate inside the window's arguments, not a
// window over a derived table's aggregates.
func TestWindowCheck(t *testing.T) {
	for q, refused := range map[string]bool{
		"SELECT k, COUNT(*), RANK() OVER (ORDER BY k) FROM t GROUP BY k":                           true,
		"SELECT k, RANK() OVER (ORDER BY k), COUNT(*) FROM t GROUP BY k":                           true,
		"SELECT COUNT(*), ROW_NUMBER() OVER () FROM t":                                             true,
		"SELECT k, ROW_NUMBER() OVER (ORDER BY k) FROM t GROUP BY k HAVING COUNT(*) > 1":           true,
		"SELECT k, SUM(COUNT(*)) OVER () FROM t GROUP BY k":                                        false,
		"SELECT k, n, RANK() OVER (ORDER BY n) FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) r": false,
		"SELECT k, COUNT(*) FROM t GROUP BY k":                                                     false,
	} {
		stmt, err := ast.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		err = planner.WindowCheck(stmt, q, nil)
		var se *mysql.SQLError
		if got := errors.As(err, &se) && se.Num == mysql.ERMixOfGroupFuncAndFields; got != refused {
			t.Errorf("%s: %v, refused %v", q, err, refused)
		}
	}
}
