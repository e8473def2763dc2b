package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/enginetest/queries"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/internal/testengine"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// ngramsHarness runs script tests over testengine.NgramsProvider.
var ngramsHarness = harness{provider: func(t testing.TB) *storage.Provider { return testengine.NgramsProvider(t) }}

// allNotes is what DP_NGRAMS releases from notes at ε = 4 with η = 1e-9
// and α = 6: every n-gram of the two shared sentences (600 and 300 users),
// nothing of the single-user rows, no spurious n-gram (η makes one
// improbable). The unigram policy caps a shared token's weight at
// Γ = ρ + α·σ, so it is released with probability Φ(α): with α = 6 this
// holds for essentially every seed, not only the test's (at the default
// α = 3 a run misses one of the 20 about once in 70).
var allNotes = []sql.Row{
	{"brown", 1}, {"dog", 1}, {"fox", 1}, {"jumps", 1}, {"lazy", 1}, {"over", 1}, {"quick", 1}, {"the", 1},
	{"brown fox", 2}, {"jumps over", 2}, {"lazy dog", 2}, {"over the", 2}, {"quick brown", 2}, {"the lazy", 2}, {"the quick", 2},
	{"jumps over the", 3}, {"over the lazy", 3}, {"quick brown fox", 3}, {"the lazy dog", 3}, {"the quick brown", 3},
}

const ng4 = "'epsilon=4, eta=1e-9, alpha=6'"

func ngramRows(n int) []sql.Row {
	var out []sql.Row
	for _, r := range allNotes {
		if r[1] == n {
			out = append(out, sql.Row{r[0]})
		}
	}
	return out
}

// ngramsColumns is the result schema clients see.
var ngramsColumns = sql.Schema{
	{Name: "ngram", Type: types.MustCreateString(sqltypes.VarChar, 16383, sql.Collation_Default)},
	{Name: "n", Type: types.Int32},
}

func TestNgramsScripts(t *testing.T) {
	for _, s := range append(ngramsScripts(), ngramsSessionScripts()...) {
		enginetest.TestScript(t, ngramsHarness, s)
	}
}

// TestNgramsScriptsPrepared runs the scripts that need no session state in
// enginetest's prepared mode, which turns literals into bind variables of a
// server-side prepared statement and gives each query a new session. Its
// AST walk does not enter table-function arguments, so DP_NGRAMS's own
// arguments stay literals here: ? arguments are covered by the PREPARE …
// FROM script and by TestServerNgrams over go-sql-driver.
func TestNgramsScriptsPrepared(t *testing.T) {
	for _, s := range ngramsScripts() {
		enginetest.TestScriptPrepared(t, ngramsHarness, s)
	}
}

func ngramsScripts() []queries.ScriptTest {
	count := func(n int) []sql.Row { return []sql.Row{{n}} }
	return []queries.ScriptTest{
		{
			Name: "DP_NGRAMS as a table",
			Assertions: []queries.ScriptTestAssertion{
				{
					Query:           "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ")",
					Expected:        allNotes,
					ExpectedColumns: ngramsColumns,
				},
				{Query: "SELECT * FROM dp_ngrams('notes', 'body', 'user_id', " + ng4 + ")", Expected: allNotes},
				{Query: "SELECT * FROM Dp_Ngrams('notes', 'body', 'user_id', " + ng4 + ")", Expected: allNotes},
				{Query: "select ngram, n from DP_NGRAMS('mydb.notes', 'body', 'user_id', " + ng4 + ")", Expected: allNotes},
				{Query: "SELECT * FROM DP_NGRAMS('MYDB.Notes', 'BODY', 'User_Id', " + ng4 + ")", Expected: allNotes},
				{Query: "SELECT * FROM DP_NGRAMS('`mydb`.`notes`', '`body`', '`user_id`', " + ng4 + ")", Expected: allNotes},
				{Query: "SELECT * FROM DP_NGRAMS(' mydb . notes ', ' body ', ' user_id ', " + ng4 + ")", Expected: allNotes},
				// The privacy unit in its text form: TEXT '7' and BIGINT 7
				// are the same unit, so uname gives the same release.
				{Query: "SELECT * FROM DP_NGRAMS('notes', 'body', 'uname', " + ng4 + ")", Expected: allNotes},
				// Three distinct scores are three units: nothing is shared
				// by enough of them.
				{Query: "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'score', " + ng4 + ")", Expected: count(0)},
				{Query: "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'day', " + ng4 + ")", Expected: count(0)},
				{
					Query:    "SELECT ngram FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") WHERE n = 2 ORDER BY ngram LIMIT 10",
					Expected: ngramRows(2),
				},
				{
					Query:    "SELECT ngram FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") WHERE n = 3 ORDER BY ngram DESC LIMIT 2",
					Expected: []sql.Row{{"the quick brown"}, {"the lazy dog"}},
				},
				{
					Query:    "SELECT n, COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") GROUP BY n ORDER BY n",
					Expected: []sql.Row{{1, 8}, {2, 7}, {3, 5}},
				},
				{
					Query:    "SELECT g.ngram, gl.meaning FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") g JOIN glossary gl ON g.ngram = gl.term ORDER BY g.ngram",
					Expected: []sql.Row{{"brown fox", "an animal"}, {"lazy dog", "another animal"}},
				},
				{
					Query:    "SELECT gl.term, g.n FROM glossary gl LEFT JOIN DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") AS g ON g.ngram = gl.term ORDER BY gl.term",
					Expected: []sql.Row{{"brown fox", 2}, {"lazy dog", 2}, {"purple cow", nil}},
				},
				{
					Query:    "SELECT COUNT(*) FROM glossary gl, DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") g WHERE g.n = 1",
					Expected: count(3 * 8),
				},
				{
					Query:    "SELECT v.item, g.ngram FROM visits v JOIN DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") g ON v.item = g.ngram WHERE v.user_id < 2 ORDER BY 1",
					Expected: []sql.Row{},
				},
				{
					Query:    "SELECT term FROM glossary WHERE term IN (SELECT ngram FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ")) ORDER BY term",
					Expected: []sql.Row{{"brown fox"}, {"lazy dog"}},
				},
				{
					Query:    "WITH g AS (SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ")) SELECT COUNT(*) FROM g a JOIN g b ON a.ngram = b.ngram",
					Expected: count(len(allNotes)),
				},
				{
					Query:    "SELECT ngram FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") WHERE n = 3 UNION ALL SELECT ngram FROM DP_NGRAMS('notes', 'body', 'uname', " + ng4 + ") WHERE n = 3 ORDER BY 1 LIMIT 2",
					Expected: []sql.Row{{"jumps over the"}, {"jumps over the"}},
				},
				{
					Query:    "SELECT (SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ")) AS c",
					Expected: count(len(allNotes)),
				},
				{
					Query:    "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") WHERE ngram LIKE '%pw%' OR ngram LIKE '%pin%' OR ngram LIKE '%ghost%' OR ngram LIKE '%blank%'",
					Expected: count(0),
				},
				{Query: "SELECT * FROM DP_NGRAMS('no_rows', 'item', 'user_id')", Expected: []sql.Row{}},
				{Query: "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', " + ng4 + ") LIMIT 0", Expected: []sql.Row{}},
			},
		},
		{
			Name: "DP_NGRAMS bad input gets clear errors",
			Assertions: []queries.ScriptTestAssertion{
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body')",
					ExpectedErrStr: errs("Incorrect parameter count in the call to DP_NGRAMS: it takes 3 or 4 arguments, DP_NGRAMS('[database.]table', 'text_column', 'privacy_unit_column' [, 'options']), but 2 were given", 1582, "42000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'epsilon=1', 'x')",
					ExpectedErrStr: errs("Incorrect parameter count in the call to DP_NGRAMS: it takes 3 or 4 arguments, DP_NGRAMS('[database.]table', 'text_column', 'privacy_unit_column' [, 'options']), but 5 were given", 1582, "42000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('nodb.notes', 'body', 'user_id')",
					ExpectedErrStr: errs("Unknown database 'nodb' (DP_NGRAMS table argument 'nodb.notes')", 1049, "42000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('nothing', 'body', 'user_id')",
					ExpectedErrStr: errs("Table 'mydb.nothing' doesn't exist (DP_NGRAMS reads base tables, not views)", 1146, "42S02"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'text', 'user_id')",
					ExpectedErrStr: errs("Unknown column 'text' in table 'mydb.notes' (DP_NGRAMS text_column): the columns are user_id, uname, body, score, day", 1054, "42S22"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'uid')",
					ExpectedErrStr: errs("Unknown column 'uid' in table 'mydb.notes' (DP_NGRAMS privacy_unit_column): the columns are user_id, uname, body, score, day", 1054, "42S22"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'user_id', 'uname')",
					ExpectedErrStr: errs("DP_NGRAMS: the text_column 'user_id' of mydb.notes is BIGINT, not text: n-grams are extracted from CHAR, VARCHAR, TEXT, BLOB, JSON, ENUM or SET columns", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'score', 'user_id')",
					ExpectedErrStr: errs("DP_NGRAMS: the text_column 'score' of mydb.notes is DOUBLE, not text: n-grams are extracted from CHAR, VARCHAR, TEXT, BLOB, JSON, ENUM or SET columns", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'day', 'user_id')",
					ExpectedErrStr: errs("DP_NGRAMS: the text_column 'day' of mydb.notes is DATE, not text: n-grams are extracted from CHAR, VARCHAR, TEXT, BLOB, JSON, ENUM or SET columns", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('mydb.notes.body', 'body', 'user_id')",
					ExpectedErrStr: errs("DP_NGRAMS: the table argument 'mydb.notes.body' is not a table name: write 'table' or 'database.table' (backquotes allowed, as in '`my db`.`my table`')", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('mydb.', 'body', 'user_id')",
					ExpectedErrStr: errs("DP_NGRAMS: the table argument 'mydb.' is not a table name: write 'table' or 'database.table' (backquotes allowed, as in '`my db`.`my table`')", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS(NULL, 'body', 'user_id')",
					ExpectedErrStr: errs("DP_NGRAMS: the table argument is NULL: pass a string such as 'db.table'", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', NULL, 'user_id')",
					ExpectedErrStr: errs("DP_NGRAMS: the text_column argument is NULL: pass a string such as 'body'", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', CONCAT('epsilon=', RAND()))",
					ExpectedErrStr: errs("DP_NGRAMS: the options argument must be a constant string, not an expression that depends on a row (concat('epsilon=',rand()))", 1210, "HY000"),
				},
				{
					Query:          "SELECT (SELECT COUNT(*) FROM DP_NGRAMS(g.term, 'body', 'user_id')) FROM glossary g",
					ExpectedErrStr: errs("DP_NGRAMS: the table argument must be a constant string, not an expression that depends on a row (g.term)", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'max_n=0')",
					ExpectedErrStr: errs("DP_NGRAMS: max_n must be an integer from 1 to 10, got 0", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'max_n=11')",
					ExpectedErrStr: errs("DP_NGRAMS: max_n must be an integer from 1 to 10, got 11", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'max_n=2.5')",
					ExpectedErrStr: errs(`DP_NGRAMS: option max_n: "2.5" is not an integer`, 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'max_n=3, colour=red')",
					ExpectedErrStr: errs(`DP_NGRAMS: unknown option "colour": the options are max_n, epsilon, delta, max_items, mechanism, update, alpha, eta, budget_split`, 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'rounds=3')",
					ExpectedErrStr: errs(`DP_NGRAMS: unknown option "rounds": the options are max_n, epsilon, delta, max_items, mechanism, update, alpha, eta, budget_split`, 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'epsilon=1, EPSILON=2')",
					ExpectedErrStr: errs("DP_NGRAMS: option epsilon is given twice", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'epsilon=1 delta=1e-5')",
					ExpectedErrStr: errs(`DP_NGRAMS: option epsilon has the value "1 delta=1e-5", which contains '=': separate options with commas`, 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'epsilon=0')",
					ExpectedErrStr: errs("DP_NGRAMS: epsilon must be a finite number greater than 0, got 0", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'epsilon=inf')",
					ExpectedErrStr: errs(`DP_NGRAMS: option epsilon: "inf" is not a finite number`, 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'delta=1')",
					ExpectedErrStr: errs("DP_NGRAMS: delta must be greater than 0 and less than 1, got 1", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'max_items=-1')",
					ExpectedErrStr: errs("DP_NGRAMS: max_items must be an integer from 1 to 1000000 (0 for the default, 100), got -1", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'mechanism=magic')",
					ExpectedErrStr: errs(`DP_NGRAMS: mechanism: unknown name "magic": use one of count_gaussian, weighted_gaussian, policy_gaussian_l2, dp_sips`, 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'mechanism=count_laplace')",
					ExpectedErrStr: errs("DP_NGRAMS: mechanism count_laplace cannot be used for n-grams (n-gram extraction composes one Gaussian mechanism per level): use one of count_gaussian, weighted_gaussian, policy_gaussian_l2, dp_sips", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'mechanism=policy_gaussian_l1')",
					ExpectedErrStr: errs("DP_NGRAMS: mechanism: "+setunion.PolicyGaussianL1.Disabled().Error(), 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'update=count_gaussian')",
					ExpectedErrStr: errs("DP_NGRAMS: update count_gaussian cannot be used for n-grams (levels k ≥ 2 need a Gaussian rule with ℓ2 sensitivity 1): use one of weighted_gaussian, policy_gaussian_l2", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'alpha=-3')",
					ExpectedErrStr: errs("DP_NGRAMS: alpha must be a finite number ≥ 0, got -3", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'eta=1')",
					ExpectedErrStr: errs("DP_NGRAMS: eta must be greater than 0 and less than 1, got 1", 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'budget_split=zigzag')",
					ExpectedErrStr: errs(`DP_NGRAMS: option budget_split: unknown budget_split "zigzag": use uniform or geometric:r (r > 0; r > 1 gives longer n-grams more budget)`, 1210, "HY000"),
				},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'budget_split=geometric:-1')",
					ExpectedErrStr: errs("DP_NGRAMS: option budget_split: budget_split geometric:r needs a finite ratio r > 0, got -1", 1210, "HY000"),
				},
			},
		},
	}
}

// ngramsSessionScripts need one session throughout (session and user
// variables).
func ngramsSessionScripts() []queries.ScriptTest {
	count := func(n int) []sql.Row { return []sql.Row{{n}} }
	return []queries.ScriptTest{
		{
			Name: "DP_NGRAMS options",
			Assertions: []queries.ScriptTestAssertion{
				{
					Query:    "SELECT ngram FROM DP_NGRAMS('notes', 'body', 'user_id', 'max_n=1, epsilon=4, eta=1e-9, alpha=6')",
					Expected: ngramRows(1),
				},
				{
					Query:    "SELECT ngram, n FROM DP_NGRAMS('notes', 'body', 'user_id', 'MAX_N = 10, Epsilon = 40, eta = 1e-9, Alpha = 6') WHERE n >= 4",
					Expected: []sql.Row{{"jumps over the lazy", 4}, {"over the lazy dog", 4}, {"the quick brown fox", 4}, {"jumps over the lazy dog", 5}},
				},
				{
					Query:    "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', 'epsilon=8, delta=1e-8, max_items=20, mechanism=weighted_gaussian, update=policy_gaussian_l2, alpha=6, eta=1e-9, budget_split=geometric:2')",
					Expected: count(len(allNotes)),
				},
				{
					Query:    "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', 'epsilon=4, eta=1e-9, mechanism=count_gaussian, alpha=default, budget_split=uniform')",
					Expected: count(len(allNotes)),
				},
				{
					Query:    "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', CONCAT('epsilon=', 2 * 2, ', eta=1e-9, alpha=', 6))",
					Expected: count(len(allNotes)),
				},
				{
					Query:    "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', NULL) WHERE ngram IN ('the quick brown', 'quick brown fox')",
					Expected: count(2),
				},
				{
					Query:    "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id') WHERE ngram IN ('the quick brown', 'quick brown fox')",
					Expected: count(2),
				},
				// Defaults from the session variables.
				{Query: "SET dp_epsilon = 4, dp_delta = 1e-7, dp_max_items = 50, dp_alpha = 6", Expected: []sql.Row{{}}},
				{Query: "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', 'eta=1e-9')", Expected: count(len(allNotes))},
				{Query: "SET dp_mechanism = 'weighted_gaussian'", Expected: []sql.Row{{}}},
				{Query: "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', 'eta=1e-9')", Expected: count(len(allNotes))},
				{Query: "SET dp_mechanism = 'count_laplace'", Expected: []sql.Row{{}}},
				{
					Query:          "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id')",
					ExpectedErrStr: errs("DP_NGRAMS: the session variable dp_mechanism is count_laplace, which n-gram extraction cannot use (mechanism count_laplace cannot be used for n-grams (n-gram extraction composes one Gaussian mechanism per level): use one of count_gaussian, weighted_gaussian, policy_gaussian_l2, dp_sips); pass a mechanism in the options, e.g. 'mechanism=dp_sips', or SET dp_mechanism = 'dp_sips'", 1210, "HY000"),
				},
				{
					Query:    "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', 'mechanism=policy_gaussian_l2, eta=1e-9')",
					Expected: count(len(allNotes)),
				},
				{Query: "SET dp_epsilon = 0.001", Expected: []sql.Row{{}}},
				{Query: "SELECT COUNT(*) FROM DP_NGRAMS('notes', 'body', 'user_id', 'mechanism=policy_gaussian_l2')", Expected: count(0)},
			},
		},
		{
			Name: "DP_NGRAMS in prepared statements",
			SetUpScript: []string{
				"PREPARE p FROM 'SELECT ngram FROM DP_NGRAMS(?, ?, ?, ?) WHERE n = ? ORDER BY ngram'",
				"SET @t = 'mydb.notes', @c = 'body', @u = 'user_id', @o = 'epsilon=4, eta=1e-9, alpha=6', @n = 3",
			},
			Assertions: []queries.ScriptTestAssertion{
				{Query: "EXECUTE p USING @t, @c, @u, @o, @n", Expected: ngramRows(3)},
				{Query: "SET @n = 2, @u = 'uname'", Expected: []sql.Row{{}}},
				{Query: "EXECUTE p USING @t, @c, @u, @o, @n", Expected: ngramRows(2)},
				{Query: "SET @t = 'mydb.nothing'", Expected: []sql.Row{{}}},
				{
					Query:          "EXECUTE p USING @t, @c, @u, @o, @n",
					ExpectedErrStr: errs("Table 'mydb.nothing' doesn't exist (DP_NGRAMS reads base tables, not views)", 1146, "42S02"),
				},
				{Query: "SET @t = 'notes', @o = 'max_n=0'", Expected: []sql.Row{{}}},
				{
					Query:          "EXECUTE p USING @t, @c, @u, @o, @n",
					ExpectedErrStr: errs("DP_NGRAMS: max_n must be an integer from 1 to 10, got 0", 1210, "HY000"),
				},
			},
		},
	}
}

// TestNgramsNoDatabase: go-mysql-server v0.20.0 resolves the current
// database before it builds any table function, so without one even a
// qualified table is refused, with its own error.
func TestNgramsNoDatabase(t *testing.T) {
	e, err := engine.New(engine.Config{Provider: testengine.NgramsProvider(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, q := range []string{
		"SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id')",
		"SELECT * FROM DP_NGRAMS('mydb.notes', 'body', 'user_id')",
	} {
		ctx := engine.NewContext(context.Background(), "", "")
		_, it, _, err := e.Query(ctx, q)
		if err == nil {
			_, err = sql.RowIterToRows(ctx, it)
		}
		if err == nil || !strings.Contains(err.Error(), "no database selected") {
			t.Errorf("%s without a current database: %v", q, err)
		}
	}
	// With one, another database may be named.
	ctx := engine.NewContext(context.Background(), "", "information_schema")
	_, it, _, err := e.Query(ctx, "SELECT COUNT(*) FROM DP_NGRAMS('mydb.notes', 'body', 'user_id', "+ng4+")")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := sql.RowIterToRows(ctx, it)
	if err != nil || len(rows) != 1 || fmt.Sprint(rows[0][0]) != fmt.Sprint(len(allNotes)) {
		t.Fatalf("from information_schema: %v %v", rows, err)
	}
}
