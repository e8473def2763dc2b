package tokenize

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzTokens checks the tokeniser's invariants on arbitrary bytes: no panic;
// every token is non-empty, valid UTF-8, lowercase-stable, made of letters,
// numbers and inner apostrophes only; and the scanner and Tokens agree.
func FuzzTokens(f *testing.F) {
	for _, s := range []string{
		"Hello, World!", "don't ‘quote’ meʼ", "see https://x.y/z and www.a.b c", "xhttps://q ok",
		"a''b '' ' a'", "Ünïcödé ΣΊΣΥΦΟΣ 数据 ½", "\xff\xfe bad", "wwww.x", "http://", "ftp:// x", "İstanbul",
		strings.Repeat("a'", 1000),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var sc Scanner
		var viaScanner []string
		sc.Each([]byte(s), func(tok []byte) { viaScanner = append(viaScanner, string(tok)) })
		toks := Tokens(s)
		if len(toks) != len(viaScanner) {
			t.Fatalf("Tokens and Scanner disagree on %q", s)
		}
		for i, tok := range toks {
			if tok != viaScanner[i] || tok == "" || !utf8.ValidString(tok) {
				t.Fatalf("bad token %q of %q", tok, s)
			}
			if tok[0] == '\'' || tok[len(tok)-1] == '\'' || strings.Contains(tok, "''") {
				t.Fatalf("token %q of %q has an outer or double apostrophe", tok, s)
			}
			for _, r := range tok {
				if r != '\'' && !unicode.IsLetter(r) && !unicode.IsNumber(r) {
					t.Fatalf("token %q of %q holds %q", tok, s, r)
				}
			}
			if again := Tokens(tok); len(again) != 1 || again[0] != tok {
				t.Fatalf("token %q of %q does not re-tokenise to itself: %q", tok, s, again)
			}
		}
	})
}
