package server

import (
	"context"
	"errors"

	gms "github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/planner"
)

// bigQuerySyntax rewrites BigQuery's SELECT WITH DIFFERENTIAL_PRIVACY
// OPTIONS(…) into SELECT /*+ SET_VAR(…) */ (planner.RewriteDifferentialPrivacy)
// before go-mysql-server parses a statement: in text queries (which is
// how client-side prepared statements arrive) and multi-statement
// queries. It runs after the statement guard, which checks the text as
// the client sent it.
type bigQuerySyntax struct{}

var _ gms.Interceptor = bigQuerySyntax{}

func (bigQuerySyntax) Priority() int { return 1 }

func (bigQuerySyntax) Query(ctx context.Context, chain gms.Chain, c *mysql.Conn, query string, callback func(*sqltypes.Result, bool) error) error {
	q, err := planner.RewriteDifferentialPrivacy(query)
	if err != nil {
		return err
	}
	return chain.ComQuery(ctx, c, q, callback)
}

func (bigQuerySyntax) MultiQuery(ctx context.Context, chain gms.Chain, c *mysql.Conn, query string, callback func(*sqltypes.Result, bool) error) (string, error) {
	q, err := planner.RewriteDifferentialPrivacy(query)
	if err != nil {
		return "", err
	}
	return chain.ComMultiQuery(ctx, c, q, callback)
}

// Prepare implements gms.Interceptor. A server-side prepared statement
// (COM_STMT_PREPARE) is parsed by vitess before any interceptor sees it:
// its connection loop (go/mysql/conn.go, case ComPrepare) calls
// sqlparser.ParseWithOptions on the text to count the parameters and
// writes a parse error to the client itself, without calling the handler's
// ComPrepare. So the clause cannot be rewritten here: such clients use the
// SET_VAR form (docs/sql.md); client-side prepared statements arrive as
// text queries and are rewritten.
func (bigQuerySyntax) Prepare(ctx context.Context, chain gms.Chain, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	return chain.ComPrepare(ctx, c, query, prepare)
}

func (bigQuerySyntax) StmtExecute(ctx context.Context, chain gms.Chain, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	return chain.ComStmtExecute(ctx, c, prepare, callback)
}

// ParsedQuery implements gms.Interceptor; go-mysql-server's handler does
// not dispatch parsed queries through interceptors.
func (bigQuerySyntax) ParsedQuery(gms.Chain, *mysql.Conn, string, ast.Statement, func(*sqltypes.Result, bool) error) error {
	return errors.New("dpsql: parsed queries are not supported")
}
