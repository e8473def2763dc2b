package planner_test

import (
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/release"
)

// TestGroupIndexSameReleases: with a fixed seed, a private GROUP BY with DP
// aggregates answered from the release index (release.Scan.IndexedGroups)
// returns exactly the rows of the same release answered by scanning, on
// random tables: every indexable aggregate, bounds given and chosen
// privately, a unit filter, aggregate arguments that fail for some keys
// (their rows are skipped, so keys and users are renumbered), text and
// integer keys and units; and the index path was taken.
func TestGroupIndexSameReleases(t *testing.T) {
	const hint = "/*+ SET_VAR(dp_epsilon = 10) SET_VAR(dp_contribution_bounds = '0,40') */"
	// Not a number for n > 30: those rows are skipped (the conversion of
	// the argument fails), so keys and users are renumbered.
	const failing = "IF(n > 30, 'w', n)"
	queries := []string{
		"SELECT /*+ SET_VAR(dp_epsilon = 10) */ item, COUNT(*) FROM visits GROUP BY item ORDER BY item",
		"SELECT " + hint + " item, COUNT(*), COUNT(DISTINCT user_id), COUNT(item), AVG(LENGTH(item)), SUM(LENGTH(item)) FROM visits GROUP BY item ORDER BY item",
		"SELECT " + hint + " n, SUM(n), AVG(n), VARIANCE(n), STDDEV(n), VAR_SAMP(n), STDDEV_SAMP(n) FROM visits GROUP BY n ORDER BY n",
		"SELECT /*+ SET_VAR(dp_epsilon = 10) SET_VAR(dp_max_groups_contributed = 2) SET_VAR(dp_max_rows_per_group = 3) */ item, COUNT(*), COUNT(DISTINCT user_id) FROM visits GROUP BY item ORDER BY item",
		// Bounds chosen privately (two passes).
		"SELECT /*+ SET_VAR(dp_epsilon = 10) */ n, COUNT(*), SUM(n), AVG(n) FROM visits GROUP BY n ORDER BY n",
		"SELECT /*+ SET_VAR(dp_epsilon = 10) */ item, COUNT(*), AVG(LENGTH(item)) FROM visits GROUP BY item ORDER BY item",
		// A filter on the unit alone.
		"SELECT /*+ SET_VAR(dp_epsilon = 10) */ item, COUNT(*) FROM visits WHERE user_id <= 200 GROUP BY item ORDER BY item",
		"SELECT " + hint + " n, COUNT(*), AVG(n) FROM visits WHERE user_id % 3 = 1 GROUP BY n ORDER BY n",
		// Arguments that fail for some keys: their rows are skipped.
		"SELECT " + hint + " n, COUNT(*), AVG(" + failing + ") FROM visits GROUP BY n ORDER BY n",
		"SELECT " + hint + " item, COUNT(*), AVG(item + 0) FROM visits GROUP BY item ORDER BY item",
		"SELECT " + hint + " n, COUNT(*), AVG(" + failing + ") FROM visits WHERE user_id > 100 GROUP BY n ORDER BY n",
		// Not from the index (another column, two keys, a filter on
		// another column): the same, trivially.
		"SELECT " + hint + " item, COUNT(*), SUM(g) FROM visits GROUP BY item ORDER BY item",
		"SELECT " + hint + " item, g, COUNT(*) FROM visits GROUP BY item, g ORDER BY item, g",
		"SELECT " + hint + " item, COUNT(*) FROM visits WHERE g = 1 GROUP BY item ORDER BY item",
	}
	sameAsScan(t, rand.New(rand.NewPCG(24, 1)), 6, queries, func(trial int, ix *release.Indexes) {
		// Eleven statements of the index's shape; two scans looked for one (the GROUP BY of two keys does not).
		if p := ix.Paths(); p.Group != 11 || p.Scan != 2 {
			t.Fatalf("trial %d: paths %+v, want 11 GROUP BYs from the index and 2 scans", trial, p)
		}
	})
}
