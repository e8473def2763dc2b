package integration

import (
	"context"
	"strconv"
	"testing"
)

// TestQuantilesOverTheWire: MEDIAN and PERCENTILE_CONT through
// go-sql-driver on the demo, global (with WHERE) and per key (with an
// expression key, an alias in ORDER BY and a COUNT(*) beside them), with
// no SET (every bound chosen privately), each statement charged once;
// DP_EXPLAIN shows the exponential mechanism.
func TestQuantilesOverTheWire(t *testing.T) {
	s := startDemo(t)
	db := openGo(t, s.analyst)
	ctx := context.Background()
	before := ledgerBalance(t, s.Ledger(), s.analyst.User, s.db)
	// The demo's words are 1 to 20-odd letters long.
	for _, c := range []struct {
		q          string
		lo, hi     float64 // the first quantile column's range
		col        int     // its position
		minRows    int
		maxColumns int
	}{
		{"SELECT MEDIAN(LENGTH(word)), PERCENTILE_CONT(LENGTH(word), 0.9) AS p90 FROM words", 2, 12, 0, 1, 2},
		{"SELECT MEDIAN(LENGTH(word)) AS m, COUNT(*) FROM words WHERE word LIKE 'a%'", 1, 15, 0, 1, 2},
		{"SELECT LEFT(word, 1) AS initial, MEDIAN(LENGTH(word)) AS m, COUNT(*) AS n FROM words GROUP BY initial ORDER BY m DESC", 1, 20, 1, 5, 3},
	} {
		rows, err := db.QueryContext(ctx, c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		cols, _ := rows.Columns()
		n := 0
		prev := 1e9
		for rows.Next() {
			n++
			vals := make([]string, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			x, err := strconv.ParseFloat(vals[c.col], 64)
			if err != nil || x < c.lo || x > c.hi || len(vals) != c.maxColumns {
				t.Errorf("%s: %q, want column %d in [%v, %v]", c.q, vals, c.col+1, c.lo, c.hi)
			}
			if x > prev {
				t.Errorf("%s: not ordered by the median: %v after %v", c.q, x, prev)
			}
			prev = x
			if n <= 3 {
				t.Logf("%s → %q", c.q, vals)
			}
		}
		rows.Close()
		if n < c.minRows || (c.minRows == 1 && n != 1) {
			t.Errorf("%s: %d rows", c.q, n)
		}
	}
	after := ledgerBalance(t, s.Ledger(), s.analyst.User, s.db)
	if after.Releases-before.Releases != 3 {
		t.Errorf("releases charged: %d, want 3", after.Releases-before.Releases)
	}
	var v string
	if err := db.QueryRowContext(ctx, "SELECT value FROM DP_EXPLAIN('SELECT MEDIAN(LENGTH(word)) FROM words') WHERE parameter = 'aggregate_1.mechanism'").Scan(&v); err != nil || v == "" {
		t.Errorf("DP_EXPLAIN aggregate_1.mechanism = %q, %v", v, err)
	}
	t.Logf("DP_EXPLAIN: %s", v)
	if _, err := db.ExecContext(ctx, "SELECT word FROM words WHERE MEDIAN(LENGTH(word)) > 3 GROUP BY word"); err == nil {
		t.Errorf("MEDIAN in WHERE accepted")
	}
}
