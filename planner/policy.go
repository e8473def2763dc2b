package planner

import (
	"github.com/dpsql/dpsql/functions"
)

// PolicyRules returns the analyst rules of the governed server: the rewrite
// of SELECT DISTINCT / GROUP BY over protected tables into DP releases, and
// the guard that refuses every other read of protected rows (MySQL error
// 1142). Install them after Rules().
//
// (Work in progress on main: the implementation lands in this file.)
func PolicyRules(gov functions.Governor) []Rule {
	_ = gov
	return nil
}
