package regex

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// program is a compiled pattern.
type program struct {
	re *regexp.Regexp
	// goPattern is the pattern in Go syntax, kept to build ctxRe.
	goPattern string
	// leftContext is set when the pattern has an assertion that looks at the
	// character before the current position (^, \A, \b, \B). A search that
	// starts after position 0 must then see that character: it runs ctxRe,
	// "(?s:.)(?:goPattern)", from one character earlier.
	leftContext bool
	ctxOnce     sync.Once
	ctxRe       *regexp.Regexp
	ctxErr      error
	// capIndex maps ICU group numbers to Go submatch numbers (capIndex[0] = 0);
	// names maps ICU group names to ICU group numbers.
	capIndex []int
	names    map[string]int
	// termGroups are the Go submatches that capture the final line
	// terminator consumed by a $ at the end of the pattern (see emitDollar).
	termGroups []int
	// size estimates the number of instructions of the compiled program.
	size int
}

// maxMatchMemory bounds the memory matching a compiled pattern may need
// (see compile).
const maxMatchMemory = 32 << 20

// mustParse parses a Go pattern that regexp.Compile accepted.
func mustParse(goPattern string) *syntax.Regexp {
	re, err := syntax.Parse(goPattern, syntax.Perl)
	if err != nil {
		panic("regex: a compiled pattern does not parse: " + err.Error())
	}
	return re
}

// compile translates an ICU pattern with flags into a Go program.
func compile(pattern string, flags RegexFlags) (*program, error) {
	const known = RegexFlags_Case_Insensitive | RegexFlags_Comments | RegexFlags_Dot_All | RegexFlags_Literal |
		RegexFlags_Multiline | RegexFlags_Unix_Lines | RegexFlags_Unicode_Word | RegexFlags_Error_On_Unknown_Escapes
	if flags&^known != 0 {
		return nil, fmt.Errorf("unknown flags %#x", uint32(flags&^known))
	}
	if pattern == "" {
		return nil, errors.New("the pattern is empty")
	}
	fl := modeFlags{
		i: flags&RegexFlags_Case_Insensitive != 0,
		m: flags&RegexFlags_Multiline != 0,
		s: flags&RegexFlags_Dot_All != 0,
		x: flags&RegexFlags_Comments != 0,
		w: flags&RegexFlags_Unicode_Word != 0,
		d: flags&RegexFlags_Unix_Lines != 0,
	}
	var root *node
	names := map[string]int{}
	if flags&RegexFlags_Literal != 0 {
		p := &parser{fl: fl}
		var subs []*node
		for _, r := range pattern {
			subs = append(subs, p.literal(r))
		}
		root = &node{op: opConcat, subs: subs}
	} else {
		n, p, err := parse(pattern, fl, flags&RegexFlags_Error_On_Unknown_Escapes != 0)
		if err != nil {
			return nil, err
		}
		root, names = n, p.names
	}
	e := &emitter{}
	e.emit(root, true)
	if e.b.Len() > maxGoPattern {
		return nil, &syntaxError{kind: re2Limit, msg: fmt.Sprintf(
			"the expression is too large: its character classes expand to more than %d MiB", maxGoPattern>>20)}
	}
	prog := &program{goPattern: e.b.String(), leftContext: needsLeftContext(root), names: names, size: size(root)}
	re, err := regexp.Compile(prog.goPattern)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			msg := string(se.Code)
			switch se.Code {
			case syntax.ErrInvalidRepeatSize:
				msg = "nested repetitions repeat more than 1000 times in all"
			case syntax.ErrLarge:
				msg = "the expression is too large"
			case syntax.ErrNestingDepth:
				msg = "groups nest more than 1000 deep"
			}
			return nil, &syntaxError{msg: msg, kind: re2Limit}
		}
		return nil, err
	}
	// Go's NFA keeps a capture array per thread, a thread per
	// instruction: matching needs about instructions × slots × 8 bytes,
	// 26 GB for a 40-byte pattern of 20,000 groups.
	if p, err := syntax.Compile(mustParse(prog.goPattern).Simplify()); err == nil {
		slots := 2 * (re.NumSubexp() + 1)
		if need := int64(len(p.Inst)) * int64(slots) * 8; need > maxMatchMemory {
			return nil, &syntaxError{kind: re2Limit, msg: fmt.Sprintf(
				"the expression needs too much memory to match: %d capture groups over %d instructions need %d MiB, above %d MiB (use non-capturing groups (?:…))",
				re.NumSubexp(), len(p.Inst), need>>20, maxMatchMemory>>20)}
		}
	}
	prog.re = re
	prog.capIndex = []int{0}
	for i, name := range re.SubexpNames() {
		switch {
		case i == 0:
		case strings.HasPrefix(name, termGroupPrefix):
			prog.termGroups = append(prog.termGroups, i)
		default:
			prog.capIndex = append(prog.capIndex, i)
		}
	}
	return prog, nil
}

// contextRe returns the program for searches that start after position 0
// when the pattern looks behind (see leftContext).
func (prog *program) contextRe() (*regexp.Regexp, error) {
	prog.ctxOnce.Do(func() {
		// The pattern compiled once already; with a leading character it
		// could only exceed one of RE2's size limits.
		prog.ctxRe, prog.ctxErr = regexp.Compile(`(?s:.)(?:` + prog.goPattern + `)`)
		if prog.ctxErr != nil {
			prog.ctxErr = ErrInvalidRegex.New("too large to search from a position after the first character: " + prog.ctxErr.Error())
		}
	})
	return prog.ctxRe, prog.ctxErr
}

func needsLeftContext(n *node) bool {
	switch n.op {
	case opBeginText, opBeginLine, opWordBoundary, opNoWordBoundary:
		return true
	}
	for _, s := range n.subs {
		if needsLeftContext(s) {
			return true
		}
	}
	return false
}

// size estimates the instructions of the compiled program (saturating).
func size(n *node) int {
	const limit = 1 << 40
	sum := func() int {
		t := 0
		for _, s := range n.subs {
			t = min(t+size(s), limit)
		}
		return t
	}
	switch n.op {
	case opEmpty:
		return 0
	case opConcat, opGroup:
		return sum()
	case opCapture:
		return sum() + 2
	case opAlternate:
		return sum() + len(n.subs)
	case opRepeat:
		times := n.max
		if times < 0 {
			times = max(n.min, 1)
		}
		return min(size(n.subs[0])*max(times, 1), limit) + 1
	}
	return 1
}

// maxGoPattern bounds the Go pattern a pattern expands to. Classes such as
// \w and [[:alpha:]] are written out as their ranges (a few kilobytes each),
// and Go's regexp materialises every occurrence, so without a bound a short
// pattern could take seconds and hundreds of megabytes to compile.
const maxGoPattern = 4 << 20

// termGroupPrefix names the submatches added for a final $ (ICU group names
// are ASCII letters and digits, so they cannot clash).
const termGroupPrefix = "__t"

type emitter struct {
	b     strings.Builder
	nterm int
}

// emit writes n in Go syntax. tail reports that nothing can follow n in a
// match, which lets a $ there be translated exactly.
func (e *emitter) emit(n *node, tail bool) {
	b := &e.b
	switch n.op {
	case opEmpty:
		b.WriteString(`(?:)`)
	case opLiteral:
		e.literals([]*node{n})
	case opClass:
		writeClass(b, n.set)
	case opBeginText:
		b.WriteString(`\A`)
	case opBeginLine:
		b.WriteString(`(?m:^)`)
	case opEndText:
		b.WriteString(`\z`)
	case opEndLine:
		b.WriteString(`(?m:$)`)
	case opEndDollar:
		e.dollar(n, tail)
	case opWordBoundary:
		b.WriteString(`\b`)
	case opNoWordBoundary:
		b.WriteString(`\B`)
	case opCapture:
		if n.name != "" {
			b.WriteString(`(?P<` + n.name + `>`)
		} else {
			b.WriteString(`(`)
		}
		e.emit(n.subs[0], tail)
		b.WriteString(`)`)
	case opGroup:
		b.WriteString(`(?:`)
		e.emit(n.subs[0], tail)
		b.WriteString(`)`)
	case opConcat:
		for i := 0; i < len(n.subs); i++ {
			if n.subs[i].op == opLiteral {
				j := i
				for j < len(n.subs) && n.subs[j].op == opLiteral {
					j++
				}
				e.literals(n.subs[i:j])
				i = j - 1
				continue
			}
			e.emit(n.subs[i], tail && i == len(n.subs)-1)
		}
	case opAlternate:
		b.WriteString(`(?:`)
		for i, s := range n.subs {
			if i > 0 {
				b.WriteString(`|`)
			}
			e.emit(s, tail)
		}
		b.WriteString(`)`)
	case opRepeat:
		b.WriteString(`(?:`)
		e.emit(n.subs[0], false)
		b.WriteString(`)`)
		switch {
		case n.min == 0 && n.max < 0:
			b.WriteString(`*`)
		case n.min == 1 && n.max < 0:
			b.WriteString(`+`)
		case n.min == 0 && n.max == 1:
			b.WriteString(`?`)
		case n.max < 0:
			fmt.Fprintf(b, `{%d,}`, n.min)
		case n.min == n.max:
			fmt.Fprintf(b, `{%d}`, n.min)
		default:
			fmt.Fprintf(b, `{%d,%d}`, n.min, n.max)
		}
		if n.lazy {
			b.WriteString(`?`)
		}
	default:
		panic(fmt.Sprintf("regex: unknown node %d", n.op))
	}
}

// literals writes a run of literal nodes, case-folded ones inside (?i:…).
func (e *emitter) literals(ns []*node) {
	b := &e.b
	folding := false
	for _, n := range ns {
		if n.fold != folding {
			if folding {
				b.WriteString(`)`)
			} else {
				b.WriteString(`(?i:`)
			}
			folding = n.fold
		}
		writeRune(b, n.r)
	}
	if folding {
		b.WriteString(`)`)
	}
}

// dollar writes ICU's $ without the m flag (and \Z): the end of the text, or
// the position before a line terminator that ends the text. RE2 has no
// lookahead, so the exact form exists only where nothing can follow: there,
// the terminator is consumed into a named submatch, and the match is cut
// back to its start afterwards (program.adjust). Elsewhere $ is the end of
// the text only.
func (e *emitter) dollar(n *node, tail bool) {
	if !tail {
		e.b.WriteString(`\z`)
		return
	}
	term := `\r\n|[\n-\r\x{85}\x{2028}\x{2029}]`
	if n.unix {
		term = `\n`
	}
	fmt.Fprintf(&e.b, `(?:\z|(?P<%s%d>%s)\z)`, termGroupPrefix, e.nterm, term)
	e.nterm++
}

// writeRune writes r as a literal: ASCII letters and digits and printable
// non-ASCII characters as themselves, everything else as \x{h}.
func writeRune(b *strings.Builder, r rune) {
	if r < 0x80 && (isASCIILetter(r) || (r >= '0' && r <= '9')) {
		b.WriteByte(byte(r))
		return
	}
	if r >= 0xa0 && r != utf8.RuneError && unicode.IsPrint(r) {
		b.WriteRune(r)
		return
	}
	var buf [16]byte
	out := append(buf[:0], `\x{`...)
	out = strconv.AppendInt(out, int64(r), 16)
	out = append(out, '}')
	b.Write(out)
}

func writeClass(b *strings.Builder, s runeSet) {
	if b.Len() > maxGoPattern {
		return // compile reports the size
	}
	if len(s) == 0 {
		b.WriteString(`[^\x{0}-\x{10ffff}]`)
		return
	}
	b.WriteByte('[')
	for _, r := range s {
		writeRune(b, r.lo)
		if r.hi > r.lo {
			b.WriteByte('-')
			writeRune(b, r.hi)
		}
	}
	b.WriteByte(']')
}

// adjust cuts a match that consumed a final line terminator for a $ (see
// emitter.dollar) back to the position of the $.
func (prog *program) adjust(loc []int) {
	for _, g := range prog.termGroups {
		if 2*g < len(loc) && loc[2*g] >= 0 {
			end := loc[2*g]
			for i := range loc {
				if loc[i] > end {
					loc[i] = end
				}
			}
			return
		}
	}
}
