package gmsfix

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// TestLikeMatchesGMS compares Like with go-mysql-server's LIKE on random
// strings and patterns (short enough for its backtracking matcher), under a
// case-insensitive and a binary collation, with and without an escape.
func TestLikeMatchesGMS(t *testing.T) {
	ctx := sql.NewContext(context.Background())
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "A", "b", "é", "É", "%", "_", "\\", "x"}
	gen := func(n int) string {
		var b strings.Builder
		for range rng.IntN(n + 1) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for _, coll := range []sql.CollationID{sql.Collation_utf8mb4_0900_ai_ci, sql.Collation_utf8mb4_bin} {
		typ := types.MustCreateString(types.LongText.Type(), types.LongText.MaxCharacterLength(), coll)
		for i := range 20000 {
			s, p := gen(8), gen(6)
			var esc sql.Expression
			if i%3 == 0 {
				esc = expression.NewLiteral("x", types.LongText)
			}
			left, right := expression.NewLiteral(s, typ), expression.NewLiteral(p, typ)
			want, werr := expression.NewLike(left, right, esc).Eval(ctx, nil)
			got, gerr := NewLike(left, right, esc).Eval(ctx, nil)
			if (werr != nil) != (gerr != nil) || want != got {
				t.Fatalf("%q LIKE %q (escape %v, %s): got %v, %v; go-mysql-server %v, %v", s, p, esc, coll, got, gerr, want, werr)
			}
		}
	}
}

// TestLikeNULLAndEscape: NULL operands give NULL; an empty escape means no
// escape character (go-mysql-server panics); a two-character escape is an
// error.
func TestLikeNULLAndEscape(t *testing.T) {
	ctx := sql.NewContext(context.Background())
	str := func(s string) sql.Expression { return expression.NewLiteral(s, types.LongText) }
	null := expression.NewLiteral(nil, types.Null)
	for _, c := range []struct {
		l, r, e sql.Expression
		want    any
		err     bool
	}{
		{null, str("a"), nil, nil, false},
		{str("a"), null, nil, nil, false},
		{str(`a\b`), str(`a\b`), str(""), true, false},
		{str(`a\b`), str(`a\b`), nil, false, false},
		{str(`a%`), str(`a\%`), nil, true, false},
		{str("a"), str("a"), str("ab"), nil, true},
	} {
		got, err := NewLike(c.l, c.r, c.e).Eval(ctx, nil)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s LIKE %s ESCAPE %v = %v, %v; want %v (error %v)", c.l, c.r, c.e, got, err, c.want, c.err)
		}
	}
}

// TestLikeLinear: the pattern that makes go-mysql-server's matcher
// backtrack exponentially finishes (the test would time out otherwise).
func TestLikeLinear(t *testing.T) {
	ctx := sql.NewContext(context.Background())
	s := expression.NewLiteral(strings.Repeat("a", 200000), types.LongText)
	p := expression.NewLiteral(strings.Repeat("%a", 20)+"%b", types.LongText)
	got, err := NewLike(s, p, nil).Eval(ctx, nil)
	if err != nil || got != false {
		t.Fatalf("got %v, %v", got, err)
	}
	if c := LikeCost(strings.Repeat("%a", 20) + "%b"); c != 2 {
		t.Errorf("LikeCost = %d, want 2", c)
	}
	if c := LikeCost("abc%de"); c != 4 {
		t.Errorf("LikeCost = %d, want 4", c)
	}
}
