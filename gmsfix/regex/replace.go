package regex

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// replacement is a parsed replacement string: literal text and group
// references, in ICU's syntax (uregex_appendReplacement): $n is group n,
// taking as many digits as keep n at most the number of groups; ${name} is
// a named group; \uhhhh and \Uhhhhhhhh are code points; \ before any other
// character (or a malformed \u) makes it literal. A group that did not take part in the match
// contributes nothing.
type replacement []replPiece

type replPiece struct {
	lit   string
	group int // ICU group number; -1 for literal text
}

func parseReplacement(s string, prog *program) (replacement, error) {
	bad := func(format string, args ...any) (replacement, error) {
		return nil, ErrInvalidReplacement.New(fmt.Sprintf(format, args...))
	}
	ngroups := len(prog.capIndex) - 1
	var out replacement
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, replPiece{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		c, w := utf8.DecodeRuneInString(s[i:])
		i += w
		switch c {
		case '\\':
			if i == len(s) {
				continue // ICU drops a trailing backslash
			}
			e, w := utf8.DecodeRuneInString(s[i:])
			i += w
			if e == 'u' || e == 'U' {
				if r, n, ok := hexCodePoint(s[i:], e); ok {
					lit.WriteRune(r)
					i += n
					continue
				}
				// ICU treats a malformed \u like any other escaped letter.
			}
			lit.WriteRune(e)
		case '$':
			if i < len(s) && s[i] == '{' {
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					return bad("missing } after ${")
				}
				name := s[i+1 : i+end]
				i += end + 1
				g, ok := prog.names[name]
				if !ok {
					return bad("the pattern has no group named %q", name)
				}
				flush()
				out = append(out, replPiece{group: g})
				continue
			}
			if i >= len(s) || s[i] < '0' || s[i] > '9' {
				return bad(`$ must be followed by a group number or {name}; write \$ for a dollar sign`)
			}
			g, digits := 0, 0
			for i < len(s) && s[i] >= '0' && s[i] <= '9' && g*10+int(s[i]-'0') <= ngroups {
				g = g*10 + int(s[i]-'0')
				digits++
				i++
			}
			if digits == 0 {
				return bad("the pattern has no group %c (it has %d)", s[i], ngroups)
			}
			flush()
			out = append(out, replPiece{group: g})
		default:
			lit.WriteString(s[i-w : i])
		}
	}
	flush()
	return out, nil
}

// hexCodePoint reads the 4 (\u) or 8 (\U) hex digits at the start of s.
func hexCodePoint(s string, kind rune) (rune, int, bool) {
	n := 4
	if kind == 'U' {
		n = 8
	}
	if len(s) < n {
		return 0, 0, false
	}
	v := 0
	for k := 0; k < n; k++ {
		d, ok := hexVal(rune(s[k]))
		if !ok {
			return 0, 0, false
		}
		v = v<<4 | d
	}
	if v > maxRune {
		return 0, 0, false
	}
	return rune(v), n, true
}

// expand appends the replacement for the match loc of text s to dst.
func (r replacement) expand(dst []byte, s string, loc []int, prog *program) []byte {
	for _, p := range r {
		if p.group < 0 {
			dst = append(dst, p.lit...)
			continue
		}
		g := prog.capIndex[p.group]
		if 2*g+1 < len(loc) && loc[2*g] >= 0 {
			dst = append(dst, s[loc[2*g]:loc[2*g+1]]...)
		}
	}
	return dst
}
