package regex

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func compiled(t testing.TB, pattern string, flags RegexFlags, text string) Regex {
	t.Helper()
	ctx := context.Background()
	re := CreateRegex(0)
	if err := re.SetRegexString(ctx, pattern, flags); err != nil {
		t.Fatalf("SetRegexString(%q): %v", pattern, err)
	}
	if err := re.SetMatchString(ctx, text); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { re.Close() })
	return re
}

func TestCallOrder(t *testing.T) {
	ctx := context.Background()
	re := CreateRegex(512)
	if _, err := re.Matches(ctx, 0, 0); !ErrRegexNotYetSet.Is(err) {
		t.Errorf("Matches before SetRegexString: %v", err)
	}
	if err := re.SetMatchString(ctx, "x"); !ErrRegexNotYetSet.Is(err) {
		t.Errorf("SetMatchString before SetRegexString: %v", err)
	}
	if err := re.SetRegexString(ctx, "x", RegexFlags_None); err != nil {
		t.Fatal(err)
	}
	if _, err := re.IndexOf(ctx, 1, 1, false); !ErrMatchNotYetSet.Is(err) {
		t.Errorf("IndexOf before SetMatchString: %v", err)
	}
	if _, _, err := re.Substring(ctx, 1, 1); !ErrMatchNotYetSet.Is(err) {
		t.Errorf("Substring before SetMatchString: %v", err)
	}
	if _, err := re.Replace(ctx, "y", 1, 0); !ErrMatchNotYetSet.Is(err) {
		t.Errorf("Replace before SetMatchString: %v", err)
	}
	if err := re.SetMatchString(ctx, "axa"); err != nil {
		t.Fatal(err)
	}
	if ok, err := re.Matches(ctx, 0, 0); !ok || err != nil {
		t.Errorf("Matches = %v, %v", ok, err)
	}
	// A pattern that fails to compile leaves no pattern behind.
	if err := re.SetRegexString(ctx, "(", RegexFlags_None); !ErrInvalidRegex.Is(err) {
		t.Errorf("SetRegexString(\"(\") = %v", err)
	}
	if _, err := re.Matches(ctx, 0, 0); !ErrRegexNotYetSet.Is(err) {
		t.Errorf("Matches after a failed SetRegexString: %v", err)
	}
	for i := 0; i < 2; i++ {
		if err := re.Close(); err != nil {
			t.Errorf("Close #%d: %v", i+1, err)
		}
	}
	if _, err := re.Matches(ctx, 0, 0); !ErrRegexNotYetSet.Is(err) {
		t.Errorf("Matches after Close: %v", err)
	}
	if re.StringBufferSize() != 0 {
		t.Errorf("StringBufferSize = %d", re.StringBufferSize())
	}
}

// The flag values are ICU's; go-mysql-server and callers of go-icu-regex
// rely on them.
func TestFlagValues(t *testing.T) {
	for _, c := range []struct {
		f    RegexFlags
		want uint32
	}{
		{RegexFlags_None, 0}, {RegexFlags_Unix_Lines, 1}, {RegexFlags_Case_Insensitive, 2},
		{RegexFlags_Comments, 4}, {RegexFlags_Multiline, 8}, {RegexFlags_Literal, 16},
		{RegexFlags_Dot_All, 32}, {RegexFlags_Unicode_Word, 256}, {RegexFlags_Error_On_Unknown_Escapes, 512},
	} {
		if uint32(c.f) != c.want {
			t.Errorf("flag %d, want %d", c.f, c.want)
		}
	}
	re := CreateRegex(0)
	if err := re.SetRegexString(context.Background(), "a", 1<<20); !ErrInvalidRegex.Is(err) {
		t.Errorf("unknown flag: %v", err)
	}
}

// The examples of MySQL 8's manual for the REGEXP functions
// (https://dev.mysql.com/doc/refman/8.0/en/regexp.html), through this API
// as go-mysql-server calls it.
func TestMySQLManualExamples(t *testing.T) {
	ctx := context.Background()
	instr := func(text, pat string, pos, occ int, end bool) int {
		n, err := compiled(t, pat, RegexFlags_Case_Insensitive, text).IndexOf(ctx, pos, occ, end)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		got, want int
	}{
		{instr("dog cat dog", "dog", 1, 1, false), 1},
		{instr("dog cat dog", "dog", 2, 1, false), 9},
		{instr("aa aaa aaaa", "a{2}", 1, 1, false), 1},
		{instr("aa aaa aaaa", "a{4}", 1, 1, false), 8},
		{instr("dog cat dog", "dog", 1, 2, false), 9},
		{instr("dog cat dog", "dog", 1, 1, true), 4},
	} {
		if c.got != c.want {
			t.Errorf("REGEXP_INSTR = %d, want %d", c.got, c.want)
		}
	}
	replace := func(text, pat, repl string, pos, occ int) string {
		s, err := compiled(t, pat, RegexFlags_Case_Insensitive, text).Replace(ctx, repl, pos, occ)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct{ got, want string }{
		{replace("a b c", "b", "X", 1, 0), "a X c"},
		{replace("abc def ghi", "[a-z]+", "X", 1, 3), "abc def X"},
		{replace("abc def ghi", "[a-z]+", "X", 1, 0), "X X X"},
		{replace("abc def ghi", "[a-z]+", "X", 5, 0), "abc X X"},
	} {
		if c.got != c.want {
			t.Errorf("REGEXP_REPLACE = %q, want %q", c.got, c.want)
		}
	}
	substr := func(text, pat string, pos, occ int) string {
		s, ok, err := compiled(t, pat, RegexFlags_Case_Insensitive, text).Substring(ctx, pos, occ)
		if err != nil || !ok {
			t.Fatalf("REGEXP_SUBSTR(%q, %q): %v %v", text, pat, ok, err)
		}
		return s
	}
	if got := substr("abc def ghi", "[a-z]+", 1, 1); got != "abc" {
		t.Errorf("REGEXP_SUBSTR = %q", got)
	}
	if got := substr("abc def ghi", "[a-z]+", 1, 3); got != "ghi" {
		t.Errorf("REGEXP_SUBSTR = %q", got)
	}
	like := func(text, pat string, flags RegexFlags) bool {
		ok, err := compiled(t, pat, flags, text).Matches(ctx, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, c := range []struct {
		text, pat string
		flags     RegexFlags
		want      bool
	}{
		{"CamelCase", "CAMELCASE", RegexFlags_Case_Insensitive, true},
		{"CamelCase", "CAMELCASE", RegexFlags_None, false},
		{"Michael!", ".*", 0, true},
		{"new*\n*line", "new\\*.\\*line", 0, false},
		{"new*\n*line", "new\\*.\\*line", RegexFlags_Dot_All, true},
		{"a", "^[a-d]", 0, true},
		{"fo\nfo", "^fo$", 0, false},
		{"fo\nfo", "^fo$", RegexFlags_Multiline, true},
		{"Ban", "^Ba*n", 0, true},
		{"pi", "^(pi|apa)$", 0, true},
		{"abcde", "a[bcd]{3}e", 0, true},
		{"justalnums", "[[:alnum:]]+", 0, true},
		{"!!", "[[:alnum:]]+", 0, false},
	} {
		if got := like(c.text, c.pat, c.flags); got != c.want {
			t.Errorf("REGEXP_LIKE(%q, %q, %d) = %v, want %v", c.text, c.pat, c.flags, got, c.want)
		}
	}
}

// Positions are characters (code points), as in MySQL, also after a
// character outside the Basic Multilingual Plane, where go-icu-regex counted
// two UTF-16 code units.
func TestCharacterPositions(t *testing.T) {
	ctx := context.Background()
	re := compiled(t, "b", 0, "😀b😀b")
	for _, c := range []struct{ start, occ, want int }{
		{1, 1, 2}, {1, 2, 4}, {2, 1, 2}, {3, 1, 4}, {4, 1, 4}, {5, 1, 0}, {6, 1, 0},
	} {
		if got, _ := re.IndexOf(ctx, c.start, c.occ, false); got != c.want {
			t.Errorf("IndexOf(%d, %d) = %d, want %d", c.start, c.occ, got, c.want)
		}
	}
	if got, _ := re.IndexOf(ctx, 1, 2, true); got != 5 {
		t.Errorf("end of the second b = %d, want 5", got)
	}
	if got, _ := re.Replace(ctx, "X", 3, 0); got != "😀b😀X" {
		t.Errorf("Replace from 3 = %q", got)
	}
	dot := compiled(t, ".", 0, "😀b😀b")
	for start, want := range []string{"😀", "😀", "b", "😀", "b"} {
		if got, _, _ := dot.Substring(ctx, start, 1); got != want {
			t.Errorf("Substring(%d) = %q, want %q", start, got, want)
		}
	}
	if _, ok, _ := dot.Substring(ctx, 5, 1); ok {
		t.Error("Substring(5) found a match after the end")
	}
	if _, err := dot.Replace(ctx, "X", 6, 0); !ErrIndexOutOfBounds.Is(err) {
		t.Errorf("Replace from 6 of 4 characters: %v", err)
	}
}

func TestReplacementStrings(t *testing.T) {
	ctx := context.Background()
	re := compiled(t, `(?<first>\w)(\w*)`, 0, "abc de f")
	for _, c := range []struct{ repl, want string }{
		{`$2$1`, "bca ed f"},
		{`${first}.`, "a. d. f."},
		{`[$0]`, "[abc] [de] [f]"},
		{`\$1\\`, `$1\ $1\ $1\`},
		{`$21`, "bc1 e1 1"},
		{`\u00e9\U0001F600`, "é😀 é😀 é😀"},
		{`\u12`, "u12 u12 u12"},
		{`x\`, "x x x"},
	} {
		got, err := re.Replace(ctx, c.repl, 1, 0)
		if err != nil || got != c.want {
			t.Errorf("Replace(%q) = %q, %v; want %q", c.repl, got, err, c.want)
		}
	}
	for _, repl := range []string{`$`, `$x`, `$3`, `${nope}`, `${first`} {
		if _, err := re.Replace(ctx, repl, 1, 0); !ErrInvalidReplacement.Is(err) {
			t.Errorf("Replace(%q): %v, want ErrInvalidReplacement", repl, err)
		}
	}
	// A bad replacement only matters when something is replaced.
	if got, err := compiled(t, "z", 0, "abc").Replace(ctx, "$9", 1, 0); got != "abc" || err != nil {
		t.Errorf("Replace without a match = %q, %v", got, err)
	}
}

// ICU's iteration: after a non-empty match, an empty match at its end is
// still reported (Go's FindAll skips it).
func TestEmptyMatches(t *testing.T) {
	ctx := context.Background()
	re := compiled(t, "a*", 0, "baaac")
	for occ, want := range map[int]string{0: "XbXXcX", 1: "Xbaaac", 2: "bXc", 3: "baaaXc", 4: "baaacX", 5: "baaac"} {
		if got, _ := re.Replace(ctx, "X", 1, occ); got != want {
			t.Errorf("Replace(occurrence %d) = %q, want %q", occ, got, want)
		}
	}
	if got, _ := re.Replace(ctx, "X", 3, 0); got != "baXXcX" {
		t.Errorf("Replace from 3 = %q", got)
	}
}

// A search from a later start still sees the text before it.
func TestSearchContext(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		pat, text  string
		flags      RegexFlags
		start, pos int
	}{
		{`\bc`, "ab cd", 0, 3, 4},
		{`\bc`, "abcd", 0, 3, 0},
		{`\Bc`, "abcd", 0, 3, 3},
		{`^b`, "ab", 0, 2, 0},
		{`^b`, "a\nb", RegexFlags_Multiline, 3, 3},
		{`\Ab`, "ab", 0, 2, 0},
		{`b$`, "ab\n", 0, 2, 2},
	} {
		got, err := compiled(t, c.pat, c.flags, c.text).IndexOf(ctx, c.start, 1, false)
		if err != nil || got != c.pos {
			t.Errorf("IndexOf(%q in %q from %d) = %d, %v; want %d", c.pat, c.text, c.start, got, err, c.pos)
		}
	}
}

// The patterns that made ICU backtrack for minutes. Under RE2 every call
// takes time linear in the input; the test checks the answers (the timings
// are in BenchmarkCatastrophic).
func TestCatastrophicPatternsAreLinear(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{30, 1000, 10000} {
		for _, c := range []struct {
			pat, text string
			match     bool
		}{
			{`(a*)*b`, strings.Repeat("a", n), false},
			{`(a*)*b`, strings.Repeat("a", n) + "b", true},
			{`(a|aa)+$`, strings.Repeat("a", n) + "!", false},
			{`(a|aa)+$`, strings.Repeat("a", n), true},
			{`(x+x+)+y`, strings.Repeat("x", n), false},
			{`(a|a)*b`, strings.Repeat("a", n), false},
			{`^(\w+\s?)*$`, strings.Repeat("word ", n/5) + "!", false},
			{`(.*a){12}`, strings.Repeat("a", 11) + strings.Repeat("b", n), false},
		} {
			re := compiled(t, c.pat, RegexFlags_Case_Insensitive, c.text)
			ok, err := re.Matches(ctx, 0, 0)
			if err != nil || ok != c.match {
				t.Errorf("%q on %d characters: %v, %v; want %v", c.pat, len(c.text), ok, err, c.match)
			}
			idx, _ := re.IndexOf(ctx, 1, 1, false)
			if (idx > 0) != c.match {
				t.Errorf("IndexOf(%q) = %d", c.pat, idx)
			}
			out, _ := re.Replace(ctx, "", 1, 0)
			if (out != c.text) != c.match {
				t.Errorf("Replace(%q) changed the text: %v", c.pat, out != c.text)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		pat       string
		flags     RegexFlags
		want      string // in the message
		rejectsRE bool   // the message explains RE2
	}{
		{`(a)\1`, 0, `backreference \1 is not supported at character 4`, true},
		{`(?<n>a)\k<n>`, 0, `backreference \k<name>`, true},
		{`a(?=b)`, 0, `lookahead (?=…)`, true},
		{`a(?!b)`, 0, `lookahead (?!…)`, true},
		{`(?<=a)b`, 0, `lookbehind (?<=…)`, true},
		{`(?<!a)b`, 0, `lookbehind (?<!…)`, true},
		{`(?>a+)b`, 0, `atomic group`, true},
		{`a++b`, 0, `possessive quantifier ++ is not supported at character 2`, true},
		{`a{2,3}+`, 0, `possessive quantifier {2,3}+ is not supported at character 2`, true},
		{`\Ga`, 0, `\G`, true},
		{`\X`, 0, `\X`, true},
		{`(?w)\b`, 0, `Unicode word boundaries`, true},
		{`\bx`, RegexFlags_Unicode_Word, `Unicode word boundaries`, true},
		{`a{1001}`, 0, `repetition count {1001} is above 1000`, false},
		{`(a{100}){11}`, 0, `nested repetitions`, false},
		{strings.Repeat(`\w`, 2000), 0, `the expression is too large`, false},
		{`(`, 0, `missing ) for this ( at character 1`, false},
		{`a)`, 0, `unmatched ) at character 2`, false},
		{`[a`, 0, `missing ] for this [`, false},
		{`*a`, 0, `quantifier * has nothing to repeat`, false},
		{`a**`, 0, `follows another quantifier`, false},
		{`a{,3}`, 0, `bad repetition`, false},
		{`a}`, 0, `} without {`, false},
		{`[z-a]`, 0, `bad range z-a`, false},
		{`a\`, 0, `\ at the end`, false},
		{`\p{Nope}`, 0, `unknown Unicode property Nope`, false},
		{`\p{InGreek}`, 0, `Unicode blocks`, false},
		{`[[:<:]]a`, 0, `MySQL 5.7 word boundary`, false},
		{`(?P<n>a)`, 0, `Python syntax`, false},
		{`\y`, RegexFlags_Error_On_Unknown_Escapes, `unknown escape \y`, false},
		{``, 0, `empty`, false},
	} {
		re := CreateRegex(0)
		err := re.SetRegexString(ctx, c.pat, c.flags)
		if !ErrInvalidRegex.Is(err) {
			t.Errorf("%q: %v, want ErrInvalidRegex", c.pat, err)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "the given regular expression is invalid: ") || !strings.Contains(msg, c.want) {
			t.Errorf("%q: message %q does not contain %q", c.pat, msg, c.want)
		}
		if hasRE := strings.Contains(msg, "RE2"); hasRE != c.rejectsRE && !strings.Contains(msg, "limit of RE2") {
			t.Errorf("%q: message %q mentions RE2: %v", c.pat, msg, hasRE)
		}
	}
}

// Random patterns and texts (including invalid UTF-8, NULs, empty strings
// and out-of-range positions) never panic.
func TestNeverPanics(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	atoms := []string{"a", "b", ".", "^", "$", "\\b", "\\B", "\\w", "\\d", "\\s", "\\R", "[a-c]", "[^a]", "[[:alpha:]&&[^b]]",
		"(", ")", "(?:", "(?i)", "(?m)", "(?s)", "(?x)", "|", "*", "+", "?", "*?", "{2}", "{1,3}", "\\", "\\Q", "\\E",
		"\\x{1F600}", "é", "😀", "\x00", "\xff", "#", " ", "\\p{L}", "\\1", "(?=", "[", "]", "\\Z", "\\z", "\\A", "$\n"}
	texts := []string{"", "a", "ab\nab\n", "\x00\xff\xfe", "😀a😀b", "aaaa", "héllo wörld", "a\r\nb", strings.Repeat("ab", 50)}
	repls := []string{"", "x", "$0", "$1", "\\", "${x}", "$"}
	for i := 0; i < 4000; i++ {
		var b strings.Builder
		for k := rng.IntN(6) + 1; k > 0; k-- {
			b.WriteString(atoms[rng.IntN(len(atoms))])
		}
		pat := b.String()
		re := CreateRegex(0)
		if err := re.SetRegexString(ctx, pat, RegexFlags(rng.IntN(64)&^16)); err != nil {
			continue
		}
		for _, text := range texts {
			if err := re.SetMatchString(ctx, text); err != nil {
				t.Fatal(err)
			}
			start, occ := rng.IntN(8)-2, rng.IntN(5)-1
			re.Matches(ctx, 0, occ)
			re.Matches(ctx, start, occ)
			re.IndexOf(ctx, start, occ, rng.IntN(2) == 0)
			re.Substring(ctx, start, occ)
			re.Replace(ctx, repls[rng.IntN(len(repls))], start, occ)
		}
		re.Close()
	}
}

// A megabyte of text with patterns of every kind.
func TestLargeInput(t *testing.T) {
	ctx := context.Background()
	text := strings.Repeat("lorem ipsum dolor sit amet, 😀 consectetur\n", 1<<20/48)
	for _, pat := range []string{`amet`, `\bsit\b`, `(?m)^lorem`, `x$`, `[[:alpha:]]+`, `(\w+) (\w+)`, `(a*)*b`, `.*`, `\s*`} {
		re := compiled(t, pat, RegexFlags_Case_Insensitive, text)
		if _, err := re.Matches(ctx, 0, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := re.IndexOf(ctx, 500000, 3, true); err != nil {
			t.Fatal(err)
		}
		if _, _, err := re.Substring(ctx, 2, 2); err != nil {
			t.Fatal(err)
		}
	}
	re := compiled(t, `o`, 0, text)
	out, err := re.Replace(ctx, "0", 1, 0)
	if err != nil || strings.Contains(out, "o") || len(out) != len(text) {
		t.Errorf("Replace on 1 MB: %v, %d bytes", err, len(out))
	}
}

// countingContext reports cancellation from its limit-th call of Err on.
type countingContext struct {
	context.Context
	calls, limit int64
}

func (c *countingContext) Err() error {
	if atomic.AddInt64(&c.calls, 1) >= c.limit {
		return context.Canceled
	}
	return nil
}

func TestCancellation(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	re := compiled(t, "a", 0, "aaa")
	if _, err := re.Matches(cancelled, 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Matches with a cancelled context: %v", err)
	}
	// A search big enough to read its text incrementally notices a
	// cancellation while it runs (here at the 3rd check, after the entry
	// checks), not only between calls.
	text := strings.Repeat("ab", 1<<20)
	big := compiled(t, strings.Repeat(`[ab]`, 200)+"c", 0, text)
	for name, call := range map[string]func(context.Context) error{
		"Matches":   func(ctx context.Context) error { _, err := big.Matches(ctx, 0, 0); return err },
		"IndexOf":   func(ctx context.Context) error { _, err := big.IndexOf(ctx, 1, 1, false); return err },
		"Substring": func(ctx context.Context) error { _, _, err := big.Substring(ctx, 2, 1); return err },
		"Replace":   func(ctx context.Context) error { _, err := big.Replace(ctx, "", 1, 0); return err },
	} {
		ctx := &countingContext{Context: context.Background(), limit: 3}
		if err := call(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
}

// Compiled Unicode classes and case closures are cached process-wide; a
// Regex is for one goroutine, but many may compile at once (run with -race).
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	pats := []string{`\w+`, `(?i)[[:alpha:]]+`, `\p{Greek}`, `(?i)\P{Lu}`, `[\w--\d]`, `\bé`}
	done := make(chan error)
	for g := 0; g < 4; g++ {
		go func() {
			var err error
			for i := 0; i < 50 && err == nil; i++ {
				re := CreateRegex(0)
				if err = re.SetRegexString(ctx, pats[(g+i)%len(pats)], 0); err == nil {
					if err = re.SetMatchString(ctx, "Ωmega café 42"); err == nil {
						_, err = re.Replace(ctx, "<$0>", 1, 0)
					}
				}
				re.Close()
			}
			done <- err
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestLeakHandlerIsNeverCalled(t *testing.T) {
	var called atomic.Bool
	SetRegexLeakHandler(func() { called.Store(true) })
	defer SetRegexLeakHandler(func() {})
	for i := 0; i < 100; i++ {
		re := CreateRegex(0)
		_ = re.SetRegexString(context.Background(), "a", 0)
	}
	time.Sleep(10 * time.Millisecond)
	if called.Load() {
		t.Error("leak handler called")
	}
}

func BenchmarkCatastrophic(b *testing.B) {
	ctx := context.Background()
	for _, pat := range []string{`(a*)*b`, `(a|aa)+$`, `(x+x+)+y`} {
		for _, n := range []int{30, 1000, 10000, 100000} {
			text := strings.Repeat(pat[1:2], n) + "!"
			b.Run(pat+"/"+strconv.Itoa(n), func(b *testing.B) {
				re := compiled(b, pat, 0, text)
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					if ok, _ := re.Matches(ctx, 0, 0); ok {
						b.Fatal("match")
					}
				}
			})
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	for _, pat := range []string{`abc`, `^[a-z]+@[a-z]+\.com$`, `\w+\s\d+`, `[[:alpha:]]+`} {
		for _, flags := range []RegexFlags{0, RegexFlags_Case_Insensitive} {
			b.Run(pat+"/"+strconv.Itoa(int(flags)), func(b *testing.B) {
				for b.Loop() {
					if _, err := compile(pat, flags); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func TestCost(t *testing.T) {
	for _, c := range []struct {
		pat      string
		min, max int
	}{
		{`abc`, 3, 8},
		{`[ab]c`, 2, 6},
		{`[ab]{1000}c`, 1000, 1010},
		{`(?i)\w+@\w+\.com`, 6, 20},
		{`(a|b|c)*`, 5, 15},
	} {
		n, err := Cost(c.pat, 0)
		if err != nil || n < c.min || n > c.max {
			t.Errorf("Cost(%q) = %d, %v; want %d … %d", c.pat, n, err, c.min, c.max)
		}
		// The estimate that chooses cancellable searches stays close.
		prog, _ := compile(c.pat, 0)
		if prog.size > 2*n || n > 2*prog.size+4 {
			t.Errorf("%q: estimated size %d, %d instructions", c.pat, prog.size, n)
		}
	}
	if _, err := Cost(`(a)\1`, 0); !ErrInvalidRegex.Is(err) {
		t.Errorf("Cost of a backreference: %v", err)
	}
}

// BenchmarkCostPerByte shows the time per byte following Cost, not the
// pattern's length.
func BenchmarkCostPerByte(b *testing.B) {
	ctx := context.Background()
	text := strings.Repeat("ab", 5000)
	for _, pat := range []string{`[ab]c`, `[ab]{10}c`, `[ab]{100}c`, `[ab]{1000}c`} {
		n, _ := Cost(pat, 0)
		b.Run(pat+"/cost="+strconv.Itoa(n), func(b *testing.B) {
			re := compiled(b, pat, 0, text)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				re.Matches(ctx, 0, 0)
			}
		})
	}
}

// BenchmarkReplaceAllQuadratic shows a pattern whose every search reads to
// the end of the text: replacing all its matches takes time quadratic in
// the text (so does Go's regexp.ReplaceAllString).
func BenchmarkReplaceAllQuadratic(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 2000, 4000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			re := compiled(b, `.*!|a`, 0, strings.Repeat("a", n))
			for b.Loop() {
				re.Replace(ctx, "", 1, 0)
			}
		})
	}
}

// TestMatchMemoryBounded: a short pattern with many groups, whose matching
// would need gigabytes (Go keeps a capture array per NFA thread), is
// refused when compiled; a pattern with a few groups is not.
func TestMatchMemoryBounded(t *testing.T) {
	ctx := context.Background()
	r := CreateRegex(1)
	defer r.Close()
	err := r.SetRegexString(ctx, strings.Repeat("(a?)", 20000), RegexFlags_None)
	if err == nil || !strings.Contains(err.Error(), "too much memory") {
		t.Fatalf("20,000 groups: %v", err)
	}
	if err := r.SetRegexString(ctx, strings.Repeat("(a?)", 20), RegexFlags_None); err != nil {
		t.Fatalf("20 groups: %v", err)
	}
}

// TestReplaceResultBounded: a replacement whose result would pass
// MaxResultBytes fails with ErrResultTooLarge, without building it.
func TestReplaceResultBounded(t *testing.T) {
	ctx := context.Background()
	defer SetMaxResultBytes(DefaultMaxResultBytes)
	SetMaxResultBytes(1000)
	r := CreateRegex(1)
	defer r.Close()
	if err := r.SetRegexString(ctx, "", RegexFlags_None); err == nil {
		t.Fatal("an empty pattern compiled")
	}
	if err := r.SetRegexString(ctx, "a?", RegexFlags_None); err != nil {
		t.Fatal(err)
	}
	if err := r.SetMatchString(ctx, strings.Repeat("b", 600)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Replace(ctx, "xy", 1, 0); !ErrResultTooLarge.Is(err) {
		t.Errorf("600 empty matches × 2 bytes: %v", err)
	}
	got, err := r.Replace(ctx, "x", 1, 1)
	if err != nil || got != "x"+strings.Repeat("b", 600) {
		t.Errorf("one replacement: %q %v", got, err)
	}
}
