package regex

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRegex compiles arbitrary patterns with arbitrary flags and, when they
// compile, runs every method on an arbitrary text. Nothing may panic, and
// the answers must agree with each other: Matches with IndexOf, IndexOf
// with Substring, Replace with the matches it replaces.
//
//	go test -run XXX -fuzz FuzzRegex
func FuzzRegex(f *testing.F) {
	for _, s := range []struct {
		pat, text string
		flags     uint16
		start     int
		occ       int
	}{
		{`(a*)*b`, "aaaa", 0, 1, 1},
		{`\bfoo\b|$`, "foo bar\n", 2, 2, 0},
		{`(?m)^\w+$`, "ab\ncd\r\n", 8, 1, 2},
		{`[[:alpha:]&&[^aeiou]]+`, "héllo wörld", 2, 3, 1},
		{`\Q*\E|\x{1F600}`, "😀*😀", 0, 2, 3},
		{`(?x) a # b`, "\xff\x00a", 4, 1, 0},
		{`.`, "a\r\nb", 32, 1, 0},
		{`(?<n>.)(\d)?`, "a1b", 0, 1, 0},
	} {
		f.Add(s.pat, s.flags, s.text, s.start, s.occ)
	}
	f.Fuzz(func(t *testing.T, pat string, flags uint16, text string, start, occ int) {
		ctx := context.Background()
		start, occ = start%8, occ%5
		re := CreateRegex(0)
		defer re.Close()
		if err := re.SetRegexString(ctx, pat, RegexFlags(flags)&^RegexFlags_Literal); err != nil {
			if !ErrInvalidRegex.Is(err) {
				t.Fatalf("SetRegexString(%q): %v is not ErrInvalidRegex", pat, err)
			}
			return
		}
		if err := re.SetMatchString(ctx, text); err != nil {
			t.Fatal(err)
		}
		text = validUTF8(text)
		n := utf8.RuneCountInString(text)
		ok, err := re.Matches(ctx, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		first, err := re.IndexOf(ctx, 1, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (first > 0) {
			t.Fatalf("%q on %q: Matches %v, IndexOf %d", pat, text, ok, first)
		}
		begin, _ := re.IndexOf(ctx, start, occ, false)
		end, _ := re.IndexOf(ctx, start, occ, true)
		sub, found, err := re.Substring(ctx, start, occ)
		if err != nil {
			t.Fatal(err)
		}
		if found != (begin > 0) || (begin > 0) != (end > 0) {
			t.Fatalf("%q on %q from %d: IndexOf %d–%d, Substring found %v", pat, text, start, begin, end, found)
		}
		if found {
			if end < begin || begin > n+1 || end > n+1 {
				t.Fatalf("%q on %q: match %d–%d in %d characters", pat, text, begin, end, n)
			}
			b, _ := byteOffset(text, begin-1)
			e, _ := byteOffset(text, end-1)
			if text[b:e] != sub {
				t.Fatalf("%q on %q: Substring %q, IndexOf %d–%d gives %q", pat, text, sub, begin, end, text[b:e])
			}
		}
		if start < 1 || start > n+1 {
			return
		}
		// Replacing every match by a marker and removing the markers gives
		// back the text without the matches.
		out, err := re.Replace(ctx, "\x00", start, 0)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, "\x00") {
			return
		}
		var kept strings.Builder
		p, _ := byteOffset(text, start-1)
		kept.WriteString(text[:p])
		pr := re.(*privateRegex)
		pr.each(ctx, p, false, func(loc []int) bool {
			kept.WriteString(text[p:loc[0]])
			p = loc[1]
			return true
		})
		kept.WriteString(text[p:])
		if strings.ReplaceAll(out, "\x00", "") != kept.String() {
			t.Fatalf("%q on %q: Replace gives %q", pat, text, out)
		}
	})
}
