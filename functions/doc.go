// Package functions adapts dpsql's privacy core to go-mysql-server: the
// DP_SET_UNION aggregate (setunion.go), the MEDIAN and PERCENTILE_CONT
// aggregates (quantile.go: private over protected tables through the
// planner, exact over public rows), the DP_NGRAMS table function
// (ngrams.go) and the options strings they take (options.go). The dp_*
// session variables that supply default options, so that BI tools which
// cannot pass options still work, and the /*+ SET_VAR(dp_…) */ hints that
// override them for one statement are package dpvars's.
//
// DP_NGRAMS is a whole release: on a governed engine (Config.Governor) it
// checks the budget while the statement is planned, charges or reuses
// through package release before it reads a row, and scans the table in a
// release context. DP_SET_UNION only collects pairs and runs the
// mechanism; an engine needs the planner rules of package planner to plan
// it as an aggregate (go-mysql-server v0.20.0 recognises only built-in
// aggregate names), and on a governed engine the planner turns it into a
// release (planner.Release) like SELECT DISTINCT. Package server assembles
// both; docs/architecture.md §3 describes the release lifecycle.
package functions
