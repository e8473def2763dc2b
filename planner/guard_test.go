package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

func TestCallCheck(t *testing.T) {
	const distinct = "DP_SET_UNION does not take DISTINCT"
	const window = "DP_SET_UNION cannot be used as a window function"
	for q, want := range map[string]string{
		"SELECT DP_SET_UNION(item, u) FROM t":                                  "",
		"SELECT dp_set_union(DISTINCT item, u) FROM t":                         distinct,
		"SELECT DP_SET_UNION( distinct item) FROM t":                           distinct,
		"SELECT x FROM (SELECT DP_SET_UNION(DISTINCT a, b) AS x FROM t) s":     distinct,
		"SELECT JSON_LENGTH(DP_SET_UNION(CONCAT(DISTINCT a, b), c)) FROM t":    "function CONCAT does not take DISTINCT",
		"SELECT DP_SET_UNION(DP_SET_UNION(DISTINCT a, b), c) FROM t":           distinct,
		"SELECT DP_SET_UNION(a, b) OVER () FROM t":                             window,
		"SELECT DP_SET_UNION(a, f(b, c)) over w FROM t WINDOW w AS ()":         window,
		"SELECT COUNT(DISTINCT a, b), GROUP_CONCAT(DISTINCT a) FROM t":         "",
		"SELECT ABS(DISTINCT a) FROM t":                                        "",
		"SELECT 'dp_set_union(distinct a, b)' FROM t":                          "",
		"SELECT dp_set_union FROM t -- dp_set_union(distinct a, b)":            "",
		"SELECT DP_SET_UNION(a, b) FROM t; SELECT DP_SET_UNION(DISTINCT a, b)": distinct,
	} {
		err := CallCheck(nil, q, nil)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: unexpected %v", q, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want %q", q, err, want)
		}
	}
}

// TestGuardParser checks that a refused statement comes back as a nil
// statement with the error, from every parse entry point, and that other
// statements parse as usual.
func TestGuardParser(t *testing.T) {
	g := NewGuardParser(nil)
	ctx := sql.NewEmptyContext()
	bad := "SELECT DP_SET_UNION(DISTINCT a, b) FROM t"
	if s, err := g.ParseSimple(bad); s != nil || err == nil {
		t.Fatalf("ParseSimple: %v, %v", s, err)
	}
	if s, _, _, err := g.Parse(ctx, bad, false); s != nil || err == nil {
		t.Fatalf("Parse: %v, %v", s, err)
	}
	if s, _, err := g.ParseOneWithOptions(context.Background(), bad, ast.ParserOptions{}); s != nil || err == nil {
		t.Fatalf("ParseOneWithOptions: %v, %v", s, err)
	}
	// Multi-statement: only the statement being parsed is checked.
	s, parsed, rest, err := g.Parse(ctx, "SELECT 1; "+bad, true)
	if err != nil || s == nil || parsed != "SELECT 1" || !strings.Contains(rest, "DISTINCT") {
		t.Fatalf("multi: %v %q %q %v", s, parsed, rest, err)
	}
	if _, _, _, err := g.Parse(ctx, rest, true); err == nil {
		t.Fatal("second statement not refused")
	}
	// A syntax error stays a syntax error.
	if _, _, _, err := g.Parse(ctx, "SELEC 1", false); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Fatalf("syntax error: %v", err)
	}
}

func TestInstall(t *testing.T) {
	if _, err := Install(analyzer.NewBuilder(nil), Rules()); err != nil {
		t.Fatal(err)
	}
	dup := append(Rules(), Rule{ID: LiftSetUnionID, Name: "other", Batch: PostValidation, Apply: LiftSetUnion})
	if _, err := Install(analyzer.NewBuilder(nil), dup); err == nil {
		t.Fatal("duplicate rule id accepted")
	}
	if _, err := Install(analyzer.NewBuilder(nil), []Rule{{ID: RuleIDBase + 99, Name: "nil"}}); err == nil {
		t.Fatal("rule without function accepted")
	}
}
