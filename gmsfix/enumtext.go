package gmsfix

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// EnumText is a pre-analyzer rule that replaces go-mysql-server's
// EnumToString — which the planbuilder puts around the ENUM-typed branches
// of a CASE — by an expression that also accepts the value as a string.
//
// EnumToString asserts that an ENUM value is its index (uint16), but
// go-mysql-server v0.20.0's information_schema returns its ENUM columns,
// such as TABLES.TABLE_TYPE, as strings. The CASE … ELSE TABLE_TYPE END of
// MySQL Connector/J's DatabaseMetaData.getTables query (DBeaver's default
// driver, Tableau's JDBC connectors) therefore panics — "interface
// conversion: interface {} is string, not uint16", dolt#9347, fixed after
// v0.20.0 — as soon as a database holds a view, so that those tools cannot
// list its tables.
func EnumText(_ *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return enumTextNode(n)
}

func enumTextNode(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	return transform.NodeWithOpaque(n, func(n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		if _, ok := n.(sql.Expressioner); !ok {
			return n, transform.SameTree, nil
		}
		return transform.OneNodeExpressions(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			return transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
				switch e := e.(type) {
				case *expression.EnumToString:
					return &enumText{enum: e.Enum}, transform.NewTree, nil
				case *plan.Subquery:
					if e.Query == nil {
						return e, transform.SameTree, nil
					}
					q, same, err := enumTextNode(e.Query)
					if err != nil || same {
						return e, transform.SameTree, err
					}
					return e.WithQuery(q), transform.NewTree, nil
				}
				return e, transform.SameTree, nil
			})
		})
	})
}

// enumText is EnumToString for values that are indexes or already strings.
type enumText struct {
	enum sql.Expression
}

var _ sql.CollationCoercible = (*enumText)(nil)

func (e *enumText) Type() sql.Type             { return types.Text }
func (e *enumText) IsNullable() bool           { return e.enum.IsNullable() }
func (e *enumText) Resolved() bool             { return e.enum.Resolved() }
func (e *enumText) Children() []sql.Expression { return []sql.Expression{e.enum} }
func (e *enumText) String() string             { return e.enum.String() }
func (e *enumText) DebugString() string        { return sql.DebugString(e.enum) }

func (e *enumText) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	return e.Type().CollationCoercibility(ctx)
}

func (e *enumText) WithChildren(children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(e, len(children), 1)
	}
	return &enumText{enum: children[0]}, nil
}

func (e *enumText) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := e.enum.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	switch v := v.(type) {
	case uint16:
		if et, ok := e.enum.Type().(types.EnumType); ok {
			s, _ := et.At(int(v))
			return s, nil
		}
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	}
	s, _, err := types.Text.Convert(ctx, v)
	return s, err
}
