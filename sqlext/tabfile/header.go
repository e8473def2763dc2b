package tabfile

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// LooksLikeHeader reports whether a row looks like the header of a TSV or CSV
// file: it has at least one field and every field, without surrounding
// spaces, is a column name of 1 to 64 bytes of letters and '_' (no digit, no
// space, no punctuation), and no two fields are the same name (ignoring
// case). So "user_id,query" is a header, while "u00006,divorce
// lawyer", "42,shoes" and "alice,alice" are data.
//
// The rule reads this row alone, never the rows after it: a program that
// skips the first row by it decides the same for every file that starts with
// that row, whatever the other rows hold. It errs both ways on purpose: a
// header with a digit (col1) is not recognised, and a first data row of
// single words without digits (alice,apple) is taken for one; callers
// say what they decided and let the user override it.
func LooksLikeHeader(fields [][]byte) bool {
	if len(fields) == 0 {
		return false
	}
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		f = bytes.TrimSpace(f)
		if len(f) == 0 || len(f) > 64 {
			return false
		}
		for i, w := 0, 0; i < len(f); i += w {
			var r rune
			r, w = utf8.DecodeRune(f[i:])
			if !(unicode.IsLetter(r) || r == '_') {
				return false
			}
		}
		name := string(bytes.ToLower(f))
		if seen[name] {
			return false
		}
		seen[name] = true
	}
	return true
}
