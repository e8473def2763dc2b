package functions

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
)

// TableFunc is a table function that reads no table: no argument or one
// constant argument in, rows that are a function of the session and the
// argument out. It is the one go-mysql-server plumbing (instances, the
// expression and database setters) of DP_EXPLAIN('query'), DP_DATASETS(),
// DP_RELOAD('db.table'), DP_BUDGET() and DP_AUDIT(); each gives only its
// name, columns, argument check and rows. DP_NGRAMS, which reads a table,
// is a node of its own.
type TableFunc struct {
	// FuncName is the SQL name, lower case (Name).
	FuncName string
	// About is what the function does (Description).
	About string
	// Shown is how a call is shown in plans (String).
	Shown string
	// Columns is the schema of the rows.
	Columns sql.Schema
	// Check refuses a call's arguments when the call is planned (their
	// number, whether they are constant) with the error the client gets.
	// It must refuse more than one argument.
	Check func(args []sql.Expression) error
	// Rows answers a call; arg is its argument, nil without one.
	Rows func(ctx *sql.Context, arg sql.Expression) (sql.RowIter, error)

	db  sql.Database
	arg sql.Expression
}

var (
	_ sql.TableFunction = (*TableFunc)(nil)
	_ sql.ExecSourceRel = (*TableFunc)(nil)
)

// NewInstance implements sql.TableFunction: Check, then a copy of f with
// the call's database and argument.
func (f *TableFunc) NewInstance(_ *sql.Context, db sql.Database, args []sql.Expression) (sql.Node, error) {
	if err := f.Check(args); err != nil {
		return nil, err
	}
	if len(args) > 1 {
		return nil, fmt.Errorf("%s: Check let %d arguments through; it takes one at the most", f.FuncName, len(args))
	}
	ff := *f
	ff.db = db
	if len(args) == 1 {
		ff.arg = args[0]
	}
	return &ff, nil
}

func (f *TableFunc) Name() string           { return f.FuncName }
func (f *TableFunc) Description() string    { return f.About }
func (f *TableFunc) String() string         { return f.Shown }
func (f *TableFunc) Schema() sql.Schema     { return f.Columns }
func (f *TableFunc) Children() []sql.Node   { return nil }
func (f *TableFunc) Resolved() bool         { return f.arg == nil || f.arg.Resolved() }
func (f *TableFunc) IsReadOnly() bool       { return true }
func (f *TableFunc) Database() sql.Database { return f.db }

func (f *TableFunc) Expressions() []sql.Expression {
	if f.arg == nil {
		return nil
	}
	return []sql.Expression{f.arg}
}

func (f *TableFunc) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), 0)
	}
	return f, nil
}

func (f *TableFunc) WithExpressions(exprs ...sql.Expression) (sql.Node, error) {
	if len(exprs) != len(f.Expressions()) {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(exprs), len(f.Expressions()))
	}
	ff := *f
	if len(exprs) == 1 {
		ff.arg = exprs[0]
	}
	return &ff, nil
}

func (f *TableFunc) WithDatabase(db sql.Database) (sql.Node, error) {
	ff := *f
	ff.db = db
	return &ff, nil
}

// RowIter implements sql.ExecSourceRel.
func (f *TableFunc) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	return f.Rows(ctx, f.arg)
}
