// Package tokenize splits user text into the tokens that become items (DPSU
// over words) and n-grams (DPNE). The tokenisation is part of the privacy
// contract, because it decides what an item is, and it is the one the shared
// corpora's statistics were computed with:
//
//  1. lowercase (Unicode simple case mapping);
//  2. map the apostrophe look-alikes ’ (U+2019), ‘ (U+2018) and ʼ (U+02BC) to ';
//  3. strip URLs: every leftmost match of (?:https?|ftp)://\S+ or www\.\S+;
//  4. tokens are the matches of [^\W_]+(?:'[^\W_]+)*: maximal runs of Unicode
//     letters or numbers (categories L and N), where an apostrophe is kept
//     only between two such characters ("don't", not "'quoted'").
//
// Tokens never span rows, so n-grams never cross rows. The scanner is a
// hand-written equivalent of the Python reference (re.findall with Unicode
// patterns) that does not allocate per token; on the four shared corpora it
// reproduces the published token, unigram and bigram counts exactly. It
// differs from Python only where Python's str.lower() is not a rune-to-rune
// mapping (a word-final Σ becomes σ, not ς; İ becomes i, not i̇).
package tokenize

import (
	"unicode"
	"unicode/utf8"
)

// Scanner tokenises text. The zero value is ready to use. A Scanner reuses an
// internal buffer and is not safe for concurrent use.
type Scanner struct {
	buf []byte
}

// Each calls emit for every token of text, in order. The slice passed to emit
// is valid only until emit returns.
func (s *Scanner) Each(text []byte, emit func(tok []byte)) {
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
		// Fast path: a run of ASCII letters and digits other than h, f, w
		// (where a URL may start) extends the token, lowercased.
		if l := plainLower[c]; l != 0 {
			if pendingApos {
				tok = append(tok, '\'')
				pendingApos = false
			}
			tok = append(tok, l)
			for i++; i < len(text); i++ {
				if l = plainLower[text[i]]; l == 0 {
					break
				}
				tok = append(tok, l)
			}
			continue
		}
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

// Tokens returns the tokens of text as strings.
func Tokens(text string) []string {
	var s Scanner
	var out []string
	s.Each([]byte(text), func(tok []byte) { out = append(out, string(tok)) })
	return out
}

// plainLower maps the ASCII letters and digits other than h, f and w (in
// either case) to their lowercase form, every other byte to 0.
var plainLower = func() (t [256]byte) {
	for c := 0; c < 128; c++ {
		b := byte(c)
		if isASCIIAlnum(b) {
			switch b | 0x20 {
			case 'h', 'f', 'w':
				continue
			}
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			t[c] = b
		}
	}
	return t
}()

func isASCIIAlnum(c byte) bool {
	return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || ('A' <= c && c <= 'Z')
}

// urlAt reports whether a URL match of step 3 starts at text[i]: a scheme
// "http://", "https://", "ftp://" or the prefix "www." (ASCII, any case, as
// the text is lowercased first) followed by at least one non-space character.
func urlAt(text []byte, i int) bool {
	rest := text[i:]
	var n int
	switch {
	case hasPrefixFold(rest, "https://"):
		n = 8
	case hasPrefixFold(rest, "http://"):
		n = 7
	case hasPrefixFold(rest, "ftp://"):
		n = 6
	case hasPrefixFold(rest, "www."):
		n = 4
	default:
		return false
	}
	if n >= len(rest) {
		return false
	}
	r, _ := utf8.DecodeRune(rest[n:])
	return !isSpace(r)
}

func hasPrefixFold(s []byte, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for k := 0; k < len(prefix); k++ {
		c := s[k]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[k] {
			return false
		}
	}
	return true
}

// skipNonSpace returns the index of the first whitespace character at or
// after i (the end of a \S+ run).
func skipNonSpace(text []byte, i int) int {
	for i < len(text) {
		r, size := utf8.DecodeRune(text[i:])
		if isSpace(r) {
			return i
		}
		i += size
	}
	return i
}

// isSpace matches Python's str.isspace, which \s and \S follow: Unicode
// White_Space plus the ASCII information separators U+001C–U+001F.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}
