package planner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/dpvars"
)

// BigQuery's spelling of a differentially private query,
//
//	SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = 1, delta = 1e-6,
//	    max_groups_contributed = 1, privacy_unit_column = user_id)
//	  country, COUNT(*) FROM searches GROUP BY country
//
// is another spelling of the same release: RewriteDifferentialPrivacy
// replaces the clause by the statement's SET_VAR hints,
//
//	SELECT /*+ SET_VAR(dp_epsilon = 1) SET_VAR(dp_delta = 1e-6)
//	    SET_VAR(dp_max_groups_contributed = 1) SET_VAR(dp_max_items = 1)
//	    SET_VAR(dp_privacy_unit_column = 'user_id') */ country, COUNT(*) …
//
// before go-mysql-server's parser sees the text (vitess cannot parse the
// clause). The rewrite reads the text with a small lexer that skips
// string literals, quoted identifiers and comments, so a clause inside
// them is left alone; keywords and option names are case-insensitive. The
// options are per statement, above the session's variables and the
// table's configured defaults; privacy_unit_column must name the table's
// configured privacy unit (checkPrivacyUnit refuses any other). The
// rewrite changes no privacy argument: the statement is planned, checked
// and charged exactly as the hinted one.

// bigQueryOptions maps the clause's options to dpsql's variables.
var bigQueryOptions = map[string][]string{
	"epsilon":                    {dpvars.VarEpsilon},
	"delta":                      {dpvars.VarDelta},
	"max_groups_contributed":     {dpvars.VarMaxGroups, dpvars.VarMaxItems},
	"max_partitions_contributed": {dpvars.VarMaxGroups, dpvars.VarMaxItems}, // the earlier name
	"max_rows_per_group":         {dpvars.VarMaxRows},
	"contribution_bounds":        {dpvars.VarBounds},
	"privacy_unit_column":        {dpvars.VarPrivacyUnit},
	"noise_after_bounds":         {dpvars.VarNoiseAfterBounds}, // dpsql's own: TRUE or FALSE
}

// RewriteDifferentialPrivacy rewrites every SELECT WITH
// DIFFERENTIAL_PRIVACY [OPTIONS(…)] of query into SELECT /*+ SET_VAR(…)
// */; a query without the clause is returned as it is. An option dpsql
// does not know, or a value it cannot take, is an error (1064) saying
// which options there are.
func RewriteDifferentialPrivacy(query string) (string, error) {
	if !containsFold(query, "DIFFERENTIAL_PRIVACY") {
		return query, nil
	}
	toks := lex(query)
	var b strings.Builder
	last := 0
	for i := 0; i < len(toks); i++ {
		if !toks[i].word(query, "SELECT") || i+2 >= len(toks) || !toks[i+1].word(query, "WITH") || !toks[i+2].word(query, "DIFFERENTIAL_PRIVACY") {
			continue
		}
		end := toks[i+2].end
		var hints []string
		j := i + 3
		if j < len(toks) && toks[j].word(query, "OPTIONS") {
			var err error
			hints, j, err = bigQueryHints(query, toks, j+1)
			if err != nil {
				return "", err
			}
			end = toks[j-1].end
		}
		b.WriteString(query[last:toks[i+1].start])
		b.WriteString("/*+ ")
		b.WriteString(strings.Join(hints, " "))
		b.WriteString(" */")
		last = end
		i = j - 1
	}
	if last == 0 {
		return query, nil
	}
	b.WriteString(query[last:])
	return b.String(), nil
}

// bigQueryHints reads "( name = value [, …] )" from toks[i:] and returns
// the SET_VAR hints and the index after the closing parenthesis.
func bigQueryHints(query string, toks []token, i int) ([]string, int, error) {
	bad := func(format string, args ...any) ([]string, int, error) {
		names := make([]string, 0, len(bigQueryOptions))
		for n := range bigQueryOptions {
			if n != "max_partitions_contributed" {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		return nil, 0, mysql.NewSQLError(mysql.ERParseError, mysql.SSClientError,
			"WITH DIFFERENTIAL_PRIVACY OPTIONS(…): %s; write OPTIONS(name = value, …) with the options %s, as in OPTIONS(epsilon = 1, delta = 1e-6, max_groups_contributed = 1, privacy_unit_column = user_id)",
			fmt.Sprintf(format, args...), strings.Join(names, ", "))
	}
	if i >= len(toks) || toks[i].text(query) != "(" {
		return bad("OPTIONS needs a parenthesised list")
	}
	i++
	var hints []string
	seen := map[string]bool{}
	for {
		if i < len(toks) && toks[i].text(query) == ")" && len(seen) == 0 {
			return hints, i + 1, nil
		}
		if i+2 >= len(toks) || toks[i].kind != wordToken || toks[i+1].text(query) != "=" {
			return bad("expected name = value")
		}
		name := strings.ToLower(toks[i].text(query))
		vars, ok := bigQueryOptions[name]
		if !ok {
			if name == "group_selection_strategy" {
				return bad("group_selection_strategy is not offered (for public groups, join a public table of keys: docs/sql.md)")
			}
			return bad("unknown option %s", toks[i].text(query))
		}
		if seen[name] {
			return bad("option %s is given twice", name)
		}
		seen[name] = true
		value, next, err := bigQueryValue(query, toks, i+2, name)
		if err != nil {
			return bad("%v", err)
		}
		for _, v := range vars {
			hints = append(hints, fmt.Sprintf("SET_VAR(%s = %s)", v, value))
		}
		i = next
		if i >= len(toks) {
			return bad("the list is not closed with )")
		}
		switch toks[i].text(query) {
		case ",":
			i++
		case ")":
			return hints, i + 1, nil
		default:
			return bad("expected , or ) after %s", name)
		}
	}
}

// bigQueryValue reads one option value from toks[i:]: a number, a
// (qualified) identifier or a string for privacy_unit_column, and for
// contribution_bounds "(lower, upper)" or a string. It returns the value
// as a SET_VAR hint writes it.
func bigQueryValue(query string, toks []token, i int, name string) (string, int, error) {
	t := toks[i]
	switch name {
	case "privacy_unit_column":
		if t.kind == stringToken {
			return quoteHint(unquote(t.text(query))), i + 1, nil
		}
		if t.kind != wordToken && t.kind != quotedIdentToken {
			return "", 0, fmt.Errorf("privacy_unit_column must name a column, got %s", t.text(query))
		}
		col := unquote(t.text(query))
		for i+2 < len(toks) && toks[i+1].text(query) == "." && (toks[i+2].kind == wordToken || toks[i+2].kind == quotedIdentToken) {
			i += 2
			col = unquote(toks[i].text(query)) // t.user_id: the column's own name
		}
		return quoteHint(col), i + 1, nil
	case "contribution_bounds":
		if t.kind == stringToken {
			return quoteHint(unquote(t.text(query))), i + 1, nil
		}
		if t.text(query) == "(" && i+4 < len(toks) && toks[i+2].text(query) == "," && toks[i+4].text(query) == ")" {
			lo, hi := toks[i+1].text(query), toks[i+3].text(query)
			if _, err := strconv.ParseFloat(lo, 64); err != nil {
				return "", 0, fmt.Errorf("contribution_bounds must be (lower, upper), two numbers")
			}
			if _, err := strconv.ParseFloat(hi, 64); err != nil {
				return "", 0, fmt.Errorf("contribution_bounds must be (lower, upper), two numbers")
			}
			return quoteHint(lo + "," + hi), i + 5, nil
		}
		return "", 0, fmt.Errorf("contribution_bounds must be (lower, upper), two numbers")
	case "noise_after_bounds":
		switch strings.ToUpper(t.text(query)) {
		case "TRUE", "ON", "1":
			return "ON", i + 1, nil
		case "FALSE", "OFF", "0":
			return "OFF", i + 1, nil
		}
		return "", 0, fmt.Errorf("noise_after_bounds must be TRUE or FALSE, got %s", t.text(query))
	}
	v := t.text(query)
	if t.kind == numberToken {
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return v, i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("%s must be a number, got %s", name, v)
}

// quoteHint writes s as a single-quoted SET_VAR value.
func quoteHint(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
}

// unquote strips a literal's or quoted identifier's quotes (doubled
// quotes and backslash escapes undone).
func unquote(s string) string {
	if len(s) < 2 {
		return s
	}
	q := s[0]
	if q != '\'' && q != '"' && q != '`' {
		return s
	}
	body := s[1 : len(s)-1]
	body = strings.ReplaceAll(body, string(q)+string(q), string(q))
	if q != '`' {
		var b strings.Builder
		for k := 0; k < len(body); k++ {
			if body[k] == '\\' && k+1 < len(body) {
				k++
			}
			b.WriteByte(body[k])
		}
		body = b.String()
	}
	return body
}

type tokenKind int

const (
	wordToken tokenKind = iota
	numberToken
	stringToken
	quotedIdentToken
	punctToken
)

// token is a lexeme of the query: its kind and byte span.
type token struct {
	kind       tokenKind
	start, end int
}

func (t token) text(q string) string { return q[t.start:t.end] }

// word reports whether t is the keyword w of q (case-insensitive).
func (t token) word(q, w string) bool {
	return t.kind == wordToken && strings.EqualFold(q[t.start:t.end], w)
}

// lex splits q into tokens, skipping white space and comments (--, #,
// /* */, hint comments included), with strings and quoted identifiers as
// single tokens.
func lex(q string) []token {
	var out []token
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || (c == '-' && i+2 <= len(q) && strings.HasPrefix(q[i:], "--") && (i+2 == len(q) || q[i+2] == ' ' || q[i+2] == '\t' || q[i+2] == '\n' || q[i+2] == '\r')):
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(q) {
				if q[j] == '\\' && c != '`' {
					j += 2
					continue
				}
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j+1, len(q))
			kind := stringToken
			if c == '`' {
				kind = quotedIdentToken
			}
			out = append(out, token{kind, i, end})
			i = end
		case isWordByte(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < len(q) && isWordByte(q[j]) {
				j++
			}
			out = append(out, token{wordToken, i, j})
			i = j
		case (c >= '0' && c <= '9') || (c == '.' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9') || ((c == '-' || c == '+') && i+1 < len(q) && (q[i+1] >= '0' && q[i+1] <= '9' || q[i+1] == '.')):
			j := i + 1
			for j < len(q) && (isWordByte(q[j]) || q[j] == '.' || ((q[j] == '-' || q[j] == '+') && (q[j-1] == 'e' || q[j-1] == 'E'))) {
				j++
			}
			out = append(out, token{numberToken, i, j})
			i = j
		default:
			out = append(out, token{punctToken, i, i + 1})
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToUpper(s), sub)
}
