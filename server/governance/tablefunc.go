package governance

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/functions"
)

// rowsFunction is a table function without arguments whose rows are a
// function of the session: DP_BUDGET() and DP_AUDIT(). It reads no table.
type rowsFunction struct {
	name   string
	advice string // what to do instead of passing arguments
	schema sql.Schema
	rows   func(*sql.Context) ([]sql.Row, error)
	db     sql.Database
}

var (
	_ sql.TableFunction = (*rowsFunction)(nil)
	_ sql.ExecSourceRel = (*rowsFunction)(nil)
)

func (n *rowsFunction) NewInstance(_ *sql.Context, db sql.Database, args []sql.Expression) (sql.Node, error) {
	if len(args) != 0 {
		return nil, mysql.NewSQLError(functions.ErWrongParamCount, mysql.SSClientError,
			"Incorrect parameter count in the call to %s: it takes no arguments; %s", n.name, n.advice)
	}
	nn := *n
	nn.db = db
	return &nn, nil
}

func (n *rowsFunction) Name() string                  { return n.name }
func (n *rowsFunction) String() string                { return n.name + "()" }
func (n *rowsFunction) Schema() sql.Schema            { return n.schema }
func (n *rowsFunction) Children() []sql.Node          { return nil }
func (n *rowsFunction) Resolved() bool                { return true }
func (n *rowsFunction) IsReadOnly() bool              { return true }
func (n *rowsFunction) Expressions() []sql.Expression { return nil }
func (n *rowsFunction) Database() sql.Database        { return n.db }

func (n *rowsFunction) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

func (n *rowsFunction) WithExpressions(exprs ...sql.Expression) (sql.Node, error) {
	if len(exprs) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(exprs), 0)
	}
	return n, nil
}

func (n *rowsFunction) WithDatabase(db sql.Database) (sql.Node, error) {
	nn := *n
	nn.db = db
	return &nn, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *rowsFunction) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	rows, err := n.rows(ctx)
	if err != nil {
		return nil, err
	}
	return sql.RowsToRowIter(rows...), nil
}
