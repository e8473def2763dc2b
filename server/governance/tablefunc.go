package governance

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/functions"
)

// rowsFunction is a table function without arguments whose rows are a
// function of the session: DP_BUDGET() and DP_AUDIT(). It reads no table.
// advice says what to do instead of passing arguments.
func rowsFunction(name string, schema sql.Schema, rows func(*sql.Context) ([]sql.Row, error), advice string) sql.TableFunction {
	return &functions.TableFunc{
		FuncName: name,
		Shown:    name + "()",
		Columns:  schema,
		Check: func(args []sql.Expression) error {
			if len(args) != 0 {
				return mysql.NewSQLError(functions.ErWrongParamCount, mysql.SSClientError,
					"Incorrect parameter count in the call to %s: it takes no arguments; %s", name, advice)
			}
			return nil
		},
		Rows: func(ctx *sql.Context, _ sql.Expression) (sql.RowIter, error) {
			rs, err := rows(ctx)
			if err != nil {
				return nil, err
			}
			return sql.RowsToRowIter(rs...), nil
		},
	}
}
