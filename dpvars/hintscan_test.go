package dpvars

import (
	"slices"
	"testing"
)

// TestHintBodies: hint comments are found outside string literals, quoted
// identifiers and other comments only.
func TestHintBodies(t *testing.T) {
	for q, want := range map[string][]string{
		"SELECT /*+ SET_VAR(dp_epsilon = 0.5) */ 1":            {" SET_VAR(dp_epsilon = 0.5) "},
		"SELECT 1 WHERE x <> '/*+ SET_VAR(dp_epsilon = 9) */'": nil,
		`SELECT 1 WHERE x <> "/*+ SET_VAR(dp_epsilon = 9) */"`: nil,
		"SELECT `/*+ a */` FROM t":                             nil,
		"SELECT 1 -- /*+ SET_VAR(dp_epsilon = 9) */\n":         nil,
		"SELECT 1 # /*+ SET_VAR(dp_epsilon = 9) */":            nil,
		"SELECT /* /*+ not a hint */ 1":                        nil,
		`SELECT 'it''s', 'a\'b /*+ x */', /*+ y */ 1`:          {" y "},
		"SELECT /*+ a */ 1 UNION SELECT /*+ b */ 2":            {" a ", " b "},
		"SELECT 'unterminated /*+ x */":                        nil,
		"SELECT 1 --/*+ x */":                                  {" x "}, // -- needs a space to start a comment
	} {
		if got := hintBodies(q); !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", q, got, want)
		}
	}
}
