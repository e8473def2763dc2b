// Package regex is dpsql's replacement for github.com/dolthub/go-icu-regex:
// the Go API that go-mysql-server v0.20.0 uses for REGEXP, RLIKE,
// REGEXP_LIKE, REGEXP_INSTR, REGEXP_SUBSTR and REGEXP_REPLACE, implemented
// on Go's regexp package instead of ICU compiled to WebAssembly.
//
// Go's regexp is RE2: it matches in time linear in the length of the pattern
// times the length of the text, so there is no catastrophic backtracking, and
// nothing runs at program start (go-icu-regex compiled its WebAssembly module
// in a package initialiser, 0.35 s of CPU in every process).
//
// Patterns keep MySQL 8's ICU syntax and meaning: they are parsed here (parse.go)
// into a tree with ICU semantics and written out in Go syntax (emit.go), which
// makes ICU's Unicode definitions explicit (\w, \d, \s, [[:alpha:]] and
// \p{…} cover all of Unicode, '.' stops at every ICU line terminator, $
// also matches before a final line terminator, and so on). Constructs that
// RE2 cannot run in linear time — backreferences, lookahead and lookbehind,
// atomic groups, possessive quantifiers, \G, \X — are rejected with
// ErrInvalidRegex, whose message names the construct and its position. The
// remaining differences from ICU are listed in README.md.
//
// Positions are characters (code points), counted from 1, as MySQL counts
// them; go-icu-regex counted UTF-16 code units, which differs only after a
// character outside the Basic Multilingual Plane. Searches follow ICU's
// find/findNext: a search from a position sees the text before it (for ^,
// \b), and after a match the next search starts at its end, or one
// character later if the match was empty.
//
// The module is wired into dpsql with a replace directive in the root
// go.mod; see README.md for how to remove it.
package regex
