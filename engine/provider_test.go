package engine_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testengine"
)

// series is a minimal table function, SERIES(n) → rows 1..n, standing in
// for DP_NGRAMS and DP_BUDGET: it shows that table functions registered on
// the storage provider are found whatever the case of the call.
type series struct {
	db sql.Database
	n  sql.Expression
}

var (
	_ sql.TableFunction = (*series)(nil)
	_ sql.ExecSourceRel = (*series)(nil)
)

func (s *series) NewInstance(_ *sql.Context, db sql.Database, args []sql.Expression) (sql.Node, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("SERIES takes one argument")
	}
	return &series{db: db, n: args[0]}, nil
}
func (s *series) Name() string           { return "series" }
func (s *series) String() string         { return "SERIES(" + s.n.String() + ")" }
func (s *series) Resolved() bool         { return s.n == nil || s.n.Resolved() }
func (s *series) IsReadOnly() bool       { return true }
func (s *series) Children() []sql.Node   { return nil }
func (s *series) Database() sql.Database { return s.db }
func (s *series) Expressions() []sql.Expression {
	if s.n == nil {
		return nil
	}
	return []sql.Expression{s.n}
}
func (s *series) Schema() sql.Schema {
	return sql.Schema{{Name: "n", Type: types.Int64, Source: "series"}}
}
func (s *series) WithChildren(...sql.Node) (sql.Node, error) { return s, nil }
func (s *series) WithDatabase(db sql.Database) (sql.Node, error) {
	ns := *s
	ns.db = db
	return &ns, nil
}
func (s *series) WithExpressions(e ...sql.Expression) (sql.Node, error) {
	ns := *s
	ns.n = e[0]
	return &ns, nil
}
func (s *series) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	v, err := s.n.Eval(ctx, nil)
	if err != nil {
		return nil, err
	}
	n, _, err := types.Int64.Convert(ctx, v)
	if err != nil {
		return nil, err
	}
	return &seriesIter{n: n.(int64)}, nil
}

type seriesIter struct{ i, n int64 }

func (it *seriesIter) Next(*sql.Context) (sql.Row, error) {
	if it.i >= it.n {
		return nil, io.EOF
	}
	it.i++
	return sql.Row{it.i}, nil
}
func (it *seriesIter) Close(*sql.Context) error { return nil }

func TestProviderFunctions(t *testing.T) {
	p := testengine.Provider(t)
	if err := p.RegisterTableFunction(&series{}); err != nil {
		t.Fatal(err)
	}
	twice := sql.Function1{Name: "twice", Fn: func(e sql.Expression) sql.Expression {
		return expression.NewArithmetic(e, expression.NewLiteral(int64(2), types.Int64), "*")
	}}
	if err := p.RegisterFunction(twice); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Provider: p, Functions: testengine.Seeded()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for q, want := range map[string]string{
		"SELECT SUM(n) FROM SERIES(4)":     "10",
		"select sum(n) from series(3)":     "6",
		"SELECT TWICE(21)":                 "42",
		"SELECT COUNT(*) FROM Series(2) s": "2",
		"SELECT JSON_LENGTH(DP_SET_UNION(item, user_id)) FROM visits WHERE user_id IN (SELECT n FROM SERIES(400))": "2",
	} {
		ctx := engine.NewContext(context.Background(), "", "mydb")
		_, it, _, err := e.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		rows, err := sql.RowIterToRows(ctx, it)
		if err != nil || len(rows) != 1 || fmt.Sprint(rows[0][0]) != want {
			t.Errorf("%s: %v %v, want %s", q, rows, err, want)
		}
	}
	// A provider that defines DP_SET_UNION itself is refused.
	p2 := testengine.Provider(t)
	p2.RegisterFunction(functions.SetUnionFunction(functions.Config{}))
	if _, err := engine.New(engine.Config{Provider: p2}); err == nil {
		t.Fatal("a provider's own DP_SET_UNION was accepted")
	}
}
