package engine_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testengine"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// FuzzSetUnionArguments drives DP_SET_UNION's argument handling with
// arbitrary values and option strings (as bind variables, the way prepared
// statements pass them): the engine must answer with a sorted JSON array of
// strings drawn from the inputs or with an error, and never panic.
func FuzzSetUnionArguments(f *testing.F) {
	f.Add("epsilon=1", "word", "user1", "word", "user2")
	f.Add("epsilon=50, delta=0.5, max_items=1, mechanism=single_item", "x", "", "\x00", "u")
	f.Add("mechanism=dp_sips, rounds=7", "\xff\xfe", "NULL", "é", "é")
	f.Add("max_items=0", "a", "b", "c", "d")
	f.Add("epsilon=1e308, alpha=0, mechanism=greedy_frequency", "'", `"`, "\\", ",")
	e, err := engine.New(engine.Config{Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(1) }}})
	if err != nil {
		f.Fatal(err)
	}
	const q = "SELECT DP_SET_UNION(i, u, :opts) FROM (SELECT :i1 AS i, :u1 AS u UNION ALL SELECT :i2, :u2 UNION ALL SELECT :i1, :u2) t"
	f.Fuzz(func(t *testing.T, opts, i1, u1, i2, u2 string) {
		ctx := engine.NewContext(context.Background(), "", "")
		b := map[string]sqlparser.Expr{}
		for k, v := range map[string]string{"opts": opts, "i1": i1, "u1": u1, "i2": i2, "u2": u2} {
			b[k] = sqlparser.NewStrVal([]byte(v))
		}
		_, it, _, err := e.QueryWithBindings(ctx, q, nil, b, nil)
		var rows []sql.Row
		if err == nil {
			rows, err = sql.RowIterToRows(ctx, it)
		}
		if err != nil {
			var se *mysql.SQLError
			if err.Error() == "" || (!errors.As(err, &se) && !sql.ErrInvalidArgumentDetails.Is(err)) {
				t.Logf("non-MySQL error (reported as 1105): %v", err)
			}
			return
		}
		if len(rows) != 1 || len(rows[0]) != 1 {
			t.Fatalf("got %v", rows)
		}
		doc, ok := rows[0][0].(types.JSONDocument)
		if !ok {
			t.Fatalf("result %T", rows[0][0])
		}
		arr, ok := doc.Val.([]any)
		if !ok {
			t.Fatalf("result %v is not an array", doc.Val)
		}
		var got []string
		for _, v := range arr {
			s, ok := v.(string)
			if !ok || (s != i1 && s != i2) {
				t.Fatalf("released %v, not an input item", v)
			}
			got = append(got, s)
		}
		if !slices.IsSorted(got) {
			t.Fatalf("not sorted: %q", got)
		}
	})
}

// FuzzNgramsArguments drives DP_NGRAMS' argument handling — the table
// name, the text and privacy-unit column names and the options, as bind
// variables (the way prepared statements pass them) — over the notes table
// of the n-gram tests: the engine must answer with rows (ngram, n) whose n
// is between 1 and 10, whose n-gram has n tokens and whose tokens occur in
// the table, or with an error, and never panic.
func FuzzNgramsArguments(f *testing.F) {
	f.Add("notes", "body", "user_id", "epsilon=4")
	f.Add("mydb.notes", "uname", "uname", "max_n=1, eta=0.5, mechanism=count_gaussian")
	f.Add("`mydb`.`notes`", "BODY", "User_Id", "max_n=10, budget_split=geometric:2, update=policy_gaussian_l2")
	f.Add("notes", "score", "user_id", "")
	f.Add("notes", "body", "day", "epsilon=1e-300, delta=0.999999")
	f.Add("glossary", "meaning", "term", "max_items=1, alpha=0")
	f.Add("nope.notes", "body\x00", "user_id", "epsilon=NaN")
	f.Add("notes", "body", "user_id", "budget_split=geometric:0")
	f.Add("'notes'", "`body`", "", "eta=1")
	e, err := engine.New(engine.Config{
		Provider:  testengine.NgramsProvider(f),
		Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(1) }},
	})
	if err != nil {
		f.Fatal(err)
	}
	tokens := map[string]bool{}
	for _, s := range []string{"The quick brown fox!", "jumps over the lazy dog", "ghost words here", "blank words",
		"brown fox", "an animal", "lazy dog", "another animal", "purple cow", "not in the data"} {
		for _, tok := range tokenize.Tokens(s) {
			tokens[tok] = true
		}
	}
	isToken := func(tok string) bool {
		if tokens[tok] {
			return true
		}
		// user names and the pw<u> pin<7u> rows: letters then digits
		digits := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(tok, "pw"), "pin"), "0123456789")
		return digits == "" && tok != ""
	}
	const q = "SELECT ngram, n FROM DP_NGRAMS(:tbl, :txt, :unit, :opts)"
	f.Fuzz(func(t *testing.T, tbl, txt, unit, opts string) {
		ctx := engine.NewContext(context.Background(), "root", "mydb")
		b := map[string]sqlparser.Expr{}
		for k, v := range map[string]string{"tbl": tbl, "txt": txt, "unit": unit, "opts": opts} {
			b[k] = sqlparser.NewStrVal([]byte(v))
		}
		_, it, _, err := e.QueryWithBindings(ctx, q, nil, b, nil)
		var rows []sql.Row
		if err == nil {
			rows, err = sql.RowIterToRows(ctx, it)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("empty error message")
			}
			return
		}
		for _, r := range rows {
			g, ok := r[0].(string)
			n, ok2 := r[1].(int32)
			if !ok || !ok2 {
				t.Fatalf("row %v of types %T, %T", r, r[0], r[1])
			}
			toks := strings.Split(g, " ")
			if n < 1 || n > 10 || len(toks) != int(n) {
				t.Fatalf("row %q, %d", g, n)
			}
			for _, tok := range toks {
				if !isToken(tok) {
					t.Fatalf("released %q: %q is no token of the table", g, tok)
				}
			}
		}
	})
}
