package regex

import (
	"context"
	"io"
	"unicode/utf8"
)

// readerWork is the estimated work (program instructions × bytes of text)
// above which a search reads the text through cancelReader, so that a
// cancelled context (KILL QUERY) stops it within a few thousand characters.
// Below it a search takes well under a second and uses Go's faster string
// matchers.
const readerWork = 1 << 27

// cancelReader feeds text to regexp's RuneReader matchers and ends the
// input early once ctx is done; callers then report ctx.Err().
type cancelReader struct {
	ctx context.Context
	s   string
	i   int
	n   int
}

func (r *cancelReader) ReadRune() (rune, int, error) {
	if r.i >= len(r.s) {
		return 0, 0, io.EOF
	}
	if r.n++; r.n&0xfff == 0 && r.ctx.Err() != nil {
		return 0, 0, io.EOF
	}
	c, w := utf8.DecodeRuneInString(r.s[r.i:])
	r.i += w
	return c, w, nil
}

// heavy reports whether searching n bytes of text is estimated to exceed
// readerWork.
func (pr *privateRegex) heavy(n int) bool { return n > 0 && pr.prog.size > readerWork/n }

// match reports whether the pattern matches anywhere in the text.
func (pr *privateRegex) match(ctx context.Context) (bool, error) {
	if len(pr.prog.termGroups) > 0 || !pr.heavy(len(pr.text)) {
		loc, err := pr.find(ctx, 0, false)
		return loc != nil, err
	}
	ok := pr.prog.re.MatchReader(&cancelReader{ctx: ctx, s: pr.text})
	return ok, ctx.Err()
}

// find returns the leftmost-first match that starts at or after byte offset
// p (a character boundary), with every assertion seeing the whole text, as
// ICU's find(start) does. loc holds byte offsets into the text: the match,
// then each Go submatch (only when groups is set or the pattern has a final
// $). It is nil when there is no match.
func (pr *privateRegex) find(ctx context.Context, p int, groups bool) ([]int, error) {
	prog, s := pr.prog, pr.text
	re, base, skip := prog.re, p, false
	if p > 0 && prog.leftContext {
		ctxRe, err := prog.contextRe()
		if err != nil {
			return nil, err
		}
		_, w := utf8.DecodeLastRuneInString(s[:p])
		re, base, skip = ctxRe, p-w, true
	}
	sub := s[base:]
	var loc []int
	switch {
	case pr.heavy(len(sub)):
		loc = re.FindReaderSubmatchIndex(&cancelReader{ctx: ctx, s: sub})
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	case groups || len(prog.termGroups) > 0:
		loc = re.FindStringSubmatchIndex(sub)
	default:
		loc = re.FindStringIndex(sub)
	}
	if loc == nil {
		return nil, nil
	}
	for i := range loc {
		if loc[i] >= 0 {
			loc[i] += base
		}
	}
	if skip {
		// ctxRe's leading (?s:.) consumed the character before p or a
		// later one; the pattern's match starts after it.
		_, w := utf8.DecodeRuneInString(s[loc[0]:])
		loc[0] += w
	}
	prog.adjust(loc)
	return loc, nil
}

// each calls yield with the matches from byte offset p on, in ICU's order:
// after a match the next search starts at its end, or one character later
// if it was empty. (Unlike Go's FindAll, ICU reports an empty match right
// after a non-empty one: a* finds "", "aaa", "" and "" in "baaac".)
func (pr *privateRegex) each(ctx context.Context, p int, groups bool, yield func(loc []int) bool) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		loc, err := pr.find(ctx, p, groups)
		if err != nil || loc == nil || !yield(loc) {
			return err
		}
		p = loc[1]
		if loc[0] == loc[1] {
			if p >= len(pr.text) {
				return nil
			}
			_, w := utf8.DecodeRuneInString(pr.text[p:])
			p += w
		}
	}
}

// nth returns the occurrence-th match from byte offset p (the first when
// occurrence < 1), or nil.
func (pr *privateRegex) nth(ctx context.Context, p, occurrence int, groups bool) ([]int, error) {
	var found []int
	k := 0
	err := pr.each(ctx, p, groups, func(loc []int) bool {
		k++
		if k >= occurrence {
			found = loc
			return false
		}
		return true
	})
	return found, err
}

// byteOffset returns the byte offset of the character with 0-based index n
// in s; ok is false unless 0 ≤ n ≤ the number of characters. Invalid UTF-8
// counts one character per byte, as in ICU after go-mysql-server's
// conversion.
func byteOffset(s string, n int) (int, bool) {
	if n < 0 {
		return 0, false
	}
	off := 0
	for ; n > 0; n-- {
		if off >= len(s) {
			return 0, false
		}
		if s[off] < utf8.RuneSelf {
			off++
			continue
		}
		_, w := utf8.DecodeRuneInString(s[off:])
		off += w
	}
	return off, true
}

func charCount(s string) int { return utf8.RuneCountInString(s) }
