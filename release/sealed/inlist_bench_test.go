package sealed

import (
	"fmt"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
)

// inList returns `s IN ('w0', …, 'w<n-1>')`.
func inList(n int) sql.Expression {
	tuple := make(expression.Tuple, n)
	for i := range tuple {
		tuple[i] = str(fmt.Sprintf("w%d", i))
	}
	return expression.NewInTuple(col("s"), tuple)
}

// BenchmarkSealedInList measures one row of `s IN (<n literals>)` in the
// sealed evaluation (a miss: every literal was compared before lists were
// hashed), and CONVERT(s, CHAR) of a string of 8n bytes, to relate the
// cost of a comparison to the work model's bytes read (elemWork).
func BenchmarkSealedInList(b *testing.B) {
	ctx := sql.NewContext(b.Context(), sql.WithSession(sql.NewBaseSession()))
	for _, n := range []int{10, 1000, 9999} {
		p, err := Compile(ctx, []sql.Expression{inList(n)}, len(testSchema), Limits{})
		if err != nil {
			b.Fatal(err)
		}
		ev := p.NewEvaluator(ctx)
		row := sql.Row{"not in the list", int64(1), 1.0, nil, nil}
		b.Run(fmt.Sprintf("in/%d", n), func(b *testing.B) {
			for b.Loop() {
				ev.Row(row)
			}
		})
		lp, err := Compile(ctx, []sql.Expression{expression.NewConvert(col("s"), "char")}, len(testSchema), Limits{})
		if err != nil {
			b.Fatal(err)
		}
		lev := lp.NewEvaluator(ctx)
		long := sql.Row{string(make([]byte, n*8)), int64(1), 1.0, nil, nil}
		b.Run(fmt.Sprintf("convert/%dB", n*8), func(b *testing.B) {
			for b.Loop() {
				lev.Row(long)
			}
		})
	}
}
