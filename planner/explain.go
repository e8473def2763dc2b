package planner

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/explain"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Explain implements release.Explainer: what the release reads, its
// mechanism's parameters in plain words, and its requests.
func (r *Release) Explain(ctx *sql.Context) ([]explain.Fact, []release.Request, error) {
	what := "SELECT DISTINCT"
	switch r.mode {
	case setUnions:
		what = strings.ToUpper(functions.SetUnionName)
	case aggregateRows:
		what = "GROUP BY with DP aggregates"
		if r.aggPlan.Global {
			what = "DP aggregates without GROUP BY"
		}
	}
	facts := []explain.Fact{explain.F("release", fmt.Sprintf("%s over %s.%s", what, r.db, r.name), "what the statement releases privately")}
	if r.mode == aggregateRows {
		facts = append(facts, r.aggPlan.Facts()...)
	} else {
		opts := r.options()
		for i, o := range opts {
			cal, err := setunion.Calibrate(o)
			if err != nil {
				return nil, nil, err
			}
			f := cal.Facts()
			if len(opts) > 1 {
				f = explain.Prefix(fmt.Sprintf("call_%d.", i+1), f)
			}
			facts = append(facts, f...)
		}
	}
	for _, f := range r.origins {
		if f.Name == "source.max_groups_contributed" && r.mode == aggregateRows && r.aggPlan.Global {
			continue // without GROUP BY each user has the one key
		}
		facts = append(facts, f)
	}
	return facts, r.requests(ctx), nil
}

// ExplainName is the name of the DP_EXPLAIN table function.
const ExplainName = "dp_explain"

// ExplainSchema are the columns of DP_EXPLAIN: the release (numbered in
// plan order; 0 for the statement's budget), the parameter, its value and
// what it means.
var ExplainSchema = sql.Schema{
	{Name: "release_no", Type: types.Int32, Source: ExplainName},
	{Name: "parameter", Type: types.MustCreateString(sqltypes.VarChar, 255, sql.Collation_Default), Source: ExplainName},
	{Name: "value", Type: types.LongText, Source: ExplainName},
	{Name: "meaning", Type: types.LongText, Source: ExplainName},
}

// Analyze plans a query as the session of ctx would, without running it.
type Analyze func(ctx *sql.Context, query string) (sql.Node, error)

// ExplainFunction returns the DP_EXPLAIN('query') table function: it plans
// query in the caller's session (its dp_* variables and the query's own
// /*+ SET_VAR */ hints apply) without running it, and shows each private
// release the plan would make — mechanism, ε, δ, Δ0, noise, threshold,
// cutoff, the users a key needs to be released with probability ½ and
// 0.95, per DP aggregate its noise and 95 % half-width — and, from the
// governor, what the statement would be charged and what would be left. It
// reads no data and charges nothing. A query an analyst may not run is
// refused as it would be.
func ExplainFunction(gov release.Governor, analyze Analyze) sql.TableFunction {
	return &explainNode{gov: gov, analyze: analyze}
}

type explainNode struct {
	gov     release.Governor
	analyze Analyze
	db      sql.Database
	arg     sql.Expression
}

var (
	_ sql.TableFunction = (*explainNode)(nil)
	_ sql.ExecSourceRel = (*explainNode)(nil)
)

func (n *explainNode) Name() string { return ExplainName }
func (n *explainNode) Description() string {
	return "explains the private releases of a query without running it or charging the budget"
}

func (n *explainNode) NewInstance(_ *sql.Context, db sql.Database, args []sql.Expression) (sql.Node, error) {
	if len(args) != 1 {
		return nil, mysql.NewSQLError(functions.ErWrongParamCount, mysql.SSClientError,
			"Incorrect parameter count in the call to DP_EXPLAIN: it takes one argument, the query as a string: DP_EXPLAIN('SELECT DISTINCT …')")
	}
	if !functions.IsConstant(args[0]) {
		return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSClientError, "DP_EXPLAIN: the query must be a constant string")
	}
	return &explainNode{gov: n.gov, analyze: n.analyze, db: db, arg: args[0]}, nil
}

func (n *explainNode) Resolved() bool         { return n.arg == nil || n.arg.Resolved() }
func (n *explainNode) IsReadOnly() bool       { return true }
func (n *explainNode) Schema() sql.Schema     { return ExplainSchema }
func (n *explainNode) Children() []sql.Node   { return nil }
func (n *explainNode) String() string         { return "DP_EXPLAIN(…)" }
func (n *explainNode) Database() sql.Database { return n.db }
func (n *explainNode) Expressions() []sql.Expression {
	if n.arg == nil {
		return nil
	}
	return []sql.Expression{n.arg}
}

func (n *explainNode) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

func (n *explainNode) WithExpressions(exprs ...sql.Expression) (sql.Node, error) {
	if len(exprs) != len(n.Expressions()) {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(exprs), len(n.Expressions()))
	}
	nn := *n
	if len(exprs) == 1 {
		nn.arg = exprs[0]
	}
	return &nn, nil
}

func (n *explainNode) WithDatabase(db sql.Database) (sql.Node, error) {
	nn := *n
	nn.db = db
	return &nn, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *explainNode) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	v, err := n.arg.Eval(ctx, nil)
	if err != nil {
		return nil, err
	}
	q, ok := v.(string)
	if !ok || strings.TrimSpace(q) == "" {
		return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSClientError, "DP_EXPLAIN: give the query as a non-empty string, e.g. DP_EXPLAIN('SELECT DISTINCT word FROM words')")
	}
	if release.Explaining(ctx) {
		return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSClientError, "DP_EXPLAIN cannot explain itself")
	}
	if q, err = RewriteDifferentialPrivacy(q); err != nil { // bigquery.go
		return nil, err
	}
	stmt, err := ast.Parse(q)
	if err != nil {
		return nil, mysql.NewSQLError(mysql.ERParseError, mysql.SSClientError, "DP_EXPLAIN: the query does not parse: %s", err)
	}
	switch stmt.(type) {
	case *ast.Select, *ast.SetOp:
	default:
		return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSClientError, "DP_EXPLAIN explains SELECT statements only")
	}
	node, err := n.analyze(release.WithExplain(ctx.WithQuery(q)), q)
	if err != nil {
		return nil, err
	}
	var rows []sql.Row
	var reqs []release.Request
	add := func(e release.Explainer) error {
		facts, rs, err := e.Explain(ctx)
		if err != nil {
			return err
		}
		no := int32(len(rows) + 1)
		if len(rows) > 0 {
			no = rows[len(rows)-1][0].(int32) + 1
		}
		for _, f := range facts {
			rows = append(rows, sql.Row{no, f.Name, f.Value, f.Meaning})
		}
		reqs = append(reqs, rs...)
		return nil
	}
	if err := explainers(node, add); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		rows = append(rows, sql.Row{int32(0), "releases", "none", "the statement makes no private release: it reads no protected table, or runs as an administrator's plain query"})
	}
	if p, ok := n.gov.(release.Previewer); ok && len(reqs) > 0 {
		facts, err := p.Preview(ctx, reqs)
		if err != nil {
			return nil, err
		}
		for _, f := range facts {
			rows = append(rows, sql.Row{int32(0), f.Name, f.Value, f.Meaning})
		}
	}
	return sql.RowsToRowIter(rows...), nil
}

// explainers calls add for every release.Explainer of a plan — nodes,
// expressions and expression subqueries — in plan order, each once.
func explainers(n sql.Node, add func(release.Explainer) error) error {
	var err error
	seen := map[release.Explainer]bool{}
	visit := func(e release.Explainer) {
		if err == nil && !seen[e] {
			seen[e] = true
			err = add(e)
		}
	}
	var inspect func(n sql.Node) bool
	inspect = func(n sql.Node) bool {
		if err != nil {
			return false
		}
		if e, ok := n.(release.Explainer); ok {
			visit(e)
		}
		if ex, ok := n.(sql.Expressioner); ok {
			for _, x := range ex.Expressions() {
				transform.InspectExpr(x, func(x sql.Expression) bool {
					switch x := x.(type) {
					case *plan.Subquery:
						if x.Query != nil {
							transform.Inspect(x.Query, inspect)
						}
					case release.Explainer:
						visit(x)
					}
					return err != nil
				})
			}
		}
		return err == nil
	}
	transform.Inspect(n, inspect)
	return err
}
