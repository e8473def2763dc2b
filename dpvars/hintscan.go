package dpvars

import "strings"

// hintBodies returns the bodies of the optimizer-hint comments (/*+ … */)
// of a statement's text, skipping what is not a comment: string literals
// ('…', "…", with backslash and doubled-quote escapes), quoted identifiers
// (`…`), other comments (/* … */, -- …, # …). A hint spelled inside a
// string literal is data, not an option of the statement: it must not set
// one (docs/privacy.md §33).
func hintBodies(q string) []string {
	var out []string
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(q, i)
		case strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return out // unterminated: the parser refuses the statement
			}
			if strings.HasPrefix(q[i:], "/*+") {
				out = append(out, q[i+3:i+2+end])
			}
			i += 2 + end + 2
		case c == '#' || strings.HasPrefix(q[i:], "-- ") || strings.HasPrefix(q[i:], "--\t") || strings.HasPrefix(q[i:], "--\n"):
			nl := strings.IndexByte(q[i:], '\n')
			if nl < 0 {
				return out
			}
			i += nl + 1
		default:
			i++
		}
	}
	return out
}

// skipQuoted returns the index after the quoted token that starts at i.
func skipQuoted(q string, i int) int {
	quote := q[i]
	for j := i + 1; j < len(q); j++ {
		switch {
		case q[j] == '\\' && quote != '`':
			j++
		case q[j] == quote && j+1 < len(q) && q[j+1] == quote:
			j++
		case q[j] == quote:
			return j + 1
		}
	}
	return len(q)
}
