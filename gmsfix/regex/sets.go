package regex

import (
	"slices"
	"strings"
	"sync"
	"unicode"
)

// runeSet is a set of code points as sorted, non-overlapping, non-adjacent
// closed ranges. Values are immutable once built: every operation returns a
// new slice, so sets cached in namedSets can be shared.
type runeSet []runeRange

type runeRange struct{ lo, hi rune }

const maxRune = unicode.MaxRune

// normalize sorts and merges overlapping or adjacent ranges in place.
func normalize(rs []runeRange) runeSet {
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b runeRange) int { return int(a.lo) - int(b.lo) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.lo <= last.hi+1 {
			last.hi = max(last.hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

func single(r rune) runeSet { return runeSet{{r, r}} }

func span(lo, hi rune) runeSet { return runeSet{{lo, hi}} }

func union(sets ...runeSet) runeSet {
	var all []runeRange
	for _, s := range sets {
		all = append(all, s...)
	}
	return normalize(all)
}

// complement returns the code points 0–U+10FFFF not in s.
func (s runeSet) complement() runeSet {
	var out runeSet
	next := rune(0)
	for _, r := range s {
		if r.lo > next {
			out = append(out, runeRange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= maxRune {
		out = append(out, runeRange{next, maxRune})
	}
	return out
}

func intersect(a, b runeSet) runeSet {
	var out runeSet
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo <= hi {
			out = append(out, runeRange{lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

func subtract(a, b runeSet) runeSet { return intersect(a, b.complement()) }

func (s runeSet) contains(r rune) bool {
	_, found := slices.BinarySearchFunc(s, r, func(rr runeRange, r rune) int {
		switch {
		case rr.hi < r:
			return -1
		case rr.lo > r:
			return 1
		}
		return 0
	})
	return found
}

// Case folding uses Unicode simple case folding (unicode.SimpleFold), as
// Go's regexp does for literals.
const (
	minFold = 0x0041
	maxFold = 0x1e943
)

// foldEntry is a code point whose simple case folding orbit has other
// members (k → K, K (Kelvin sign)); there are a few thousand.
type foldEntry struct {
	r     rune
	other []rune
}

var foldTable = sync.OnceValue(func() []foldEntry {
	var t []foldEntry
	for c := rune(minFold); c <= maxFold; c++ {
		f := unicode.SimpleFold(c)
		if f == c {
			continue
		}
		e := foldEntry{r: c}
		for ; f != c; f = unicode.SimpleFold(f) {
			e.other = append(e.other, f)
		}
		t = append(t, e)
	}
	return t
})

// caseClose returns s together with every code point in the simple case
// folding orbit of a member. ICU applies this to a bracketed set under the
// i flag before the set's own negation, so (?i)[^k] matches neither k, K
// nor the Kelvin sign.
func (s runeSet) caseClose() runeSet {
	if len(s) == 0 || (len(s) == 1 && s[0].lo == 0 && s[0].hi == maxRune) {
		return s
	}
	var extra []rune
	t := foldTable()
	i := 0
	for _, r := range s {
		for i < len(t) && t[i].r < r.lo {
			i++
		}
		for ; i < len(t) && t[i].r <= r.hi; i++ {
			for _, f := range t[i].other {
				if !s.contains(f) {
					extra = append(extra, f)
				}
			}
		}
	}
	if len(extra) == 0 {
		return s
	}
	rs := slices.Clone([]runeRange(s))
	for _, f := range extra {
		rs = append(rs, runeRange{f, f})
	}
	return normalize(rs)
}

func fromTable(t *unicode.RangeTable) runeSet {
	var rs []runeRange
	for _, r := range t.R16 {
		if r.Stride == 1 {
			rs = append(rs, runeRange{rune(r.Lo), rune(r.Hi)})
			continue
		}
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			rs = append(rs, runeRange{c, c})
		}
	}
	for _, r := range t.R32 {
		if r.Stride == 1 {
			rs = append(rs, runeRange{rune(r.Lo), rune(r.Hi)})
			continue
		}
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			rs = append(rs, runeRange{c, c})
		}
	}
	return normalize(rs)
}

// namedSets caches the sets built from Unicode tables, so that they are
// computed on first use and not at program start.
var namedSets sync.Map // string → runeSet

func cached(key string, build func() runeSet) runeSet {
	if v, ok := namedSets.Load(key); ok {
		return v.(runeSet)
	}
	v, _ := namedSets.LoadOrStore(key, build())
	return v.(runeSet)
}

func category(name string) runeSet {
	return cached("gc:"+name, func() runeSet {
		switch name {
		case "Cn":
			var all []runeSet
			for k, t := range unicode.Categories {
				if len(k) == 2 && k != "LC" && k != "Cn" {
					all = append(all, fromTable(t))
				}
			}
			return union(all...).complement()
		case "C":
			return union(category("Cc"), category("Cf"), category("Co"), category("Cs"), category("Cn"))
		}
		return fromTable(unicode.Categories[name])
	})
}

// lineTerminators are the characters ICU treats as ending a line for '.',
// '^' and '$' (unless UREGEX_UNIX_LINES is set): \n \v \f \r U+0085 U+2028
// U+2029. It is also ICU's \v.
func lineTerminators() runeSet {
	return runeSet{{0x0a, 0x0d}, {0x85, 0x85}, {0x2028, 0x2029}}
}

func whiteSpace() runeSet {
	return cached("White_Space", func() runeSet { return fromTable(unicode.White_Space) })
}

func decimalDigits() runeSet { return category("Nd") }

func alphabetic() runeSet {
	return cached("Alphabetic", func() runeSet {
		return union(category("L"), category("Nl"), fromTable(unicode.Other_Alphabetic))
	})
}

// wordChars is ICU's \w: [\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\u200c\u200d].
func wordChars() runeSet {
	return cached(`\w`, func() runeSet {
		return union(alphabetic(), category("M"), category("Nd"), category("Pc"), span(0x200c, 0x200d))
	})
}

// horizontalSpace is ICU's \h: [\t\p{Zs}].
func horizontalSpace() runeSet {
	return cached(`\h`, func() runeSet { return union(single('\t'), category("Zs")) })
}

// looseName normalises a property name the way ICU matches them: case,
// spaces, underscores and hyphens do not matter.
func looseName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case ' ', '_', '-', '\t', '\n', '\r', '\f', '\v':
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// gcNames maps loose long and short General_Category names to Go's keys.
var gcNames = map[string]string{
	"l": "L", "letter": "L",
	"lc": "LC", "casedletter": "LC",
	"lu": "Lu", "uppercaseletter": "Lu",
	"ll": "Ll", "lowercaseletter": "Ll",
	"lt": "Lt", "titlecaseletter": "Lt",
	"lm": "Lm", "modifierletter": "Lm",
	"lo": "Lo", "otherletter": "Lo",
	"m": "M", "mark": "M", "combiningmark": "M",
	"mn": "Mn", "nonspacingmark": "Mn",
	"mc": "Mc", "spacingmark": "Mc",
	"me": "Me", "enclosingmark": "Me",
	"n": "N", "number": "N",
	"nd": "Nd", "decimalnumber": "Nd",
	"nl": "Nl", "letternumber": "Nl",
	"no": "No", "othernumber": "No",
	"p": "P", "punctuation": "P",
	"pc": "Pc", "connectorpunctuation": "Pc",
	"pd": "Pd", "dashpunctuation": "Pd",
	"ps": "Ps", "openpunctuation": "Ps",
	"pe": "Pe", "closepunctuation": "Pe",
	"pi": "Pi", "initialpunctuation": "Pi",
	"pf": "Pf", "finalpunctuation": "Pf",
	"po": "Po", "otherpunctuation": "Po",
	"s": "S", "symbol": "S",
	"sm": "Sm", "mathsymbol": "Sm",
	"sc": "Sc", "currencysymbol": "Sc",
	"sk": "Sk", "modifiersymbol": "Sk",
	"so": "So", "othersymbol": "So",
	"z": "Z", "separator": "Z",
	"zs": "Zs", "spaceseparator": "Zs",
	"zl": "Zl", "lineseparator": "Zl",
	"zp": "Zp", "paragraphseparator": "Zp",
	"c": "C", "other": "C",
	"cc": "Cc", "control": "Cc",
	"cf": "Cf", "format": "Cf",
	"cs": "Cs", "surrogate": "Cs",
	"co": "Co", "privateuse": "Co",
	"cn": "Cn", "unassigned": "Cn",
}

func generalCategory(loose string) (runeSet, bool) {
	if k, ok := gcNames[loose]; ok {
		return category(k), true
	}
	return nil, false
}

func script(loose string) (runeSet, bool) {
	for name, t := range unicode.Scripts {
		if looseName(name) == loose {
			return cached("sc:"+name, func() runeSet { return fromTable(t) }), true
		}
	}
	return nil, false
}

// binaryProperty resolves ICU's binary property names, including the POSIX
// names of [[:alpha:]]-style classes, which ICU defines over all of Unicode.
func binaryProperty(loose string) (runeSet, bool) {
	switch loose {
	case "any":
		return span(0, maxRune), true
	case "assigned":
		return category("Cn").complement(), true
	case "ascii":
		return span(0, 0x7f), true
	case "alphabetic", "alpha":
		return alphabetic(), true
	case "lowercase", "lower":
		return cached("Lowercase", func() runeSet { return union(category("Ll"), fromTable(unicode.Other_Lowercase)) }), true
	case "uppercase", "upper":
		return cached("Uppercase", func() runeSet { return union(category("Lu"), fromTable(unicode.Other_Uppercase)) }), true
	case "whitespace", "wspace", "space":
		return whiteSpace(), true
	case "math":
		return cached("Math", func() runeSet { return union(category("Sm"), fromTable(unicode.Other_Math)) }), true
	case "hexdigit", "hex":
		return fromTable(unicode.Hex_Digit), true
	case "asciihexdigit", "ahex":
		return fromTable(unicode.ASCII_Hex_Digit), true
	case "digit":
		return decimalDigits(), true
	case "alnum":
		return cached("alnum", func() runeSet { return union(alphabetic(), decimalDigits()) }), true
	case "blank":
		return horizontalSpace(), true
	case "cntrl":
		return category("Cc"), true
	case "punct":
		return category("P"), true
	case "xdigit":
		return cached("xdigit", func() runeSet { return union(decimalDigits(), fromTable(unicode.Hex_Digit)) }), true
	case "word":
		return wordChars(), true
	case "graph":
		return graph(), true
	case "print":
		return cached("print", func() runeSet {
			return subtract(union(graph(), horizontalSpace()), category("Cc"))
		}), true
	}
	for name, t := range unicode.Properties {
		if looseName(name) == loose {
			return cached("prop:"+name, func() runeSet { return fromTable(t) }), true
		}
	}
	return nil, false
}

// graph is [^\p{space}\p{gc=Control}\p{gc=Surrogate}\p{gc=Unassigned}]
// (Unicode TR 18, which ICU follows).
func graph() runeSet {
	return cached("graph", func() runeSet {
		return union(whiteSpace(), category("Cc"), category("Cs"), category("Cn")).complement()
	})
}

// property resolves the body of \p{…} or [:…:]. ICU tries binary
// properties, then general categories, then scripts; "Is" before a script or
// category name is accepted as in ICU. Block names (\p{InGreek},
// \p{Block=…}) and Script_Extensions are not available in Go's tables.
func property(name string) (runeSet, string) {
	if k, v, ok := strings.Cut(name, "="); ok {
		key, val := looseName(k), looseName(v)
		switch key {
		case "gc", "generalcategory":
			if s, ok := generalCategory(val); ok {
				return s, ""
			}
			return nil, "unknown general category " + v
		case "sc", "script":
			if s, ok := script(val); ok {
				return s, ""
			}
			return nil, "unknown script " + v + " (write the script's full name, such as Greek or Latin)"
		}
		return nil, "the Unicode property " + k + " is not supported (supported: general categories, scripts, binary properties)"
	}
	loose := looseName(name)
	if s, ok := binaryProperty(loose); ok {
		return s, ""
	}
	if s, ok := generalCategory(loose); ok {
		return s, ""
	}
	if s, ok := script(loose); ok {
		return s, ""
	}
	if rest, ok := strings.CutPrefix(loose, "is"); ok {
		if s, ok := generalCategory(rest); ok {
			return s, ""
		}
		if s, ok := script(rest); ok {
			return s, ""
		}
	}
	if strings.HasPrefix(loose, "in") {
		return nil, "Unicode blocks (" + name + ") are not supported"
	}
	return nil, "unknown Unicode property " + name
}
