package tokenize

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unicode"
	"unicode/utf8"
)

// referenceEach is the scanner before its ASCII fast path (kept to test
// that the fast path changes nothing).
func (s *Scanner) referenceEach(text []byte, emit func(tok []byte)) {
	tok := s.buf[:0]
	pendingApos := false // an apostrophe seen right after a token character
	flush := func() {
		if len(tok) > 0 {
			emit(tok)
			tok = tok[:0]
		}
		pendingApos = false
	}
	for i := 0; i < len(text); {
		c := text[i]
		if (c == 'h' || c == 'H' || c == 'f' || c == 'F' || c == 'w' || c == 'W') && urlAt(text, i) {
			flush()
			i = skipNonSpace(text, i)
			continue
		}
		var r rune
		size := 1
		if c < utf8.RuneSelf {
			r = rune(c)
		} else {
			r, size = utf8.DecodeRune(text[i:])
		}
		i += size
		switch {
		case r < utf8.RuneSelf && isASCIIAlnum(byte(r)):
			if pendingApos {
				tok = append(tok, '\'')
				pendingApos = false
			}
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			tok = append(tok, byte(r))
		case r == '\'' || r == '\u2019' || r == '\u2018' || r == '\u02bc':
			if len(tok) > 0 && !pendingApos {
				pendingApos = true
			} else {
				flush()
			}
		case r >= utf8.RuneSelf && r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsNumber(r)):
			if pendingApos {
				tok = append(tok, '\'')
				pendingApos = false
			}
			tok = utf8.AppendRune(tok, unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
	s.buf = tok
}

func tokensBoth(text []byte) (fast, ref []string) {
	var a, b Scanner
	a.Each(text, func(tok []byte) { fast = append(fast, string(tok)) })
	b.referenceEach(text, func(tok []byte) { ref = append(ref, string(tok)) })
	return fast, ref
}

// TestFastPathMatchesReference: on random text over an alphabet rich in the
// characters the scanner treats specially (URL prefixes, apostrophes and
// their look-alikes, case, digits, non-ASCII letters, invalid bytes), the
// scanner gives exactly the tokens of the scanner before its fast path.
func TestFastPathMatchesReference(t *testing.T) {
	pieces := []string{"a", "b", "Z", "h", "H", "f", "F", "w", "W", "7", " ", "\t", ".", "_", "'", "’", "‘", "ʼ",
		"http://", "HTTPS://", "ftp://", "www.", "wWw.", "é", "Σ", "数", "½", "\xff", "\u00a0", "\x1c", "don't", "x", "-"}
	r := rand.New(rand.NewPCG(8, 8))
	for range 20000 {
		var text []byte
		for range r.IntN(40) {
			text = append(text, pieces[r.IntN(len(pieces))]...)
		}
		if fast, ref := tokensBoth(text); !slices.Equal(fast, ref) {
			t.Fatalf("%q: tokens %q, reference %q", text, fast, ref)
		}
	}
}

// FuzzFastPathMatchesReference is TestFastPathMatchesReference on arbitrary
// bytes.
func FuzzFastPathMatchesReference(f *testing.F) {
	f.Add("Hello, World! see https://x.y/z and www.a.b c don't ‘quote’")
	f.Fuzz(func(t *testing.T, s string) {
		if fast, ref := tokensBoth([]byte(s)); !slices.Equal(fast, ref) {
			t.Fatalf("%q: tokens %q, reference %q", s, fast, ref)
		}
	})
}
