package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
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
		if r.pubKeys != nil {
			what = "GROUP BY over public keys with DP aggregates"
		}
		if r.aggPlan.Global {
			what = "DP aggregates without GROUP BY"
		}
	}
	facts := []explain.Fact{explain.F("release", fmt.Sprintf("%s over %s.%s", what, r.db, r.name), "what the statement releases privately")}
	if r.mode == aggregateRows {
		facts = append(facts, r.labelAggregates(r.aggPlan.Facts())...)
		var err error
		if facts, err = r.explainPublicKeys(ctx, facts); err != nil {
			return nil, nil, err
		}
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
	e := &explainer{gov: gov, analyze: analyze}
	return &functions.TableFunc{
		FuncName: ExplainName,
		About:    "explains the private releases of a query without running it or charging the budget",
		Shown:    "DP_EXPLAIN(…)",
		Columns:  ExplainSchema,
		Check:    explainArgs,
		Rows:     e.rows,
	}
}

// explainArgs refuses a DP_EXPLAIN call without exactly one constant
// argument.
func explainArgs(args []sql.Expression) error {
	if len(args) != 1 {
		return mysql.NewSQLError(functions.ErWrongParamCount, mysql.SSClientError,
			"Incorrect parameter count in the call to DP_EXPLAIN: it takes one argument, the query as a string: DP_EXPLAIN('SELECT DISTINCT …')")
	}
	if !functions.IsConstant(args[0]) {
		return mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSClientError, "DP_EXPLAIN: the query must be a constant string")
	}
	return nil
}

// explainer answers DP_EXPLAIN calls.
type explainer struct {
	gov     release.Governor
	analyze Analyze
}

// rows answers DP_EXPLAIN(arg).
func (n *explainer) rows(ctx *sql.Context, arg sql.Expression) (sql.RowIter, error) {
	v, err := arg.Eval(ctx, nil)
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

// labelAggregates renames the plan's per-aggregate facts (aggregate_j.…,
// j in the plan's order of distinct aggregates) after the aggregate's
// position in the SELECT list, aggregate_<position>.…, and adds
// aggregate_<position>.column naming its column (alias or expression, and
// the other positions of the same aggregate, which is released once). An
// aggregate the SELECT list does not show (HAVING or ORDER BY only) is
// aggregate_hidden_<j>.
func (r *Release) labelAggregates(facts []explain.Fact) []explain.Fact {
	type shown = outputLabel // pos 0: not in the SELECT list
	where := make([][]shown, len(r.aggOpts.Aggregates))
	for i, ki := range r.out {
		j := ki - r.groupKeys
		if ki < r.groupKeys || j >= len(where) {
			continue
		}
		if r.labels == nil { // no SELECT list found: the release's own columns
			where[j] = append(where[j], shown{i + 1, r.schema[i].Name})
			continue
		}
		where[j] = append(where[j], r.labels[i]...)
		if len(r.labels[i]) == 0 && len(where[j]) == 0 {
			where[j] = append(where[j], shown{0, r.schema[i].Name})
		}
	}
	for _, w := range where {
		slices.SortFunc(w, func(a, b shown) int { return a.pos - b.pos })
	}
	out := make([]explain.Fact, 0, len(facts)+len(where))
	for _, f := range facts {
		var j int
		if n, err := fmt.Sscanf(f.Name, "aggregate_%d.", &j); err != nil || n != 1 || j < 1 || j > len(where) || len(where[j-1]) == 0 {
			out = append(out, f)
			continue
		}
		_, rest, _ := strings.Cut(f.Name, ".")
		w := where[j-1]
		pre := fmt.Sprintf("aggregate_%d.", w[0].pos)
		meaning := fmt.Sprintf("the SELECT list's column %d (its alias, or its expression); aggregate_N is named after the column's position", w[0].pos)
		if w[0].pos == 0 {
			pre = fmt.Sprintf("aggregate_hidden_%d.", j)
			meaning = "an aggregate the SELECT list does not show (HAVING or ORDER BY only)"
		}
		if rest == "kind" {
			names := []string{w[0].name}
			for _, s := range w[1:] {
				names = append(names, fmt.Sprintf("%s (column %d)", s.name, s.pos))
			}
			out = append(out, explain.F(pre+"column", strings.Join(names, ", also "), meaning))
		}
		f.Name = pre + rest
		out = append(out, f)
	}
	return out
}

// outputLabel is where a release's output column shows in the SELECT list
// above it: its 1-based position (0: not shown) and its name there.
type outputLabel struct {
	pos  int
	name string
}

// labelOutputs finds, for each release of n, the outermost Project above
// it through nodes that pass rows through (HAVING, ORDER BY, LIMIT, inner
// Projects) — the SELECT list — and records where each output column shows
// there, matched by column id.
func labelOutputs(n sql.Node) {
	transform.Inspect(n, func(n sql.Node) bool {
		proj, ok := n.(*plan.Project)
		if !ok {
			return true
		}
		r, ids := releaseBelow(proj.Child, proj.Projections)
		if r == nil || r.labels != nil {
			return true
		}
		r.labels = make([][]outputLabel, len(r.outputs))
		for i, o := range r.outputs {
			gf, ok := o.(*expression.GetField)
			if !ok {
				continue
			}
			for p, id := range ids {
				if id == gf.Id() && id != 0 {
					r.labels[i] = append(r.labels[i], outputLabel{pos: p + 1, name: proj.Schema()[p].Name})
				}
			}
		}
		return true
	})
}

// releaseBelow follows n through pass-through nodes to a Release, mapping
// the outer projections to the column ids they read at the release (0 for
// a computed expression); nil when no release is reached.
func releaseBelow(n sql.Node, projections []sql.Expression) (*Release, []sql.ColumnId) {
	ids := make([]sql.ColumnId, len(projections))
	for i, e := range projections {
		if gf, ok := unalias(e).(*expression.GetField); ok {
			ids[i] = gf.Id()
		}
	}
	for {
		switch x := n.(type) {
		case *Release:
			return x, ids
		case *plan.Project:
			inner := map[sql.ColumnId]sql.ColumnId{}
			for _, e := range x.Projections {
				ie, ok := e.(sql.IdExpression)
				if gf, isField := unalias(e).(*expression.GetField); ok && isField {
					inner[ie.Id()] = gf.Id()
				}
			}
			for i, id := range ids {
				ids[i] = inner[id]
			}
			n = x.Child
		case *plan.Having, *plan.Filter, *plan.Sort, *plan.Limit, *plan.Offset, *plan.TopN, *plan.Distinct:
			n = x.Children()[0]
		default:
			return nil, nil
		}
	}
}
