package integration

import "strings"

// moreWorkAttacks are the paired work attacks on the paths the first suite
// did not cover (red team, issue 21's dashboard paths and issue 24's
// caches): public keys whose protected side is empty without the victim,
// quantiles and spreads over a key only the victim holds, intervals,
// BigQuery's clause, derived tables (Metabase's nested question), the
// statement memo and reuse after a first release, server-side prepared
// statements (binary protocol), errors and conversions on the victim's
// rows (which come last in the scan), LIMIT and ORDER BY over released
// rows, a statement stopped by max_execution_time, and a GROUP BY key only
// the victim's rows make huge. pre are the session settings of every
// attack; castV is false on the victim's rows, with a warning each.
func moreWorkAttacks(pre []string, castV string) []workAttack {
	var out []workAttack
	add := func(masked, same bool, name string, stmts ...string) {
		out = append(out, workAttack{name: name, user: "analyst", stmts: append(append([]string(nil), pre...), stmts...), masked: masked, same: same})
	}
	prepared := func(masked, same bool, name, q string, args ...any) {
		add(masked, same, name, q)
		out[len(out)-1].args = args
	}
	bounds := []string{"SET dp_contribution_bounds = '0,1000'", "SET dp_max_rows_per_group = 2", "SET dp_max_groups_contributed = 1"}
	spreads := "MEDIAN(p.n), PERCENTILE_CONT(p.n, 0.1), VARIANCE(p.n), STDDEV(p.n)"
	pcastV := strings.ReplaceAll(castV, "user_id", "p.user_id")

	// Public keys whose protected side is empty without the victim (its
	// own rows only): a noise per key and statistic either way.
	victimSide := "FROM lookup l LEFT JOIN people p ON p.note = l.k AND p.user_id = 'victim' GROUP BY l.k"
	add(true, true, "more/public_keys_empty_side_bounds_set", append(bounds, "SELECT l.k, COUNT(p.n), SUM(p.n), AVG(p.n), "+spreads+" "+victimSide)...)
	add(true, true, "more/public_keys_empty_side_chosen_bounds", "SELECT l.k, COUNT(p.n), SUM(p.n), "+spreads+" "+victimSide)
	// Quantiles and spreads over the public key only the victim holds.
	add(true, true, "more/public_keys_victim_key_spreads", append(bounds, "SELECT l.k, "+spreads+" FROM lookup l LEFT JOIN people p ON p.note = l.k WHERE l.k = 'vk07' GROUP BY l.k")...)
	// Intervals: global over the victim's key, grouped with the victim
	// filtered out.
	intervals := "COUNT(*), DP_INTERVAL_LOW(COUNT(*)), DP_INTERVAL_HIGH(COUNT(*)), SUM(n), DP_INTERVAL_LOW(SUM(n)), DP_INTERVAL_HIGH(AVG(n)), MEDIAN(n), DP_INTERVAL_LOW(MEDIAN(n))"
	add(true, true, "more/intervals_global_victim_key", append(bounds, "SELECT "+intervals+" FROM people WHERE note = 'vk07'")...)
	add(true, true, "more/intervals_global_victim_key_chosen", "SELECT "+intervals+" FROM people WHERE note = 'vk07'")
	add(false, true, "more/intervals_group_exact", "SELECT note, "+intervals+" FROM people WHERE "+castV+" GROUP BY note")
	// BigQuery's clause.
	bq := "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 0.001, delta = 1e-6, max_groups_contributed = 1, privacy_unit_column = user_id) "
	add(true, true, "more/bigquery_global_victim_key", bq+"COUNT(*), SUM(n), MEDIAN(n), STDDEV(n) FROM people WHERE note = 'vk07'")
	add(false, true, "more/bigquery_group_exact", bq+"note, COUNT(*), AVG(n) FROM people WHERE "+castV+" GROUP BY note")
	add(true, true, "more/bigquery_public_keys_empty_side", bq+"l.k, COUNT(p.n), MEDIAN(p.n) "+victimSide)
	// Derived tables (Metabase's nested question).
	add(false, true, "more/derived_group_exact", "SELECT source.note, COUNT(*), SUM(source.n) FROM (SELECT note, n, user_id FROM people WHERE "+castV+") AS source GROUP BY source.note")
	add(true, true, "more/derived_global_victim_key", append(bounds, "SELECT COUNT(*), SUM(source.n), MEDIAN(source.n) FROM (SELECT * FROM people WHERE note = 'vk07') AS source")...)
	add(false, true, "more/derived_distinct_exact", "SELECT DISTINCT source.note FROM (SELECT note, user_id FROM people WHERE "+castV+") AS source")
	// The statement memo (one release for two identical parts), reuse
	// after a first release, and a warm second release.
	glob := "SELECT COUNT(*), SUM(n), MEDIAN(n) FROM people WHERE note = 'vk07'"
	add(true, true, "more/memo_union_all", append(bounds, glob+" UNION ALL "+glob)...)
	add(true, true, "more/reuse_global_victim_key", append(append([]string{"SET dp_reuse = ON"}, bounds...), glob, glob)...)
	add(false, true, "more/reuse_distinct_exact", "SET dp_reuse = ON", "SELECT DISTINCT note FROM people WHERE "+castV, "SELECT DISTINCT note FROM people WHERE "+castV)
	add(true, true, "more/reuse_public_keys", append(append([]string{"SET dp_reuse = ON"}, bounds...),
		"SELECT l.k, COUNT(p.n), SUM(p.n) FROM lookup l LEFT JOIN people p ON p.note = l.k GROUP BY l.k",
		"SELECT l.k, COUNT(p.n), SUM(p.n) FROM lookup l LEFT JOIN people p ON p.note = l.k GROUP BY l.k")...)
	add(true, true, "more/warm_second_global_victim_key", append(bounds, glob, glob)...)
	// Server-side prepared statements (the binary protocol).
	prepared(false, true, "more/prepared_distinct_exact", "SELECT DISTINCT note FROM people WHERE IF(user_id = ?, CAST(secret AS SIGNED), 1) = 1", "victim")
	prepared(true, true, "more/prepared_global_victim_unit", "SELECT COUNT(*), SUM(n), MEDIAN(n) FROM people WHERE user_id = ? AND n > ?", "victim", 3)
	prepared(true, false, "more/prepared_group_victim_key", "SELECT note, COUNT(*), AVG(n) FROM people WHERE note = ? GROUP BY note", "vk07")
	prepared(true, true, "more/prepared_public_keys", "SELECT l.k, COUNT(p.n), SUM(p.n) FROM lookup l LEFT JOIN people p ON p.note = l.k AND p.user_id = ? GROUP BY l.k", "victim")
	// Errors and conversions on the victim's rows only (last in the
	// scan): division by zero under strict mode, conversions, a value that
	// fails in the aggregate.
	add(false, true, "more/division_strict_exact", "SET sql_mode = 'TRADITIONAL'", "SELECT note, COUNT(*) FROM people WHERE IF(user_id = 'victim', n DIV (n - n), 1) = 1 GROUP BY note")
	add(false, true, "more/conversions_exact", "SELECT DISTINCT note FROM people WHERE IF(user_id = 'victim', CAST(email AS DECIMAL(5,2)) + CONVERT(secret, DATE) IS NULL, 0) = 0")
	add(false, true, "more/value_fails_exact", append(bounds, "SELECT SUM(IF(user_id = 'victim', CAST(secret AS SIGNED) DIV 0, n)), MEDIAN(IF(user_id = 'victim', 1 DIV 0, n)) FROM people")...)
	// LIMIT and ORDER BY on the released rows.
	add(false, true, "more/group_order_limit_exact", "SELECT note, COUNT(*) AS c FROM people WHERE "+castV+" GROUP BY note ORDER BY c DESC, note LIMIT 2")
	add(false, true, "more/distinct_order_limit_exact", "SELECT DISTINCT note FROM people WHERE "+castV+" ORDER BY note DESC LIMIT 1")
	add(true, true, "more/public_keys_order_limit", append(bounds, "SELECT l.k, COUNT(p.n) FROM lookup l LEFT JOIN people p ON p.note = l.k AND "+pcastV+" GROUP BY l.k ORDER BY l.k LIMIT 2")...)
	// A statement stopped by max_execution_time during the scan, whose
	// last rows are the victim's: the same error, charge and connection.
	add(false, true, "error/stopped_by_max_execution_time", "SET max_execution_time = 1",
		"SELECT note, COUNT(*) FROM people WHERE LENGTH(HEX(HEX(HEX(HEX(secret))))) > 0 AND "+castV+" GROUP BY note")
	out[len(out)-1].timed = true
	// Memory: a GROUP BY key that only the victim's rows make huge (48,000
	// bytes, under the 64 KiB value limit): beyond the row's work budget,
	// so the rows are skipped as rows that fail are (docs/privacy.md, the
	// row's work budget). With release_row_work alone (1 MiB) the victim's
	// rows made 40 candidate keys of 48 KB each (3 more random words).
	huge := "CONCAT(note" + strings.Repeat(", IF(user_id = 'victim', LPAD('x', 16000, 'x'), '')", 3) + ")"
	add(false, true, "more/huge_victim_key_group", "SELECT "+huge+" AS k, COUNT(*) FROM people GROUP BY k")
	add(false, true, "more/huge_victim_key_distinct", "SELECT DISTINCT "+huge+" AS k FROM people")
	// The costly branch of §30 within the row's budget (one value of
	// 3,900 characters, sized at 15,600 bytes): the largest per-row
	// difference the budget leaves on a row of this table.
	within := "LENGTH(LPAD(secret, IF(email = 'victim@example.org', 3900, 1), 'x')) > 0"
	add(false, true, "more/costly_branch_within_budget_scan", "SELECT DISTINCT note FROM people WHERE email <> 'victim@example.org' AND "+within)
	return out
}
