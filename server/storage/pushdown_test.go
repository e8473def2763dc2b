package storage

import (
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/release/pushdown"
)

// TestPushdownStatements: the SQL of a push-down release names only the
// configured columns (quoted), compares text byte for byte, and carries
// every literal — SQL metacharacters included — as a bound parameter,
// never in its text.
func TestPushdownStatements(t *testing.T) {
	evil := `x' OR '1'='1'; DROP TABLE orders; --`
	q := pushdown.Query{Unit: "user_id", Group: []string{"item"}, Filter: &pushdown.Pred{Op: pushdown.Or, Args: []*pushdown.Pred{
		{Op: pushdown.Cmp, Column: "item", Comparison: "=", Values: []any{evil}},
		{Op: pushdown.Not, Args: []*pushdown.Pred{{Op: pushdown.In, Column: "amount", Values: []any{1.5, float64(2)}}}},
		{Op: pushdown.IsNull, Column: "item"},
	}}}
	cols := map[string]pushColumn{
		"user_id": {Column: Column{Name: "user_id", Type: BigInt}, source: "user_id", srcType: "BIGINT"},
		"item":    {Column: Column{Name: "item", Type: Text}, source: "it`em\"", srcType: "VARCHAR"},
		"amount":  {Column: Column{Name: "amount", Type: Double}, source: "amount", srcType: "DECIMAL"},
	}
	want := map[string]string{
		"mysql": "SELECT `user_id` AS g0, CAST(`it``em\"` AS BINARY) AS g1, COUNT(*) AS n FROM `shop`.`orders` WHERE " +
			"((CAST(`it``em\"` AS BINARY) = ?) OR (NOT (`amount` IN (?, ?))) OR (`it``em\"` IS NULL)) GROUP BY 1, 2 ORDER BY 1, 2",
		"postgres": `SELECT "user_id" AS g0, "it` + "`" + `em""" AS g1, COUNT(*) AS n FROM "shop"."orders" WHERE ` +
			`(("it` + "`" + `em""" COLLATE "C" = $1::text) OR (NOT ("amount" IN ($2::float8, $3::float8))) OR ("it` + "`" + `em""" IS NULL)) ` +
			`GROUP BY 1, 2 ORDER BY 1, "it` + "`" + `em""" COLLATE "C"`,
	}
	for drv, w := range want {
		p := &dbPushdown{src: DBSource{Driver: drv, Table: "shop.orders"}, cols: cols, connectTimeout: time.Second}
		p.from = p.fromClause()
		if err := p.Check(q); err != nil {
			t.Fatal(err)
		}
		stmt, args, _ := p.statement(q)
		if stmt != w {
			t.Errorf("%s:\n got %s\nwant %s", drv, stmt, w)
		}
		if strings.Contains(stmt, "DROP") || strings.Contains(stmt, "'") || len(args) != 3 || args[0] != evil {
			t.Errorf("%s: a literal is in the text, or not a parameter: %s %v", drv, stmt, args)
		}
	}
	// A DATE column is not compared in the source.
	p := &dbPushdown{src: DBSource{Driver: "mysql", Table: "t"}, cols: map[string]pushColumn{
		"day": {Column: Column{Name: "day", Type: Date}, source: "day", srcType: "DATE"}}}
	if err := p.Check(pushdown.Query{Unit: "day", Filter: &pushdown.Pred{Op: pushdown.Cmp, Column: "day", Comparison: "<", Values: []any{"2024-01-01"}}}); err == nil {
		t.Error("a DATE column was compared in the source")
	}
}
