package regex

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file parses ICU regular-expression syntax (the dialect of MySQL 8's
// REGEXP functions, https://unicode-org.github.io/icu/userguide/strings/regexp.html)
// into a small syntax tree whose semantics are ICU's. emit.go then writes the
// tree in Go regexp/syntax, which only has to express what RE2 can. Flags are
// resolved here: a node carries the case folding, dot and anchor behaviour that
// was in force where it was written, so the emitted pattern needs no flag
// groups except (?i:…) around case-folded literals.

type opKind uint8

const (
	opEmpty          opKind = iota // matches the empty string
	opLiteral                      // one code point r, case-folded when fold
	opClass                        // one code point from set (case closure already applied)
	opBeginText                    // \A, and ^ without the m flag
	opBeginLine                    // ^ with the m flag
	opEndText                      // \z
	opEndDollar                    // $ without m, and \Z: end of text or before a final line terminator
	opEndLine                      // $ with the m flag
	opWordBoundary                 // \b
	opNoWordBoundary               // \B
	opCapture                      // (…) or (?<name>…)
	opGroup                        // (?:…)
	opConcat
	opAlternate
	opRepeat // subs[0]{min,max}; max < 0 means unbounded
)

type node struct {
	op       opKind
	r        rune
	fold     bool
	set      runeSet
	subs     []*node
	min, max int
	lazy     bool
	name     string // opCapture: ICU group name, "" if unnamed
	unix     bool   // anchors: only \n terminates a line
}

// modeFlags are ICU's pattern flags: i, m, s, x (free spacing), w (Unicode
// word boundaries) and d (UNIX_LINES).
type modeFlags struct{ i, m, s, x, w, d bool }

// syntaxError is a pattern that cannot be compiled.
type syntaxError struct {
	pos  int // 1-based character position in the pattern, 0 if unknown
	msg  string
	kind errorKind
}

type errorKind uint8

const (
	badSyntax   errorKind = iota // ICU rejects the pattern too
	unsupported                  // ICU accepts it; RE2 cannot run it in linear time
	re2Limit                     // beyond a size limit of RE2
)

func (e *syntaxError) Error() string {
	s := e.msg
	if e.pos > 0 {
		s += fmt.Sprintf(" at character %d", e.pos)
	}
	switch e.kind {
	case unsupported:
		s += "; dpsql evaluates regular expressions with RE2 syntax, which runs in linear time " +
			"and has no backreferences, lookaround, atomic groups or possessive quantifiers"
	case re2Limit:
		s += "; this is a limit of RE2, the linear-time engine dpsql uses for regular expressions"
	}
	return s
}

const eof rune = -1

type parser struct {
	src           []rune
	pos           int
	fl            modeFlags
	ncap          int
	names         map[string]int
	strictEscapes bool // UREGEX_ERROR_ON_UNKNOWN_ESCAPES
}

func (p *parser) errAt(pos int, format string, args ...any) error {
	return &syntaxError{pos: pos + 1, msg: fmt.Sprintf(format, args...), kind: badSyntax}
}

func (p *parser) unsupportedAt(pos int, format string, args ...any) error {
	return &syntaxError{pos: pos + 1, msg: fmt.Sprintf(format, args...), kind: unsupported}
}

func (p *parser) peek() rune {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return eof
}

func (p *parser) peekAt(k int) rune {
	if p.pos+k < len(p.src) {
		return p.src[p.pos+k]
	}
	return eof
}

// isPatternSpace is Unicode's Pattern_White_Space, what ICU skips in free
// spacing mode.
func isPatternSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0x200e, 0x200f, 0x2028, 0x2029:
		return true
	}
	return false
}

func isLineTerminator(r rune) bool {
	return (r >= 0x0a && r <= 0x0d) || r == 0x85 || r == 0x2028 || r == 0x2029
}

// skipSpace skips white space and #-comments in free-spacing (x) mode.
func (p *parser) skipSpace() {
	if !p.fl.x {
		return
	}
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case isPatternSpace(c):
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && !isLineTerminator(p.src[p.pos]) {
				p.pos++
			}
		default:
			return
		}
	}
}

// parse parses an ICU pattern. Invalid UTF-8 in the pattern stands for
// U+FFFD, as it does when go-mysql-server hands the pattern to ICU.
func parse(pattern string, fl modeFlags, strict bool) (*node, *parser, error) {
	p := &parser{fl: fl, names: map[string]int{}, strictEscapes: strict}
	p.src = make([]rune, 0, utf8.RuneCountInString(pattern))
	for _, r := range pattern {
		p.src = append(p.src, r)
	}
	n, err := p.parseAlt()
	if err != nil {
		return nil, nil, err
	}
	if p.pos < len(p.src) { // parseAlt stops only at the end or at ')'
		return nil, nil, p.errAt(p.pos, "unmatched )")
	}
	return n, p, nil
}

func (p *parser) parseAlt() (*node, error) {
	var branches []*node
	for {
		c, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		branches = append(branches, c)
		if p.peek() != '|' {
			break
		}
		p.pos++
	}
	if len(branches) == 1 {
		return branches[0], nil
	}
	return &node{op: opAlternate, subs: branches}, nil
}

func (p *parser) parseConcat() (*node, error) {
	var items []*node
	canRepeat := false // the last item may take a quantifier
	for {
		p.skipSpace()
		c := p.peek()
		switch c {
		case eof, '|', ')':
			switch len(items) {
			case 0:
				return &node{op: opEmpty}, nil
			case 1:
				return items[0], nil
			}
			return &node{op: opConcat, subs: items}, nil
		case '*', '+', '?', '{':
			if !canRepeat {
				return nil, p.errAt(p.pos, "quantifier %c has nothing to repeat", c)
			}
			q, err := p.parseQuantifier(items[len(items)-1])
			if err != nil {
				return nil, err
			}
			items[len(items)-1] = q
			canRepeat = false
			p.skipSpace()
			if c := p.peek(); c == '*' || c == '+' || c == '?' || c == '{' {
				return nil, p.errAt(p.pos, "quantifier %c follows another quantifier", c)
			}
			continue
		}
		atoms, repeatable, err := p.parseAtom()
		if err != nil {
			return nil, err
		}
		if len(atoms) > 0 || !repeatable {
			canRepeat = len(atoms) > 0 && repeatable
		}
		items = append(items, atoms...)
	}
}

// parseQuantifier parses *, +, ?, {n}, {n,}, {n,m} with an optional lazy ?
// and applies it to sub.
func (p *parser) parseQuantifier(sub *node) (*node, error) {
	start := p.pos
	c := p.src[p.pos]
	p.pos++
	lo, hi := 0, -1
	switch c {
	case '+':
		lo = 1
	case '?':
		hi = 1
	case '{':
		var err error
		if lo, hi, err = p.parseInterval(start); err != nil {
			return nil, err
		}
	}
	p.skipSpace()
	lazy := false
	switch p.peek() {
	case '?':
		lazy = true
		p.pos++
	case '+':
		return nil, p.unsupportedAt(start, "the possessive quantifier %s+ is not supported", string(p.src[start:p.pos]))
	}
	switch sub.op {
	case opBeginText, opBeginLine, opEndDollar, opEndLine:
		// ICU lets ^ and $ take a quantifier; a zero-width assertion repeated
		// at least once is the assertion, zero times is nothing.
		if lo == 0 {
			return &node{op: opEmpty}, nil
		}
		return sub, nil
	}
	return &node{op: opRepeat, subs: []*node{sub}, min: lo, max: hi, lazy: lazy}, nil
}

// maxRepeat is the largest count RE2 accepts in {n,m}.
const maxRepeat = 1000

func (p *parser) parseInterval(start int) (lo, hi int, err error) {
	bad := func() (int, int, error) {
		return 0, 0, p.errAt(start, "bad repetition {…}: write {n}, {n,} or {n,m}")
	}
	number := func() (int, bool) {
		p.skipSpace()
		n, digits := 0, 0
		for c := p.peek(); c >= '0' && c <= '9'; c = p.peek() {
			if n > 1<<30 {
				return 0, false
			}
			n = n*10 + int(c-'0')
			digits++
			p.pos++
		}
		return n, digits > 0
	}
	lo, ok := number()
	if !ok {
		return bad()
	}
	hi = lo
	p.skipSpace()
	if p.peek() == ',' {
		p.pos++
		if hi, ok = number(); !ok {
			hi = -1
		}
		p.skipSpace()
	}
	if p.peek() != '}' {
		return bad()
	}
	p.pos++
	if hi >= 0 && hi < lo {
		return 0, 0, p.errAt(start, "bad repetition {%d,%d}: the maximum is below the minimum", lo, hi)
	}
	if lo > maxRepeat || hi > maxRepeat {
		return 0, 0, &syntaxError{pos: start + 1, kind: re2Limit,
			msg: fmt.Sprintf("the repetition count %s is above %d", string(p.src[start:p.pos]), maxRepeat)}
	}
	return lo, hi, nil
}

func (p *parser) literal(r rune) *node {
	if r >= 0xd800 && r <= 0xdfff {
		// A lone surrogate cannot occur in the UTF-8 text being matched.
		return &node{op: opClass}
	}
	return &node{op: opLiteral, r: r, fold: p.fl.i && unicode.SimpleFold(r) != r}
}

// classNode makes a class from a positive set and its negation, applying
// ICU's order: case closure of the members first, then the negation.
func (p *parser) class(s runeSet, neg bool) runeSet {
	if p.fl.i {
		s = s.caseClose()
	}
	if neg {
		s = s.complement()
	}
	return s
}

// dot is '.': any character but a line terminator, or with the s flag any
// character, where ICU takes \r\n as one character. (ICU never splits that
// \r\n; here a later part of the pattern can make '.' match the \r alone.)
func (p *parser) dot() *node {
	switch {
	case p.fl.s:
		crlf := &node{op: opConcat, subs: []*node{{op: opLiteral, r: '\r'}, {op: opLiteral, r: '\n'}}}
		anyChar := &node{op: opClass, set: span(0, maxRune)}
		return &node{op: opGroup, subs: []*node{{op: opAlternate, subs: []*node{crlf, anyChar}}}}
	case p.fl.d:
		return &node{op: opClass, set: single('\n').complement()}
	}
	return &node{op: opClass, set: lineTerminators().complement()}
}

// parseAtom parses one item of a concatenation. It returns the nodes to
// append (several for \Q…\E, none for a comment or a flag setting) and
// whether a following quantifier may apply to the last of them.
func (p *parser) parseAtom() ([]*node, bool, error) {
	c := p.peek()
	switch c {
	case '(':
		n, err := p.parseGroup()
		if n == nil {
			return nil, false, err
		}
		return []*node{n}, true, err
	case '[':
		s, err := p.parseBracket()
		if err != nil {
			return nil, false, err
		}
		return []*node{{op: opClass, set: s}}, true, nil
	case '.':
		p.pos++
		return []*node{p.dot()}, true, nil
	case '^':
		p.pos++
		if p.fl.m {
			return []*node{{op: opBeginLine, unix: p.fl.d}}, true, nil
		}
		return []*node{{op: opBeginText}}, true, nil
	case '$':
		p.pos++
		if p.fl.m {
			return []*node{{op: opEndLine, unix: p.fl.d}}, true, nil
		}
		return []*node{{op: opEndDollar, unix: p.fl.d}}, true, nil
	case '\\':
		return p.parseEscapeAtom()
	case '}':
		return nil, false, p.errAt(p.pos, `} without {: write \} for a literal brace`)
	}
	p.pos++
	return []*node{p.literal(c)}, true, nil
}

func (p *parser) parseGroup() (*node, error) {
	open := p.pos
	p.pos++
	p.skipSpace()
	if p.peek() != '?' {
		p.ncap++
		return p.groupBody(open, &node{op: opCapture}, p.fl)
	}
	p.pos++
	p.skipSpace()
	switch c := p.peek(); c {
	case ':':
		p.pos++
		return p.groupBody(open, &node{op: opGroup}, p.fl)
	case '=', '!':
		return nil, p.unsupportedAt(open, "lookahead (?%c…) is not supported", c)
	case '>':
		return nil, p.unsupportedAt(open, "the atomic group (?>…) is not supported")
	case '#':
		for p.pos < len(p.src) && p.src[p.pos] != ')' {
			p.pos++
		}
		if p.pos == len(p.src) {
			return nil, p.errAt(open, "missing ) after the comment (?#")
		}
		p.pos++
		return nil, nil
	case '<':
		p.pos++
		if c := p.peek(); c == '=' || c == '!' {
			return nil, p.unsupportedAt(open, "lookbehind (?<%c…) is not supported", c)
		}
		start := p.pos
		for c := p.peek(); c < utf8.RuneSelf && (isASCIILetter(c) || (c >= '0' && c <= '9' && p.pos > start)); c = p.peek() {
			p.pos++
		}
		if p.pos == start || p.peek() != '>' {
			return nil, p.errAt(open, "bad group name: write (?<name>…) with a name of ASCII letters and digits that starts with a letter")
		}
		name := string(p.src[start:p.pos])
		p.pos++
		if _, dup := p.names[name]; dup {
			return nil, p.errAt(open, "the group name %s is used twice", name)
		}
		p.ncap++
		p.names[name] = p.ncap
		return p.groupBody(open, &node{op: opCapture, name: name}, p.fl)
	case 'P':
		return nil, p.errAt(open, "(?P…) is Python syntax: write (?<name>…) for a named group")
	}
	// Flag settings: (?imsxwdu-imsxwdu) or (?imsxwdu-imsxwdu:…).
	fl, on, any := p.fl, true, false
	for {
		c := p.peek()
		switch c {
		case 'i':
			fl.i = on
		case 'm':
			fl.m = on
		case 's':
			fl.s = on
		case 'x':
			fl.x = on
		case 'w':
			fl.w = on
		case 'd':
			fl.d = on
		case 'u': // Unicode case folding, always on
		case '-':
			on = false
		case ')', ':':
			if !any {
				return nil, p.errAt(open, "empty group flags (?)")
			}
			p.pos++
			if c == ')' {
				p.fl = fl // until the end of the enclosing group
				return nil, nil
			}
			return p.groupBody(open, &node{op: opGroup}, fl)
		case eof:
			return nil, p.errAt(open, "missing )")
		default:
			return nil, p.errAt(p.pos, "unknown group syntax (?%c: the flags are i, m, s, x, w, d and u", c)
		}
		any = true
		p.pos++
	}
}

// groupBody parses the alternation inside a group with flags fl, which end
// with the group, and the closing parenthesis.
func (p *parser) groupBody(open int, g *node, fl modeFlags) (*node, error) {
	saved := p.fl
	p.fl = fl
	sub, err := p.parseAlt()
	p.fl = saved
	if err != nil {
		return nil, err
	}
	if p.peek() != ')' {
		return nil, p.errAt(open, "missing ) for this (")
	}
	p.pos++
	g.subs = []*node{sub}
	return g, nil
}

func isASCIILetter(c rune) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// parseEscapeAtom parses a backslash escape outside a set.
func (p *parser) parseEscapeAtom() ([]*node, bool, error) {
	start := p.pos
	p.pos++
	if p.pos == len(p.src) {
		return nil, false, p.errAt(start, `\ at the end of the pattern`)
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 'A':
		return []*node{{op: opBeginText}}, false, nil
	case 'z':
		return []*node{{op: opEndText}}, false, nil
	case 'Z':
		return []*node{{op: opEndDollar}}, false, nil
	case 'b', 'B':
		if p.fl.w {
			return nil, false, p.unsupportedAt(start, `\%c with Unicode word boundaries (the w flag) is not supported`, c)
		}
		if c == 'b' {
			return []*node{{op: opWordBoundary}}, false, nil
		}
		return []*node{{op: opNoWordBoundary}}, false, nil
	case 'G':
		return nil, false, p.unsupportedAt(start, `\G (the end of the previous match) is not supported`)
	case 'X':
		return nil, false, p.unsupportedAt(start, `\X (a grapheme cluster) is not supported`)
	case 'k':
		return nil, false, p.unsupportedAt(start, `the backreference \k<name> is not supported`)
	case 'N':
		return nil, false, p.errAt(start, `\N{name} character names are not supported: write \x{hhhh}`)
	case 'R':
		crlf := &node{op: opConcat, subs: []*node{{op: opLiteral, r: '\r'}, {op: opLiteral, r: '\n'}}}
		alt := &node{op: opAlternate, subs: []*node{crlf, {op: opClass, set: lineTerminators()}}}
		return []*node{{op: opGroup, subs: []*node{alt}}}, true, nil
	case 'Q':
		var out []*node
		for p.pos < len(p.src) {
			if p.src[p.pos] == '\\' && p.peekAt(1) == 'E' {
				p.pos += 2
				break
			}
			out = append(out, p.literal(p.src[p.pos]))
			p.pos++
		}
		return out, true, nil
	}
	if c >= '1' && c <= '9' {
		return nil, false, p.unsupportedAt(start, `the backreference \%c is not supported`, c)
	}
	e, err := p.escapeValue(start, c, false)
	if err != nil {
		return nil, false, err
	}
	if e.isSet {
		return []*node{{op: opClass, set: e.set}}, true, nil
	}
	return []*node{p.literal(e.r)}, true, nil
}

type escape struct {
	r     rune
	set   runeSet
	isSet bool
}

// escapeValue interprets the escape \c (c already consumed) as a code point
// or a set; it is shared by sets and the pattern body.
func (p *parser) escapeValue(start int, c rune, inSet bool) (escape, error) {
	ch := func(r rune) (escape, error) { return escape{r: r}, nil }
	set := func(s runeSet, neg bool) (escape, error) {
		if p.fl.i {
			// The named classes are reused; so is their case closure.
			key := string(c)
			if c == 'p' || c == 'P' {
				key = "p" + string(p.src[start:p.pos])
			}
			s = cached("fold:"+strings.ToLower(key), s.caseClose)
		}
		if neg {
			s = s.complement()
		}
		return escape{set: s, isSet: true}, nil
	}
	switch c {
	case 'a':
		return ch(0x07)
	case 'e':
		return ch(0x1b)
	case 'f':
		return ch(0x0c)
	case 'n':
		return ch('\n')
	case 'r':
		return ch('\r')
	case 't':
		return ch('\t')
	case 'c':
		if p.pos == len(p.src) {
			return ch('c')
		}
		x := p.src[p.pos]
		p.pos++
		return ch(x & 0x1f)
	case 'x':
		return p.hexEscape(start)
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		r, ok := p.hexDigits(n)
		if !ok || r > maxRune {
			return escape{}, p.errAt(start, `bad \%c escape: write exactly %d hex digits`, c, n)
		}
		if c == 'u' && r >= 0xd800 && r <= 0xdbff && p.peek() == '\\' && p.peekAt(1) == 'u' {
			// A UTF-16 surrogate pair written as two \u escapes.
			save := p.pos
			p.pos += 2
			if lo, ok := p.hexDigits(4); ok && lo >= 0xdc00 && lo <= 0xdfff {
				return ch(utf16Decode(r, lo))
			}
			p.pos = save
		}
		return ch(r)
	case '0':
		v, digits := 0, 0
		for digits < 3 {
			d := p.peek()
			if d < '0' || d > '7' || v*8+int(d-'0') > 0377 {
				break
			}
			v = v*8 + int(d-'0')
			digits++
			p.pos++
		}
		if digits == 0 {
			return escape{}, p.errAt(start, `bad octal escape \0: write \0 followed by one to three octal digits`)
		}
		return ch(rune(v))
	case 'd', 'D':
		return set(decimalDigits(), c == 'D')
	case 's', 'S':
		return set(whiteSpace(), c == 'S')
	case 'w', 'W':
		return set(wordChars(), c == 'W')
	case 'h', 'H':
		return set(horizontalSpace(), c == 'H')
	case 'v', 'V':
		return set(lineTerminators(), c == 'V')
	case 'p', 'P':
		if p.peek() != '{' {
			return escape{}, p.errAt(start, `bad \%c: write \%c{name}`, c, c)
		}
		end := p.pos + 1
		for end < len(p.src) && p.src[end] != '}' {
			end++
		}
		if end == len(p.src) {
			return escape{}, p.errAt(start, `missing } after \%c{`, c)
		}
		name := string(p.src[p.pos+1 : end])
		p.pos = end + 1
		s, msg := property(name)
		if msg != "" {
			return escape{}, p.errAt(start, "%s", msg)
		}
		return set(s, c == 'P')
	case 'N':
		return escape{}, p.errAt(start, `\N{name} character names are not supported: write \x{hhhh}`)
	}
	// Outside a set, the letters listed here were handled by the caller;
	// inside a set they stand for themselves ([\b] is "b").
	if p.strictEscapes && isASCIILetter(c) && !strings.ContainsRune("AbBzZGRXkE", c) {
		return escape{}, p.errAt(start, `unknown escape \%c`, c)
	}
	// Other escaped characters stand for themselves: \. \\ \$, \E outside
	// \Q…\E, digits inside a set, and (ICU's default) unknown letters.
	return ch(c)
}

func utf16Decode(hi, lo rune) rune { return ((hi - 0xd800) << 10) + (lo - 0xdc00) + 0x10000 }

func hexVal(c rune) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// hexDigits reads exactly n hex digits.
func (p *parser) hexDigits(n int) (rune, bool) {
	v := 0
	for i := 0; i < n; i++ {
		d, ok := hexVal(p.peek())
		if !ok {
			return 0, false
		}
		v = v<<4 | d
		p.pos++
	}
	return rune(v), true
}

// hexEscape parses the rest of \x{h…} or \xh[h].
func (p *parser) hexEscape(start int) (escape, error) {
	bad := func() (escape, error) {
		return escape{}, p.errAt(start, `bad \x escape: write \xhh or \x{h…} up to 10FFFF`)
	}
	if p.peek() == '{' {
		p.pos++
		v, digits := 0, 0
		for {
			c := p.peek()
			if c == '}' {
				p.pos++
				break
			}
			d, ok := hexVal(c)
			if !ok || digits == 8 {
				return bad()
			}
			v = v<<4 | d
			digits++
			p.pos++
		}
		if digits == 0 || v > maxRune {
			return bad()
		}
		return escape{r: rune(v)}, nil
	}
	v, digits := 0, 0
	for digits < 2 {
		d, ok := hexVal(p.peek())
		if !ok {
			break
		}
		v = v<<4 | d
		digits++
		p.pos++
	}
	if digits == 0 {
		return bad()
	}
	return escape{r: rune(v)}, nil
}

// parseBracket parses a set starting at '[': items, ranges, nested sets,
// [:name:] classes, and the operators && (intersection) and -- (difference),
// which take the union of the items up to the next operator as right
// operand. Case closure (flag i) is applied to the members of each bracketed
// set before its negation, as ICU does.
func (p *parser) parseBracket() (runeSet, error) {
	open := p.pos
	if p.peekAt(1) == ':' {
		if s, ok, err := p.parsePosix(); ok || err != nil {
			return s, err
		}
	}
	p.pos++
	neg := false
	if p.peek() == '^' {
		neg = true
		p.pos++
	}
	acc, n, err := p.parseSetUnion(open, true)
	if err != nil {
		return nil, err
	}
	algebra := false
	for {
		p.skipSpace()
		c := p.peek()
		if c == ']' {
			p.pos++
			break
		}
		// parseSetUnion stops only at ']', an operator or the end.
		if c == eof {
			return nil, p.errAt(open, "missing ] for this [")
		}
		opPos := p.pos
		p.pos += 2
		if n == 0 {
			return nil, p.errAt(opPos, "set operator %c%c has no left operand", c, c)
		}
		rhs, m, err := p.parseSetUnion(open, false)
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return nil, p.errAt(opPos, "set operator %c%c has no right operand", c, c)
		}
		algebra = true
		if c == '&' {
			acc.set(intersect(acc.all(), rhs.all()))
		} else {
			acc.set(subtract(acc.all(), rhs.all()))
		}
	}
	if algebra || !p.fl.i {
		return p.class(acc.all(), neg), nil
	}
	// Without && and --, the closure of the union is the union of the
	// closures, and the named classes and nested sets are closed already.
	s := union(acc.loose.caseClose(), acc.closed)
	if neg {
		s = s.complement()
	}
	return s, nil
}

// setItems are the members of a set: code points and ranges written
// directly (loose) and those of classes and nested sets (closed: already
// case-closed under the i flag).
type setItems struct{ loose, closed runeSet }

func (s setItems) all() runeSet { return union(s.loose, s.closed) }

func (s *setItems) set(r runeSet) { *s = setItems{loose: r} }

// parsePosix parses [:name:] or [:^name:] at p.pos; ok is false (and
// nothing is consumed) when the text there does not have that form.
func (p *parser) parsePosix() (runeSet, bool, error) {
	start := p.pos
	i := p.pos + 2
	neg := false
	if i < len(p.src) && p.src[i] == '^' {
		neg = true
		i++
	}
	nameStart := i
	for i < len(p.src) && p.src[i] != ':' && p.src[i] != ']' && p.src[i] != '[' {
		i++
	}
	if i+1 >= len(p.src) || p.src[i] != ':' || p.src[i+1] != ']' {
		return nil, false, nil
	}
	name := string(p.src[nameStart:i])
	p.pos = i + 2
	if name == "<" || name == ">" {
		return nil, true, p.errAt(start, "[[:%s:]] (a MySQL 5.7 word boundary) is not supported, as in MySQL 8: use \\b", name)
	}
	s, msg := property(name)
	if msg != "" {
		return nil, true, p.errAt(start, "bad [:%s:] class: %s", name, msg)
	}
	if p.fl.i {
		s = cached("fold:posix:"+looseName(name), s.caseClose)
	}
	if neg {
		s = s.complement()
	}
	return s, true, nil
}

// parseSetUnion parses set items up to ']', '&&', '--' or the end of the
// pattern and returns them and how many items there were. first allows a
// leading ']' as a literal.
func (p *parser) parseSetUnion(open int, first bool) (setItems, int, error) {
	var loose, closed []runeRange
	items := 0
	last := eof // a single code point that may begin a range
	add := func(r rune) {
		loose = append(loose, runeRange{r, r})
		last = r
		items++
	}
	addSet := func(s runeSet) {
		closed = append(closed, s...)
		last = eof
		items++
	}
	for {
		p.skipSpace()
		c := p.peek()
		switch {
		case c == eof:
			return setItems{}, 0, p.errAt(open, "missing ] for this [")
		case c == ']' && !(first && items == 0),
			(c == '&' || c == '-') && p.peekAt(1) == c:
			return setItems{loose: normalize(loose), closed: normalize(closed)}, items, nil
		case c == '[':
			s, err := p.parseBracket()
			if err != nil {
				return setItems{}, 0, err
			}
			addSet(s)
		case c == '-' && last != eof && p.peekAt(1) != ']' && p.peekAt(1) != '[':
			p.pos++
			p.skipSpace()
			lo := last
			hi, isSet, err := p.setChar()
			if err != nil {
				return setItems{}, 0, err
			}
			if isSet {
				return setItems{}, 0, p.errAt(p.pos-1, "a range in a set must end with a character")
			}
			if hi < lo {
				return setItems{}, 0, p.errAt(open, "bad range %c-%c in a set: the end is below the start", lo, hi)
			}
			loose = append(loose, runeRange{lo, hi})
			last = eof
		case c == '\\' && p.peekAt(1) == 'Q':
			p.pos += 2
			for p.pos < len(p.src) {
				if p.src[p.pos] == '\\' && p.peekAt(1) == 'E' {
					p.pos += 2
					break
				}
				add(p.src[p.pos])
				p.pos++
			}
		case c == '\\':
			start := p.pos
			p.pos++
			if p.pos == len(p.src) {
				return setItems{}, 0, p.errAt(start, `\ at the end of the pattern`)
			}
			e := p.src[p.pos]
			p.pos++
			v, err := p.escapeValue(start, e, true)
			if err != nil {
				return setItems{}, 0, err
			}
			if v.isSet {
				addSet(v.set)
			} else {
				add(v.r)
			}
		default:
			p.pos++
			add(c)
		}
		first = false
	}
}

// setChar parses the end of a range: one character or character escape.
// isSet reports a set escape such as \d, which cannot end a range.
func (p *parser) setChar() (rune, bool, error) {
	c := p.peek()
	switch c {
	case eof:
		return 0, false, p.errAt(p.pos, "missing ] at the end of the pattern")
	case '[':
		return 0, true, nil
	case '\\':
		start := p.pos
		p.pos++
		if p.pos == len(p.src) {
			return 0, false, p.errAt(start, `\ at the end of the pattern`)
		}
		e := p.src[p.pos]
		p.pos++
		v, err := p.escapeValue(start, e, true)
		return v.r, v.isSet, err
	}
	p.pos++
	return c, false, nil
}
