package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/functions"
)

// A Check inspects one statement, given as its parsed form and its text,
// and returns an error to refuse it. On a syntax error stmt is nil and err
// is the parser's error; the check may return a clearer error (or nil to
// keep the parser's).
type Check func(stmt ast.Statement, text string, err error) error

// GuardParser wraps a parser and runs checks on every statement before the
// planbuilder sees it. go-mysql-server v0.20.0 crashes on some inputs it
// parses (DP_SET_UNION(DISTINCT a, b) builds a nil expression), and the
// server drops the connection on such a panic; refusing the statement here
// turns that into a MySQL error.
//
// A refused statement is returned as a nil statement with the error: the
// server's handler pre-parses multi-statement queries and ignores the error,
// then the planbuilder parses again and reports it (docs/gms.md §3.5). The
// planbuilder wraps every parser error as a syntax error, which clients
// receive as MySQL error 1105 with the check's message, so checks return
// plain errors.
type GuardParser struct {
	Inner  sql.Parser
	Checks []Check
}

var _ sql.Parser = (*GuardParser)(nil)

// NewGuardParser returns a guard around inner (sql.GlobalParser if nil)
// with dpsql's checks (CallCheck, OrderByCheck, SetCheck, WindowCheck) followed by extra
// ones.
func NewGuardParser(inner sql.Parser, extra ...Check) *GuardParser {
	if inner == nil {
		inner = sql.GlobalParser
	}
	return &GuardParser{Inner: inner, Checks: append([]Check{CallCheck, OrderByCheck, SetCheck, WindowCheck}, extra...)}
}

func (g *GuardParser) check(stmt ast.Statement, text string, err error) error {
	for _, c := range g.Checks {
		if cerr := c(stmt, text, err); cerr != nil {
			return cerr
		}
	}
	return err
}

// ParseSimple implements sql.Parser.
func (g *GuardParser) ParseSimple(query string) (ast.Statement, error) {
	stmt, err := g.Inner.ParseSimple(query)
	if err := g.check(stmt, query, err); err != nil {
		return nil, err
	}
	return stmt, nil
}

// Parse implements sql.Parser.
func (g *GuardParser) Parse(ctx *sql.Context, query string, multi bool) (ast.Statement, string, string, error) {
	return g.ParseWithOptions(ctx, query, ';', multi, sql.LoadSqlMode(ctx).ParserOptions())
}

// ParseWithOptions implements sql.Parser.
func (g *GuardParser) ParseWithOptions(ctx context.Context, query string, delimiter rune, multi bool, options ast.ParserOptions) (ast.Statement, string, string, error) {
	stmt, parsed, remainder, err := g.Inner.ParseWithOptions(ctx, query, delimiter, multi, options)
	text := parsed
	if err != nil || text == "" {
		text = query
	}
	if err := g.check(stmt, text, err); err != nil {
		return nil, parsed, remainder, err
	}
	return stmt, parsed, remainder, nil
}

// ParseOneWithOptions implements sql.Parser.
func (g *GuardParser) ParseOneWithOptions(ctx context.Context, query string, options ast.ParserOptions) (ast.Statement, int, error) {
	stmt, next, err := g.Inner.ParseOneWithOptions(ctx, query, options)
	text := query
	if err == nil && next > 0 && next <= len(query) {
		text = query[:next]
	}
	if err := g.check(stmt, text, err); err != nil {
		return nil, next, err
	}
	return stmt, next, nil
}

// CallCheck refuses function calls the planbuilder of go-mysql-server
// v0.20.0 cannot build: DP_SET_UNION(DISTINCT …), and DISTINCT in any
// other non-aggregate call with more than one argument, which makes the
// planbuilder build a nil expression and crash. It also explains
// DP_SET_UNION(…) OVER (…), which the parser rejects with a bare syntax
// error. It scans tokens rather than the AST, so it covers every statement
// kind, nested calls, and statements that did not parse.
func CallCheck(_ ast.Statement, text string, _ error) error {
	type frame struct {
		depth    int
		name     string
		distinct bool
		args     int
	}
	var (
		stack      []frame
		depth      int
		prevType   int
		prevVal    string
		afterOpen  bool // the previous token opened a call
		closedCall bool // the previous token closed a DP_SET_UNION call
	)
	tkn := ast.NewStringTokenizer(text)
	for {
		typ, val := tkn.Scan()
		if typ == 0 || typ == ast.LEX_ERROR {
			return nil
		}
		if closedCall && typ == ast.OVER {
			return errors.New(functions.WindowMessage)
		}
		closedCall = false
		if afterOpen && typ == ast.DISTINCT {
			stack[len(stack)-1].distinct = true
		}
		afterOpen = false
		switch typ {
		case '(':
			depth++
			if prevType == ast.ID {
				stack = append(stack, frame{depth: depth, name: strings.ToLower(prevVal), args: 1})
				afterOpen = true
			}
		case ',':
			if n := len(stack); n > 0 && stack[n-1].depth == depth {
				stack[n-1].args++
			}
		case ')':
			if n := len(stack); n > 0 && stack[n-1].depth == depth {
				f := stack[n-1]
				stack = stack[:n-1]
				if f.name == functions.SetUnionName {
					if f.distinct {
						return errors.New("DP_SET_UNION does not take DISTINCT: it already counts each (privacy unit, item) pair once; write DP_SET_UNION(item, privacy_unit [, 'options'])")
					}
					closedCall = true
				} else if f.distinct && (f.name == functions.MedianName || f.name == functions.PercentileContName) {
					return fmt.Errorf("%s does not take DISTINCT: a private quantile ranks every kept row; write %s(value%s)", strings.ToUpper(f.name), strings.ToUpper(f.name), map[bool]string{true: ", p"}[f.name == functions.PercentileContName])
				} else if f.distinct && f.args > 1 && !builtinAggregates[f.name] {
					return fmt.Errorf("function %s does not take DISTINCT: DISTINCT is only allowed in aggregate functions", strings.ToUpper(f.name))
				}
			}
			depth--
		}
		prevType, prevVal = typ, string(val)
	}
}

// OrderByCheck refuses DP_SET_UNION calls written inside ORDER BY, which
// the planbuilder cannot resolve ("faild to ref aggregate expression"):
// DP_SET_UNION without GROUP BY yields one row, so there is nothing to
// order. (ORDER BY over its alias is accepted and dropped by the planner.)
func OrderByCheck(stmt ast.Statement, _ string, _ error) error {
	if stmt == nil {
		return nil
	}
	var found bool
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		ob, ok := n.(ast.OrderBy)
		if !ok {
			return !found, nil
		}
		_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
			if f, ok := n.(*ast.FuncExpr); ok && f.Name.Lowered() == functions.SetUnionName {
				found = true
			}
			return !found, nil
		}, ob)
		return false, nil
	}, stmt)
	if found {
		return errors.New("DP_SET_UNION cannot be used in ORDER BY: without GROUP BY the query returns one row, so drop the ORDER BY")
	}
	return nil
}

// builtinAggregates are the names go-mysql-server v0.20.0 plans as
// aggregates (sql/planbuilder/aggregates.go isAggregateFunc); their
// DISTINCT is handled by the planbuilder.
var builtinAggregates = map[string]bool{
	"avg": true, "bit_and": true, "bit_or": true, "bit_xor": true, "count": true,
	"group_concat": true, "json_arrayagg": true, "json_objectagg": true,
	"max": true, "min": true, "std": true, "stddev_pop": true, "stddev_samp": true,
	"stddev": true, "sum": true, "var_pop": true, "var_samp": true, "variance": true,
	"first": true, "last": true, "any_value": true,
}
