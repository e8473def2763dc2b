package integration

import (
	"os"
	"strconv"
	"testing"
)

// releasedOnly returns per restricted to the keys with at least minUsers
// users: a model of the keys the default selection releases (about 58
// users give a key a release probability of ½ at Δ0 = 128, docs/accuracy.md
// §5), for a choice of the row budget's (Δ0_a, m) made after the selection,
// whose loss counts only the rows of released keys (a row of a key that is
// not released is in no output, so losing it is no error) and whose budget
// walks only released keys.
func releasedOnly(per map[string]map[string]int, minUsers int) map[string]map[string]int {
	users := map[string]int{}
	for _, m := range per {
		for w := range m {
			users[w]++
		}
	}
	out := make(map[string]map[string]int, len(per))
	for u, m := range per {
		for w, c := range m {
			if users[w] < minUsers {
				continue
			}
			if out[u] == nil {
				out[u] = map[string]int{}
			}
			out[u][w] = c
		}
	}
	return out
}

// releasedMinUsers is the model's threshold (DPSQL_ORACLE_MINUSERS, 58 by
// default).
func releasedMinUsers() int {
	if v, err := strconv.Atoi(os.Getenv("DPSQL_ORACLE_MINUSERS")); err == nil {
		return v
	}
	return 58
}

// TestRowBudgetReleasedOracle is TestRowBudgetObjectiveOracle with the
// choice and the budget over the released keys only (releasedOnly). Run
// with DPSQL_ORACLE=1.
func TestRowBudgetReleasedOracle(t *testing.T) {
	if os.Getenv("DPSQL_ORACLE") == "" {
		t.Skip("set DPSQL_ORACLE=1 for the row budget's objective over released keys on the demo")
	}
	per := demoPer(t)
	n := releasedMinUsers()
	objectiveOracle(t, "demo top 20, keys of ≥ "+strconv.Itoa(n)+" users", releasedOnly(per, n), 20, []float64{8, 11})
}

// TestRowBudgetReleasedOraclePython is TestRowBudgetReleasedOracle on
// git_python_ecosystem. Run with DPSQL_ORACLE=1.
func TestRowBudgetReleasedOraclePython(t *testing.T) {
	if os.Getenv("DPSQL_ORACLE") == "" {
		t.Skip("set DPSQL_ORACLE=1 for the row budget's objective over released keys on git_python_ecosystem")
	}
	n := releasedMinUsers()
	per := releasedOnly(pythonPer(t), n)
	objectiveOracle(t, "git_python_ecosystem top 20, keys of ≥ "+strconv.Itoa(n)+" users", per, 20, []float64{32, 64})
	objectiveOracle(t, "git_python_ecosystem top 100, keys of ≥ "+strconv.Itoa(n)+" users", per, 100, []float64{32, 64})
}
