package integration

import (
	"context"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestGlobalAggregatesOverTheWire: the first queries a BI tool sends —
// SELECT COUNT(*) FROM t, with and without WHERE, COUNT(DISTINCT unit),
// SUM and AVG with bounds — answer one noisy row each through
// go-sql-driver on the demo, charged once each; DP_EXPLAIN shows no key
// selection.
func TestGlobalAggregatesOverTheWire(t *testing.T) {
	s := startDemo(t)
	db := openGo(t, s.analyst)
	ctx := context.Background()
	before := ledgerBalance(t, s.Ledger(), s.analyst.User, s.db)
	// The demo: 20,000 users, 740,996 words (rows); a user has at most one
	// global key, so COUNT(DISTINCT user_id) is the users.
	for _, c := range []struct {
		q        string
		lo, hi   float64
		nColumns int
	}{
		{"SELECT COUNT(DISTINCT user_id) FROM words", 19_000, 21_000, 1},
		{"SELECT COUNT(*) AS n FROM words WHERE word = 'ka'", 5_000, 40_000, 1},
		{"SELECT /*+ SET_VAR(dp_max_rows_per_group = 50) */ COUNT(*) FROM words", 100_000, 800_000, 1},
		{"SELECT /*+ SET_VAR(dp_contribution_bounds = '0,20') SET_VAR(dp_max_rows_per_group = 20) */ AVG(LENGTH(word)), SUM(LENGTH(word)) FROM words", 1, 20, 2},
		{"SELECT STDDEV(LENGTH(word)), VARIANCE(LENGTH(word)), VAR_SAMP(LENGTH(word)), STDDEV_SAMP(LENGTH(word)) FROM words", 0.3, 10, 4},
	} {
		rows, err := db.QueryContext(ctx, c.q)
		if err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		cols, _ := rows.Columns()
		n := 0
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
			x, err := strconv.ParseFloat(vals[0], 64)
			if err != nil || x < c.lo || x > c.hi || len(vals) != c.nColumns {
				t.Errorf("%s: %q, want one value in [%v, %v]", c.q, vals, c.lo, c.hi)
			}
			t.Logf("%s → %q", c.q, vals)
		}
		rows.Close()
		if n != 1 {
			t.Errorf("%s: %d rows, want 1", c.q, n)
		}
	}
	after := ledgerBalance(t, s.Ledger(), s.analyst.User, s.db)
	if after.Releases-before.Releases != 5 {
		t.Errorf("releases charged: %d, want 5", after.Releases-before.Releases)
	}
	var v string
	if err := db.QueryRowContext(ctx, "SELECT value FROM DP_EXPLAIN('SELECT COUNT(*) FROM words') WHERE parameter = 'key_selection'").Scan(&v); err != nil || v != "none" {
		t.Errorf("DP_EXPLAIN key_selection = %q, %v", v, err)
	}
}

// TestDefaultBoundsAccuracy measures the headline of issue 21 at the
// defaults (ε = 1, δ = 1e-6, no SET): COUNT(*) of the 20 most frequent
// words of demo.words against the truth (admin), median relative error,
// with bounds chosen privately (a Note says which) against the former
// fixed defaults max_rows_per_group = 1, max_groups_contributed = 100.
func TestDefaultBoundsAccuracy(t *testing.T) {
	s := startDemo(t)
	ctx := context.Background()
	admin := openGo(t, s.admin)
	truth := map[string]float64{}
	rows, err := admin.QueryContext(ctx, "SELECT word, COUNT(*) AS n FROM words GROUP BY word ORDER BY n DESC LIMIT 20")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var w string
		var n float64
		if err := rows.Scan(&w, &n); err != nil {
			t.Fatal(err)
		}
		truth[w] = n
	}
	rows.Close()
	db := openGo(t, s.analyst)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	measure := func(hint string) float64 {
		rows, err := conn.QueryContext(ctx, "SELECT "+hint+" word, COUNT(*) AS n FROM words GROUP BY word ORDER BY n DESC LIMIT 100")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for rows.Next() {
			var w string
			var n float64
			if err := rows.Scan(&w, &n); err != nil {
				t.Fatal(err)
			}
			got[w] = n
		}
		rows.Close()
		var rel []float64
		for w, n := range truth {
			rel = append(rel, math.Abs(got[w]-n)/n) // a word not released counts as 0
		}
		sort.Float64s(rel)
		return (rel[9] + rel[10]) / 2
	}
	auto := measure("")
	var level, msg string
	var code int
	if err := conn.QueryRowContext(ctx, "SHOW WARNINGS").Scan(&level, &code, &msg); err != nil || level != "Note" || !strings.Contains(msg, "chosen privately") {
		t.Errorf("no Note on the privately chosen bounds: %q %v", msg, err)
	}
	t.Logf("note: %s", msg)
	fixed := measure("/*+ SET_VAR(dp_max_rows_per_group = 1) SET_VAR(dp_max_groups_contributed = 100) */")
	t.Logf("COUNT(*) of the 20 most frequent words, median relative error: bounds chosen privately %.3f, former defaults (m = 1, Δ0 = 100) %.3f", auto, fixed)
	if !(auto < fixed) {
		t.Errorf("privately chosen bounds (%.3f) are no better than the former defaults (%.3f)", auto, fixed)
	}
}

// TestEmptyReleaseNoteOverTheWire: a private GROUP BY that releases no key
// says so in a Note (SHOW WARNINGS) with the users a key needs.
func TestEmptyReleaseNoteOverTheWire(t *testing.T) {
	s := startDemo(t)
	ctx := context.Background()
	conn, err := openGo(t, s.analyst).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, "SELECT /*+ SET_VAR(dp_max_groups_contributed = 5) SET_VAR(dp_max_rows_per_group = 1) */ word, COUNT(*) FROM words WHERE user_id = 7 GROUP BY word")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	var level, msg string
	var code int
	if err := conn.QueryRowContext(ctx, "SHOW WARNINGS").Scan(&level, &code, &msg); err != nil || n != 0 || level != "Note" || !strings.Contains(msg, "released no key") {
		t.Errorf("%d rows; note %q %v", n, msg, err)
	}
	t.Logf("note: %s", msg)
}
