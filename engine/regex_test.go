package engine_test

import (
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/enginetest/queries"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/server/storage"
)

// The REGEXP functions of go-mysql-server v0.20.0 run on gmsfix/regex (RE2)
// instead of go-icu-regex (ICU), through the replace directive in go.mod.
// These tests run go-mysql-server's own table of REGEXP queries on an engine
// from engine.New and record where the answers differ from ICU's.

// regexHarness serves the tables that queries.RegexTests reads: mytable of
// go-mysql-server's SimpleSetup and the tests table of its TestRegex.
var regexHarness = harness{provider: regexProvider}

func regexProvider(t testing.TB) *storage.Provider {
	t.Helper()
	table := func(name string, cols []storage.Column, rows ...[]any) *storage.Table {
		b, err := storage.NewTableBuilder(name, cols)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if err := b.Append(r...); err != nil {
				t.Fatal(err)
			}
		}
		tb, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	db := storage.NewDatabase("mydb")
	for _, tb := range []*storage.Table{
		table("mytable", []storage.Column{{Name: "i", Type: storage.BigInt}, {Name: "s", Type: storage.Text}},
			[]any{int64(1), "first row"}, []any{int64(2), "second row"}, []any{int64(3), "third row"}),
		table("tests", []storage.Column{
			{Name: "pk", Type: storage.BigInt}, {Name: "str", Type: storage.Text},
			{Name: "pattern", Type: storage.Text}, {Name: "flags", Type: storage.Text},
		}, []any{int64(1), "testing", "TESTING", "ci"}),
	} {
		if err := db.AddTable(tb); err != nil {
			t.Fatal(err)
		}
	}
	p, err := storage.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// regexDifferences are the queries of queries.RegexTests that fail under
// RE2 where ICU gives a result: backreferences and lookaround, which need
// backtracking. (Queries where go-mysql-server expects an error all fail
// under RE2 too.)
const (
	backreference = "backreference"
	lookahead     = "lookahead"
	lookbehind    = "lookbehind"
)

var regexDifferences = map[string]string{
	`SELECT REGEXP_LIKE("AA", "(?i)((((((((((a))))))))))\\10");`:      backreference,
	`SELECT REGEXP_LIKE("ABCABC", "(?i)([a-c]*)\\1");`:                backreference,
	`SELECT REGEXP_LIKE("ABCABC", "(?i)(abc)\\1");`:                   backreference,
	`SELECT REGEXP_LIKE("a'bc?'de'f", "(?<!\\?)'(.*?)(?<!\\?)'");`:    lookbehind,
	`SELECT REGEXP_LIKE("a:bc-:de:f", "(?<!-):(.*?)(?<!-):");`:        lookbehind,
	`SELECT REGEXP_LIKE("a:bc\\:de:f", "(?<!\\\\):(.*?)(?<!\\\\):");`: lookbehind,
	`SELECT REGEXP_LIKE("aa", "((((((((((a))))))))))\\10");`:          backreference,
	`SELECT REGEXP_LIKE("aa", "(a)\\1");`:                             backreference,
	`SELECT REGEXP_LIKE("aa", "(a+)+\\1");`:                           backreference,
	`SELECT REGEXP_LIKE("aa", "(a+)\\1");`:                            backreference,
	`SELECT REGEXP_LIKE("aaa", "(a+)a\\1$");`:                         backreference,
	`SELECT REGEXP_LIKE("aaa", "(aa|a)a\\1$");`:                       backreference,
	`SELECT REGEXP_LIKE("aaa", "(a|aa)a\\1$");`:                       backreference,
	`SELECT REGEXP_LIKE("aaaa", "^(a+).\\1$");`:                       backreference,
	`SELECT REGEXP_LIKE("aaaaa", "(a+).\\1$");`:                       backreference,
	`SELECT REGEXP_LIKE("aba", "(a).+\\1");`:                          backreference,
	`SELECT REGEXP_LIKE("aba", "(a)ba*\\1");`:                         backreference,
	`SELECT REGEXP_LIKE("abad", "a(?!b).");`:                          lookahead,
	`SELECT REGEXP_LIKE("abad", "a(?=c|d).");`:                        lookahead,
	`SELECT REGEXP_LIKE("abad", "a(?=d).");`:                          lookahead,
	`SELECT REGEXP_LIKE("abc", "^([ab]*?)(?!(b))c");`:                 lookahead,
	`SELECT REGEXP_LIKE("abc", "^([ab]*?)(?<!(a))c");`:                lookbehind,
	`SELECT REGEXP_LIKE("abc", "^([ab]*?)(?=(b)?)c");`:                lookahead,
	`SELECT REGEXP_LIKE("abcabc", "([a-c]*)\\1");`:                    backreference,
	`SELECT REGEXP_LIKE("abcabc", "([a-c]+)\\1");`:                    backreference,
	`SELECT REGEXP_LIKE("abcabc", "([abc]*)\\1");`:                    backreference,
	`SELECT REGEXP_LIKE("abcabc", "(abc)\\1");`:                       backreference,
	`SELECT REGEXP_LIKE("abcdefdof", "(?<!abc)(d.f)");`:               lookbehind,
}

// TestRegexQueries runs queries.RegexTests (go-mysql-server's REGEXP_LIKE,
// REGEXP_REPLACE and REGEXP queries, most of them from the test suite of
// Python's re module, with ICU's answers). Every query must give
// go-mysql-server's expected rows or error, except the backreference
// queries, which must fail with an error that explains RE2.
func TestRegexQueries(t *testing.T) {
	h := regexHarness
	e, err := h.NewEngine(t)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	switch n := len(queries.RegexTests); {
	case n == 0:
		t.Skip("go-mysql-server leaves queries.RegexTests empty under the race detector (regex_queries_race.go)")
	case n < 500:
		t.Fatalf("queries.RegexTests has only %d queries", n)
	}
	differ := map[string]bool{}
	for _, tt := range queries.RegexTests {
		t.Run(tt.Query, func(t *testing.T) {
			ctx := h.NewContext()
			if reason, ok := regexDifferences[tt.Query]; ok {
				differ[tt.Query] = true
				_, err := queryRows(ctx, e, tt.Query)
				if err == nil || !strings.Contains(err.Error(), reason) || !strings.Contains(err.Error(), "RE2") {
					t.Errorf("%s: want an error that names %s and explains RE2, got %v", tt.Query, reason, err)
				}
				return
			}
			if tt.ExpectedErr != nil {
				if _, err := queryRows(ctx, e, tt.Query); err == nil {
					t.Errorf("%s: no error, want %s", tt.Query, tt.ExpectedErr.Message)
				}
				return
			}
			enginetest.TestQueryWithContext(t, ctx, e, h, tt.Query, tt.Expected, nil, nil, nil)
		})
	}
	if len(differ) != len(regexDifferences) {
		t.Errorf("%d of the %d listed differences are in queries.RegexTests", len(differ), len(regexDifferences))
	}
	t.Logf("%d queries, %d distinct ones give an RE2 error instead of ICU's result", len(queries.RegexTests), len(differ))
}

func queryRows(ctx *sql.Context, e enginetest.QueryEngine, q string) ([]sql.Row, error) {
	_, iter, _, err := e.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	return sql.RowIterToRows(ctx, iter)
}

// TestRegexThroughSQL checks what go-mysql-server's table does not: the
// backtracking patterns that ran for minutes under ICU, the errors for
// constructs RE2 lacks as a client sees them, and the operators.
func TestRegexThroughSQL(t *testing.T) {
	scripts := []queries.ScriptTest{{
		Name: "REGEXP on RE2",
		Assertions: []queries.ScriptTestAssertion{
			// ICU: tens of seconds, not interruptible by KILL QUERY.
			{Query: "SELECT REPEAT('a', 30) REGEXP '(a*)*b'", Expected: []sql.Row{{0}}},
			{Query: "SELECT REPEAT('a', 10000) REGEXP '(a|aa)+$'", Expected: []sql.Row{{1}}},
			{Query: "SELECT REGEXP_INSTR(CONCAT(REPEAT('x', 5000), 'y'), '(x+x+)+y')", Expected: []sql.Row{{int32(1)}}},
			{Query: "SELECT REGEXP_REPLACE(REPEAT('ab', 3), '(a|ab)(c|bcd)?', '<$1>')", Expected: []sql.Row{{"<a>b<a>b<a>b"}}},
			{Query: "SELECT s FROM mytable WHERE s RLIKE '^(f|s)' ORDER BY i", Expected: []sql.Row{{"first row"}, {"second row"}}},
			{Query: "SELECT s FROM mytable WHERE s NOT REGEXP 'ir' ORDER BY i", Expected: []sql.Row{{"second row"}}},
			{Query: "SELECT REGEXP_SUBSTR('😀b😀b', 'b', 3)", Expected: []sql.Row{{"b"}}},
			{Query: "SELECT REGEXP_INSTR('😀b😀b', 'b', 1, 2)", Expected: []sql.Row{{int32(4)}}},
			{Query: "SELECT 'ABC' REGEXP 'abc', 'ABC' REGEXP 'abc' COLLATE utf8mb4_0900_ai_ci, REGEXP_LIKE('ABC', 'abc', 'i')", Expected: []sql.Row{{0, 1, 1}}},
			{Query: "SELECT REGEXP_LIKE('é', '^[[:alpha:]]$'), REGEXP_LIKE('٣', '^\\\\d$'), REGEXP_LIKE('a\\rb', 'a.b')", Expected: []sql.Row{{1, 1, 0}}},
			{Query: "SELECT REGEXP_LIKE(NULL, 'a'), REGEXP_LIKE('a', NULL), REGEXP_REPLACE('a', 'a', NULL), REGEXP_SUBSTR('abc', 'x')", Expected: []sql.Row{{nil, nil, nil, nil}}},
			{
				Query:          "SELECT 'aa' REGEXP '(a)\\\\1'",
				ExpectedErrStr: "the given regular expression is invalid: the backreference \\1 is not supported at character 4; dpsql evaluates regular expressions with RE2 syntax, which runs in linear time and has no backreferences, lookaround, atomic groups or possessive quantifiers",
			},
			{
				Query:          "SELECT REGEXP_LIKE('ab', 'a(?=b)')",
				ExpectedErrStr: "the given regular expression is invalid: lookahead (?=…) is not supported at character 2; dpsql evaluates regular expressions with RE2 syntax, which runs in linear time and has no backreferences, lookaround, atomic groups or possessive quantifiers",
			},
			{
				Query:          "SELECT REGEXP_REPLACE('abc', 'b', '$2')",
				ExpectedErrStr: "the replacement string of the regular expression is invalid: the pattern has no group 2 (it has 0)",
			},
			{Query: "SELECT REGEXP_LIKE('a', '[[:<:]]a')", ExpectedErrStr: "the given regular expression is invalid: [[:<:]] (a MySQL 5.7 word boundary) is not supported, as in MySQL 8: use \\b at character 2"},
		},
	}}
	for _, s := range scripts {
		enginetest.TestScript(t, regexHarness, s)
	}
}
