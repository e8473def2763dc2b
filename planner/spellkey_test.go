package planner_test

import (
	"testing"
)

// TestReuseKeySpellings: spellings of one release's options — the
// value's form, where it is given, an explicit default, an option the
// mechanism does not read — give one reuse specification, and options that
// change the release give another.
func TestReuseKeySpellings(t *testing.T) {
	groups := [][]string{
		{
			"SELECT DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_epsilon = 1.0) */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_epsilon = 1e0) */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_epsilon = 0.1e1) SET_VAR(dp_delta = 0.000001) */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_delta = 1e-6) SET_VAR(dp_epsilon = 1) */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_mechanism = 'DP_SIPS') */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_mechanism = 'dp_sips') */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_max_items = 0) */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_rounds = 3) */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_alpha = 5) */ DISTINCT item FROM visits", // dp_sips has no cutoff
		},
		{"SELECT /*+ SET_VAR(dp_rounds = 2) */ DISTINCT item FROM visits"},
		{"SELECT DISTINCT g FROM visits WHERE item = 'A'"},
		{"SELECT DISTINCT g FROM visits WHERE item = 'a'", "SELECT DISTINCT g FROM visits WHERE (item = 'a')"},
		{"SELECT DISTINCT g FROM visits WHERE item = 'a '"},
		{"SELECT DISTINCT g FROM visits WHERE item = 'NULL'"},
		{"SELECT DISTINCT g FROM visits WHERE item IS NULL"},
		{"SELECT DISTINCT g FROM visits WHERE item = NULL"},
		{"SELECT DISTINCT g FROM visits WHERE item = 'a' COLLATE utf8mb4_0900_bin"},
		// SQL literals keep their types (DECIMAL(1,1), DECIMAL(2,2), DOUBLE):
		// distinct keys, charged again, never wrong (docs/privacy.md §13).
		{"SELECT DISTINCT g FROM visits WHERE g < 0.1"},
		{"SELECT DISTINCT g FROM visits WHERE g < 0.10"},
		{"SELECT DISTINCT g FROM visits WHERE g < 1e-1"},
		{"SELECT /*+ SET_VAR(dp_epsilon = 0.5) */ DISTINCT item FROM visits"},
		{
			"SELECT /*+ SET_VAR(dp_mechanism = 'policy_gaussian_l2') */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_mechanism = 'policy_gaussian_l2') SET_VAR(dp_alpha = 3) */ DISTINCT item FROM visits",
			"SELECT /*+ SET_VAR(dp_mechanism = 'POLICY_GAUSSIAN_L2') SET_VAR(dp_rounds = 7) */ DISTINCT item FROM visits",
		},
		{"SELECT /*+ SET_VAR(dp_mechanism = 'policy_gaussian_l2') SET_VAR(dp_alpha = 4) */ DISTINCT item FROM visits"},
		{
			"SELECT item, COUNT(*) FROM visits GROUP BY item",
			"SELECT /*+ SET_VAR(dp_noise = 'auto') */ item, COUNT(*) FROM visits GROUP BY item",
			"SELECT /*+ SET_VAR(dp_noise = 'AUTO') */ item, COUNT(*) FROM visits GROUP BY item",
			"SELECT /*+ SET_VAR(dp_mechanism = 'dp_sips') */ item, COUNT(*) FROM visits GROUP BY item",
			"SELECT /*+ SET_VAR(dp_selection_share = 0.5) */ item, COUNT(*) FROM visits GROUP BY item",
			"SELECT /*+ SET_VAR(dp_epsilon = 1.00) */ item, COUNT(*) FROM visits GROUP BY item",
		},
		{
			"SELECT * FROM DP_NGRAMS('mydb.visits', 'item', 'user_id', 'max_n=2')",
			"SELECT * FROM DP_NGRAMS('mydb.visits', 'item', 'user_id', 'max_n=2, update=weighted_gaussian')",
			"SELECT * FROM DP_NGRAMS('mydb.visits', 'item', 'user_id', 'max_n=2, budget_split=uniform')",
			"SELECT * FROM DP_NGRAMS('mydb.visits', 'item', 'user_id', 'budget_split=UNIFORM, max_n=2, epsilon=1.0')",
		},
		{"SELECT * FROM DP_NGRAMS('mydb.visits', 'item', 'user_id', 'max_n=2, budget_split=geometric:2')"},
		{"SELECT * FROM DP_NGRAMS('mydb.visits', 'item', 'user_id', 'max_n=2, update=policy_gaussian_l2')"},
		{
			// The level is released as a multiple of 1e-6 (dpagg).
			"SELECT item, MEDIAN(g) FROM visits GROUP BY item",
			"SELECT item, PERCENTILE_CONT(g, 0.5) FROM visits GROUP BY item",
			"SELECT item, PERCENTILE_CONT(g, 0.5000001) FROM visits GROUP BY item",
			"SELECT item, PERCENTILE_CONT(g, 0.4999996) FROM visits GROUP BY item",
		},
		{"SELECT item, PERCENTILE_CONT(g, 0.500001) FROM visits GROUP BY item"},
		{
			"SELECT DP_SET_UNION(item, user_id) FROM visits",
			"SELECT DP_SET_UNION(item, user_id, 'epsilon=1.0') FROM visits",
			"SELECT DP_SET_UNION(item, user_id, 'mechanism=DP_SIPS, epsilon=1') FROM visits",
			"SELECT DP_SET_UNION(item, user_id, 'delta=1e-6') FROM visits",
			"SELECT DP_SET_UNION(item, user_id, 'alpha=default') FROM visits",
			"SELECT DP_SET_UNION(item, user_id, 'alpha=2') FROM visits",
		},
		{
			"SELECT DP_SET_UNION(item, user_id, 'mechanism=policy_gaussian_l2') FROM visits",
			"SELECT DP_SET_UNION(item, user_id, 'mechanism=policy_gaussian_l2, alpha=default') FROM visits",
			"SELECT DP_SET_UNION(item, user_id, 'mechanism=policy_gaussian_l2, alpha=3') FROM visits",
		},
		{"SELECT DP_SET_UNION(item, user_id, 'mechanism=policy_gaussian_l2, alpha=3.5') FROM visits"},
	}
	e, g := newReuseEngine(t)
	owner := map[string]int{} // key -> its group: different groups, different keys
	for gi, group := range groups {
		specs := map[string][]string{}
		for _, q := range group {
			g.specs = nil
			if _, _, err := session(t, e, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if len(g.specs) != 1 || g.specs[0] == "" {
				t.Fatalf("%s: specifications %q", q, g.specs)
			}
			specs[g.specs[0]] = append(specs[g.specs[0]], q)
			if prev, ok := owner[g.specs[0]]; ok && prev != gi {
				t.Errorf("%s: the key of another release (%s)", q, groups[prev][0])
			}
			owner[g.specs[0]] = gi
		}
		if len(specs) != 1 {
			for s, qs := range specs {
				t.Errorf("one of %d keys: %q\n  %s", len(specs), qs, s[len(s)-min(len(s), 400):])
			}
		}
	}
}
