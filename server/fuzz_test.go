package server_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/sqlext/securerand"
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
	e, err := server.NewEngine(server.Config{Functions: functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(1) }}})
	if err != nil {
		f.Fatal(err)
	}
	const q = "SELECT DP_SET_UNION(i, u, :opts) FROM (SELECT :i1 AS i, :u1 AS u UNION ALL SELECT :i2, :u2 UNION ALL SELECT :i1, :u2) t"
	f.Fuzz(func(t *testing.T, opts, i1, u1, i2, u2 string) {
		ctx := server.NewContext(context.Background(), "", "")
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
