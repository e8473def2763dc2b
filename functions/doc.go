// Package functions adapts dpsql's privacy core to go-mysql-server: the
// DP_SET_UNION aggregate, the options strings DP functions take, and the
// dp_* session variables that supply default options (so that BI tools,
// which cannot pass options, still work).
//
// The package only defines functions; an engine needs the planner rules of
// package planner to plan DP_SET_UNION as an aggregate (go-mysql-server
// v0.20.0 recognises only built-in aggregate names). Package server
// assembles both.
package functions
