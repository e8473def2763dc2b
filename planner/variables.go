package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// SetCheck refuses a top-level SET of a name that is no system variable,
// such as SET dp_epsilonn = 1, with MySQL's message (error 1193 once the
// server maps it): go-mysql-server v0.20.0 resolves an unqualified SET
// target as a column first and reports "column "dp_epsilonn" could not be
// found in any table in scope". SET @@x, SET SESSION x and SET GLOBAL x
// already name the variable; user variables (@x), SET NAMES, SET CHARSET
// and SET TRANSACTION are left alone.
func SetCheck(stmt ast.Statement, _ string, _ error) error {
	set, ok := stmt.(*ast.Set)
	if !ok {
		return nil
	}
	for _, e := range set.Exprs {
		if e == nil || e.Name == nil || e.Scope != ast.SetScope_None || !e.Name.Qualifier.IsEmpty() {
			continue
		}
		name := e.Name.Name.String()
		switch strings.ToLower(name) {
		case "names", "charset", "transaction":
			continue
		}
		if strings.HasPrefix(name, "@") {
			continue // @x, @@x: scoped by their prefix
		}
		if _, _, known := sql.SystemVariables.GetGlobal(name); !known {
			return fmt.Errorf("%s", UnknownVariable(name))
		}
	}
	return nil
}

// UnknownVariable returns MySQL's message for a name that is no system
// variable ("Unknown system variable 'x'"), followed by the nearest system
// variable when one is a likely typo of it, or the list of dp_* variables
// when the name starts with dp_.
func UnknownVariable(name string) string {
	msg := fmt.Sprintf("Unknown system variable '%s'", name)
	lower := strings.ToLower(name)
	var names, dp []string
	for n := range sql.SystemVariables.GetAllGlobalVariables() {
		n = strings.ToLower(n)
		names = append(names, n)
		if strings.HasPrefix(n, "dp_") {
			dp = append(dp, n)
		}
	}
	slices.Sort(names)
	slices.Sort(dp)
	best, bestD := "", 0
	for _, n := range names {
		d := editDistance(lower, n)
		// Ties go to the dp_* variables, then to the first in order.
		if best == "" || d < bestD || d == bestD && strings.HasPrefix(n, "dp_") && !strings.HasPrefix(best, "dp_") {
			best, bestD = n, d
		}
	}
	switch {
	case best != "" && bestD <= max(2, len(lower)/4):
		return msg + "; did you mean " + best + "?"
	case strings.HasPrefix(lower, "dp_") && len(dp) > 0:
		return msg + "; dpsql's variables are " + strings.Join(dp, ", ")
	}
	return msg
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
