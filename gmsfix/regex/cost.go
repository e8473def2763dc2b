package regex

import "regexp/syntax"

// Cost returns the number of instructions of the program that pattern
// compiles to with flags, or the error SetRegexString would return. It
// bounds the work of matching: one search over n bytes of text runs at most
// Cost×n instruction steps (Go's NFA steps each live instruction once per
// character; its backtracker and one-pass matcher do less), and checking a
// step costs at most a binary search in a character class.
//
// Cost is not bounded by the pattern's length: a counted repetition copies
// its operand, so `[ab]{1000}c` (11 bytes) has about 1,000 instructions and
// matches some 400 times slower per byte than `[ab]c`. Methods that look for
// more than one match — Replace with occurrence 0, IndexOf and Substring
// with occurrence k — run one search per match found, each over the rest of
// the text, so their work is bounded by (matches + 1)×Cost×n: quadratic in
// the text for patterns such as `.*!|a`, whose every search reads to the end.
func Cost(pattern string, flags RegexFlags) (int, error) {
	prog, err := compile(pattern, flags)
	if err != nil {
		return 0, ErrInvalidRegex.New(err.Error())
	}
	// The pattern compiled, so parsing and compiling it again cannot fail.
	re, err := syntax.Parse(prog.goPattern, syntax.Perl)
	if err != nil {
		return 0, ErrInvalidRegex.New(err.Error())
	}
	p, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, ErrInvalidRegex.New(err.Error())
	}
	return len(p.Inst), nil
}
