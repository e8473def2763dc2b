// Package gmsfix holds dpsql's workarounds for go-mysql-server v0.20.0:
// replacements for functions and operators whose implementation there lets
// one statement take unbounded memory or time, and analyzer rules that avoid
// its crashes. Each names the go-mysql-server behaviour it works around, so
// that it can be deleted when dpsql moves to a version without it
// (docs/gms.md lists them): function guards (guard.go, bounded.go), a
// linear LIKE (like.go), LIMIT 0 over a keyless aggregation (limit.go),
// and ENUM-to-text in CASE over information_schema (enumtext.go). The module replacement of go-icu-regex by an RE2
// engine lives in the nested module gmsfix/regex.
package gmsfix
