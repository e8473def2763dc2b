package regex

import (
	"context"
	"sync/atomic"
	"unicode/utf8"

	"gopkg.in/src-d/go-errors.v1"
)

// maxResultBytes is MaxResultBytes's current value.
var maxResultBytes atomic.Int64

func init() { maxResultBytes.Store(DefaultMaxResultBytes) }

// DefaultMaxResultBytes is the default of SetMaxResultBytes.
const DefaultMaxResultBytes = 64 << 20

// SetMaxResultBytes bounds the length of Replace's results (for the whole
// process); a longer result is ErrResultTooLarge, found without building
// it. go-mysql-server's REGEXP_REPLACE is the only caller.
func SetMaxResultBytes(n int) {
	if n > 0 {
		maxResultBytes.Store(int64(n))
	}
}

// Regex is a compiled pattern and the text it is matched against, the
// interface go-mysql-server's REGEXP functions use. Positions and
// occurrences count from 1 except where noted; positions are characters
// (code points), as in MySQL. A Regex is for use by one goroutine at a time.
type Regex interface {
	// SetRegexString compiles regexStr, in ICU syntax, with flags. It must
	// be called before any other method but Close. On error the Regex has
	// no pattern.
	SetRegexString(ctx context.Context, regexStr string, flags RegexFlags) error
	// SetMatchString sets the text that the other methods search. It must
	// be called after SetRegexString.
	SetMatchString(ctx context.Context, matchStr string) error
	// IndexOf returns the 1-based character position of the start of the
	// occurrence-th match at or after character position start, or of the
	// character after its end when endIndex is set; 0 when there is no such
	// match or start is outside 0 … length+1 (0 counts as 1). An
	// occurrence below 1 means the first.
	IndexOf(ctx context.Context, start int, occurrence int, endIndex bool) (int, error)
	// Matches reports whether there is an occurrence-th match at or after
	// start. Unlike the other methods, start counts from 0 here (as in
	// go-icu-regex; go-mysql-server always passes 0, 0).
	Matches(ctx context.Context, start int, occurrence int) (bool, error)
	// Replace returns the text with replacementStr in place of the
	// occurrence-th match at or after character position start, or of every
	// match from start on when occurrence is 0. In replacementStr, $n and
	// ${name} stand for a group and \ makes the next character literal.
	// With no such match the text is returned unchanged.
	Replace(ctx context.Context, replacementStr string, start int, occurrence int) (string, error)
	// Substring returns the occurrence-th match at or after character
	// position start (0 counts as 1), and false when there is none.
	Substring(ctx context.Context, start int, occurrence int) (string, bool, error)
	// StringBufferSize returns 0: this implementation keeps no string
	// buffers.
	StringBufferSize() uint32
	// Close releases the pattern and the text. It may be called more than
	// once. Nothing leaks if it is not called, as this implementation holds
	// no resources outside the Go heap.
	Close() error
}

var (
	// ErrRegexNotYetSet is returned when a method other than SetRegexString
	// or Close is called before a pattern has been compiled.
	ErrRegexNotYetSet = errors.NewKind("SetRegexString must be called before any other function")
	// ErrMatchNotYetSet is returned when a search is made before
	// SetMatchString.
	ErrMatchNotYetSet = errors.NewKind("SetMatchString must be called as there is nothing to match against")
	// ErrInvalidRegex is returned by SetRegexString for a pattern that
	// cannot be compiled; the message says why and where.
	ErrInvalidRegex = errors.NewKind("the given regular expression is invalid: %s")
	// ErrResultTooLarge is returned by Replace when its result would be
	// longer than MaxResultBytes.
	ErrResultTooLarge = errors.NewKind("the result of the replacement would be longer than %d bytes")
	// ErrInvalidReplacement is returned by Replace for a replacement string
	// with a bad $ group reference or \u escape.
	ErrInvalidReplacement = errors.NewKind("the replacement string of the regular expression is invalid: %s")
	// ErrIndexOutOfBounds is returned by Replace and Matches for a start
	// position outside the text.
	ErrIndexOutOfBounds = errors.NewKind("Index out of bounds for regular expression search.")
)

// regexLeakHandler holds the handler set by SetRegexLeakHandler.
var regexLeakHandler atomic.Value

// SetRegexLeakHandler records a function to call when a Regex is garbage
// collected without Close. go-icu-regex needed it because each Regex held a
// WebAssembly module; this implementation holds nothing that can leak, so
// the handler is kept for API compatibility and never called.
func SetRegexLeakHandler(handler func()) {
	regexLeakHandler.Store(handler)
}

// RegexFlags select matching options; combine them with |. The values are
// ICU's (and go-icu-regex's).
type RegexFlags uint32

const (
	// RegexFlags_None selects the defaults: case-sensitive, '.' does not
	// match line terminators, ^ and $ match at the ends of the text.
	RegexFlags_None RegexFlags = 0

	// RegexFlags_Case_Insensitive enables case-insensitive matching, using
	// Unicode simple case folding (MySQL's match type i).
	RegexFlags_Case_Insensitive RegexFlags = 2

	// RegexFlags_Comments allows white space and #-comments in the pattern
	// (ICU's x flag).
	RegexFlags_Comments RegexFlags = 4

	// RegexFlags_Dot_All makes '.' match line terminators too (MySQL's
	// match type n).
	RegexFlags_Dot_All RegexFlags = 32

	// RegexFlags_Literal treats the whole pattern as a literal string;
	// RegexFlags_Case_Insensitive still applies.
	RegexFlags_Literal RegexFlags = 16

	// RegexFlags_Multiline makes ^ and $ match at line starts and ends
	// (MySQL's match type m).
	RegexFlags_Multiline RegexFlags = 8

	// RegexFlags_Unix_Lines makes '\n' the only line terminator for '.',
	// ^ and $ (MySQL's match type u).
	RegexFlags_Unix_Lines RegexFlags = 1

	// RegexFlags_Unicode_Word asks for Unicode (TR 29) word boundaries for
	// \b; such patterns are rejected, as RE2 has only ASCII word boundaries.
	RegexFlags_Unicode_Word RegexFlags = 256

	// RegexFlags_Error_On_Unknown_Escapes rejects a backslash before an
	// ASCII letter that has no meaning; by default such a letter stands for
	// itself.
	RegexFlags_Error_On_Unknown_Escapes RegexFlags = 512
)

// CreateRegex returns an empty Regex. stringBufferInBytes sized
// go-icu-regex's WebAssembly buffers and is ignored.
func CreateRegex(stringBufferInBytes uint32) Regex {
	return &privateRegex{}
}

type privateRegex struct {
	prog    *program
	text    string
	textSet bool
}

var _ Regex = (*privateRegex)(nil)

// SetRegexString implements Regex.
func (pr *privateRegex) SetRegexString(ctx context.Context, regexStr string, flags RegexFlags) error {
	pr.prog = nil
	prog, err := compile(regexStr, flags)
	if err != nil {
		return ErrInvalidRegex.New(err.Error())
	}
	pr.prog = prog
	return nil
}

// SetMatchString implements Regex.
func (pr *privateRegex) SetMatchString(ctx context.Context, matchStr string) error {
	if pr.prog == nil {
		return ErrRegexNotYetSet.New()
	}
	pr.text, pr.textSet = validUTF8(matchStr), true
	return nil
}

// validUTF8 replaces each byte of invalid UTF-8 with U+FFFD, as
// go-icu-regex's conversion to UTF-16 did, so that returned text is valid
// UTF-8 and character positions are unchanged.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, r)
		i += w
	}
	return string(b)
}

// ready checks the order of calls and the context.
func (pr *privateRegex) ready(ctx context.Context) error {
	if pr.prog == nil {
		return ErrRegexNotYetSet.New()
	}
	if !pr.textSet {
		return ErrMatchNotYetSet.New()
	}
	return ctx.Err()
}

// IndexOf implements Regex.
func (pr *privateRegex) IndexOf(ctx context.Context, start int, occurrence int, endIndex bool) (int, error) {
	if err := pr.ready(ctx); err != nil {
		return 0, err
	}
	p, ok := byteOffset(pr.text, firstIndex(start))
	if !ok {
		return 0, nil
	}
	loc, err := pr.nth(ctx, p, occurrence, false)
	if loc == nil || err != nil {
		return 0, err
	}
	off := loc[0]
	if endIndex {
		off = loc[1]
	}
	return charCount(pr.text[:off]) + 1, nil
}

// Matches implements Regex.
func (pr *privateRegex) Matches(ctx context.Context, start int, occurrence int) (bool, error) {
	if err := pr.ready(ctx); err != nil {
		return false, err
	}
	p, ok := byteOffset(pr.text, start)
	if !ok {
		return false, ErrIndexOutOfBounds.New()
	}
	if p == 0 && occurrence <= 1 {
		return pr.match(ctx)
	}
	loc, err := pr.nth(ctx, p, occurrence, false)
	return loc != nil, err
}

// Replace implements Regex.
func (pr *privateRegex) Replace(ctx context.Context, replacementStr string, start int, occurrence int) (string, error) {
	if err := pr.ready(ctx); err != nil {
		return "", err
	}
	s := pr.text
	p, ok := byteOffset(s, start-1)
	if !ok {
		return "", ErrIndexOutOfBounds.New()
	}
	// The replacement is parsed at the first match (without a match the
	// text comes back unchanged, whatever the replacement). The text is built as the matches are found, and given up beyond
	// MaxResultBytes: every empty match of a 16 MiB text may insert the
	// replacement.
	limit := int(maxResultBytes.Load())
	var out []byte
	var tmpl replacement
	var terr error
	prev, found := p, false
	add := func(loc []int) bool {
		if !found {
			if tmpl, terr = parseReplacement(replacementStr, pr.prog); terr != nil {
				return false
			}
			out = make([]byte, 0, len(s)+len(replacementStr))
			out = append(out, s[:p]...)
			found = true
		}
		out = append(out, s[prev:loc[0]]...)
		out = tmpl.expand(out, s, loc, pr.prog)
		prev = loc[1]
		return len(out) <= limit
	}
	var err error
	if occurrence == 0 {
		err = pr.each(ctx, p, true, add)
	} else {
		var loc []int
		if loc, err = pr.nth(ctx, p, occurrence, true); err == nil && loc != nil {
			p, prev = loc[0], loc[0]
			add(loc)
		}
	}
	if err == nil {
		err = terr
	}
	if err != nil {
		return "", err
	}
	if !found {
		return s, nil
	}
	if len(out)+len(s)-prev > limit {
		return "", ErrResultTooLarge.New(limit)
	}
	out = append(out, s[prev:]...)
	return string(out), nil
}

// Substring implements Regex.
func (pr *privateRegex) Substring(ctx context.Context, start int, occurrence int) (string, bool, error) {
	if err := pr.ready(ctx); err != nil {
		return "", false, err
	}
	p, ok := byteOffset(pr.text, firstIndex(start))
	if !ok {
		return "", false, nil
	}
	loc, err := pr.nth(ctx, p, occurrence, false)
	if loc == nil || err != nil {
		return "", false, err
	}
	return pr.text[loc[0]:loc[1]], true, nil
}

// firstIndex converts IndexOf's and Substring's 1-based start to a 0-based
// character index. go-icu-regex passed start-1 to ICU's uregex_find, for
// which -1 means "continue after the previous match", that is from the
// beginning after SetMatchString: start 0 searches like start 1.
func firstIndex(start int) int {
	if start == 0 {
		return 0
	}
	return start - 1
}

// StringBufferSize implements Regex.
func (pr *privateRegex) StringBufferSize() uint32 { return 0 }

// Close implements Regex.
func (pr *privateRegex) Close() error {
	pr.prog, pr.text, pr.textSet = nil, "", false
	return nil
}
