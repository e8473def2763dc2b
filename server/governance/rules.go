package governance

import (
	"fmt"
	"math"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/internal/mysqlerr"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Rule ids of this package: planner.RuleIDBase + 50 and up, clear of the
// planner's own.
const (
	SessionGuardID = planner.RuleIDBase + 50 + iota
)

// Rules returns the analyzer rules of the governed server (install them
// with the planner's policy rules through server.Config.Rules). For
// governed sessions, one pre-analyzer rule refuses:
//
//   - SET GLOBAL / SET PERSIST / SET PERSIST_ONLY of any system variable
//     (go-mysql-server v0.20.0 checks no privilege for them): MySQL error
//     1227, as MySQL answers without SYSTEM_VARIABLES_ADMIN;
//   - SET dp_epsilon / dp_delta (session) above the analyst's largest
//     per-release cap, when the value is a constant expression (MySQL error
//     1231). The ledger enforces the caps on every release anyway; this
//     only says so early;
//   - KILL of a connection of another user (MySQL error 1095);
//   - LOAD_FILE(), SELECT … INTO OUTFILE / DUMPFILE and LOAD DATA, which
//     read or write files on the server (go-mysql-server v0.20.0 checks no
//     FILE privilege for LOAD_FILE and INTO OUTFILE): MySQL error 1227;
//
// and it restricts SHOW PROCESSLIST and information_schema.processlist to
// the session user's own connections, without the State column (which
// carries the scan progress of running queries, partition by partition:
// a measure of a protected table's size).
func (g *Governor) Rules() []planner.Rule {
	return []planner.Rule{
		{ID: SessionGuardID, Name: "dpsql_session_guard", Batch: planner.PreAnalyze, Apply: g.sessionGuard},
	}
}

func (g *Governor) sessionGuard(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	if !g.Governed(ctx) {
		return n, transform.SameTree, nil
	}
	user := User(ctx)
	// Refusals: SET of globals and over-cap DP options anywhere in the
	// plan, KILL of foreign connections.
	var err error
	transform.Inspect(n, func(node sql.Node) bool {
		if err != nil {
			return false
		}
		switch node := node.(type) {
		case *plan.Set:
			for _, e := range node.Exprs {
				if err = g.checkSet(ctx, user, e); err != nil {
					return false
				}
			}
		case *plan.Kill:
			err = checkKill(ctx, user, node)
		case *plan.Into:
			if node.Outfile != "" || node.Dumpfile != "" {
				err = errFilePrivilege("SELECT … INTO OUTFILE/DUMPFILE")
			}
		case *plan.LoadData:
			err = errFilePrivilege("LOAD DATA")
		case *plan.CreateView, *plan.DropView:
			err = mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "CREATE VIEW and DROP VIEW are refused for analyst '%s': views are declared by administrators (see the views of the configuration); analysts may read them", user)
		}
		if err == nil {
			err = checkFileFunctions(node)
		}
		return err == nil
	})
	if err != nil {
		return nil, transform.SameTree, err
	}
	// No server path in a variable an analyst reads (paths.go).
	n, hid, err := hidePaths(ctx, n)
	if err != nil {
		return nil, transform.SameTree, err
	}
	// Process lists: own connections only, no progress.
	n, same, err := transform.NodeWithOpaque(n, func(node sql.Node) (sql.Node, transform.TreeIdentity, error) {
		switch node := node.(type) {
		case *plan.ShowProcessList:
			return &ownProcessList{user: user}, transform.NewTree, nil
		case *plan.ResolvedTable:
			ist, ok := node.Table.(*information_schema.InformationSchemaTable)
			if !ok || !strings.EqualFold(ist.Name(), information_schema.ProcessListTableName) {
				return node, transform.SameTree, nil
			}
			nt := *ist
			nt.Reader = func(ctx *sql.Context, _ sql.Catalog) (sql.RowIter, error) {
				return sql.RowsToRowIter(ownProcesses(ctx, user, true)...), nil
			}
			rt, err := node.ReplaceTable(&nt)
			if err != nil {
				return nil, transform.SameTree, err
			}
			return rt, transform.NewTree, nil
		}
		return node, transform.SameTree, nil
	})
	return n, same && hid, err
}

// checkFileFunctions refuses LOAD_FILE (go-mysql-server v0.20.0 checks no
// FILE privilege for it) in node's expressions, subqueries included.
func checkFileFunctions(node sql.Node) error {
	ex, ok := node.(sql.Expressioner)
	if !ok {
		return nil
	}
	var err error
	for _, e := range ex.Expressions() {
		transform.InspectExpr(e, func(e sql.Expression) bool {
			switch e := e.(type) {
			case *function.LoadFile:
				err = errFilePrivilege("LOAD_FILE()")
			case *plan.Subquery:
				if e.Query != nil {
					transform.Inspect(e.Query, func(n sql.Node) bool {
						if err == nil {
							err = checkFileFunctions(n)
						}
						return err == nil
					})
				}
			}
			return err != nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// errFilePrivilege refuses reading or writing files on the server.
func errFilePrivilege(what string) error {
	return mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, mysql.SSClientError,
		"Access denied; you need (at least one of) the FILE privilege(s) for this operation: %s reads or writes files on the server, which only administrators may do", what)
}

// checkSet refuses a SET of a global variable, and a SET of dp_epsilon or
// dp_delta above the user's per-release cap.
func (g *Governor) checkSet(ctx *sql.Context, user string, e sql.Expression) error {
	sf, ok := e.(*expression.SetField)
	if !ok {
		return nil
	}
	sv, ok := sf.LeftChild.(*expression.SystemVar)
	if !ok {
		return nil
	}
	if scope, ok := sv.Scope.(*sql.MysqlScope); !ok || scope.Type != sql.SystemVariableScope_Session {
		what := "GLOBAL"
		if ok {
			what = scope.Type.String()
		}
		return mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, mysql.SSClientError,
			"Access denied; you need (at least one of) the SUPER or SYSTEM_VARIABLES_ADMIN privilege(s) for this operation: %s variables are shared by every session, and analyst %q may change only their own session's (SET SESSION %s = …)",
			strings.ReplaceAll(what, ", ", "/"), user, sv.Name)
	}
	name := strings.ToLower(sv.Name)
	if name != dpvars.VarEpsilon && name != dpvars.VarDelta {
		return nil
	}
	if hasSubquery(sf.RightChild) {
		return nil // not evaluated here; the ledger checks the release
	}
	v, err := sf.RightChild.Eval(ctx, nil)
	if err != nil {
		return nil // the SET itself will report it
	}
	x, ok := toFloat(v)
	if !ok {
		return nil
	}
	capEps, capDelta, err := g.maxCaps(user)
	if err != nil {
		return nil
	}
	limit := capEps
	if name == dpvars.VarDelta {
		limit = capDelta
	}
	if x > limit {
		return mysql.NewSQLError(mysql.ERWrongValueForVar, mysql.SSClientError,
			"Variable '%s' can't be set to the value of '%v': one release of analyst %q may use at most %s=%v on any database (per-release cap of the configuration); choose a smaller value",
			name, v, user, map[string]string{dpvars.VarEpsilon: "ε", dpvars.VarDelta: "δ"}[name], limit)
	}
	return nil
}

// maxCaps returns the largest per-release cap of user over their active
// budgets, per component (+Inf when some budget has no cap, or when the
// user has no budget: then no value is refused here).
func (g *Governor) maxCaps(user string) (eps, delta float64, err error) {
	bals, err := g.ledger.Balances(user)
	if err != nil {
		return 0, 0, err
	}
	eps, delta = 0, 0
	active := 0
	for _, b := range bals {
		if !b.Configured {
			continue
		}
		active++
		if b.MaxRelease.Epsilon == 0 {
			eps = math.Inf(1)
		} else {
			eps = math.Max(eps, b.MaxRelease.Epsilon)
		}
		if b.MaxRelease.Delta == 0 {
			delta = math.Inf(1)
		} else {
			delta = math.Max(delta, b.MaxRelease.Delta)
		}
	}
	if active == 0 {
		return math.Inf(1), math.Inf(1), nil
	}
	return eps, delta, nil
}

func hasSubquery(e sql.Expression) bool {
	return transform.InspectExpr(e, func(e sql.Expression) bool {
		_, ok := e.(*plan.Subquery)
		return ok
	})
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int8:
		return float64(x), true
	case int:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint8:
		return float64(x), true
	case string:
		f, err := setunion.ParseFloat(strings.TrimSpace(x))
		return f, err == nil
	case fmt.Stringer: // decimal.Decimal
		f, err := setunion.ParseFloat(x.String())
		return f, err == nil
	}
	return 0, false
}

// KillCheck is a parser check (planner.Check) of the governed server: it
// drops go-mysql-server's SUPER requirement on KILL [QUERY|CONNECTION], so
// that the governance decides instead — administrators may kill any
// connection, every other account its own connections only (checkKill, in
// the session guard). An analyst can thus stop their own runaway statement
// from a second connection, as in MySQL.
func KillCheck(stmt ast.Statement, _ string, _ error) error {
	if k, ok := stmt.(*ast.Kill); ok {
		k.Auth.AuthType = ast.AuthType_IGNORE
	}
	return nil
}

// checkKill refuses KILL of a connection that belongs to another user.
func checkKill(ctx *sql.Context, user string, k *plan.Kill) error {
	if ctx.ProcessList == nil {
		return nil
	}
	for _, p := range ctx.ProcessList.Processes() {
		if p.Connection == k.ConnID && p.User != user {
			return mysql.NewSQLError(mysql.ERKillDenied, mysql.SSUnknownSQLState, "You are not owner of thread %d", k.ConnID)
		}
	}
	return nil
}

// ownProcesses returns the process list rows of user's connections, State
// left empty. isSchema selects information_schema.processlist's row
// layout (else SHOW PROCESSLIST's).
func ownProcesses(ctx *sql.Context, user string, isSchema bool) []sql.Row {
	if ctx.ProcessList == nil {
		return nil
	}
	var rows []sql.Row
	for _, p := range ctx.ProcessList.Processes() {
		if p.User != user {
			continue
		}
		var db any
		if p.Database != "" {
			db = p.Database
		}
		if isSchema {
			rows = append(rows, sql.Row{uint64(p.Connection), p.User, p.Host, db, string(p.Command), int32(p.Seconds()), "", p.Query})
		} else {
			rows = append(rows, sql.Row{int64(p.Connection), p.User, p.Host, db, string(p.Command), int64(p.Seconds()), "", p.Query})
		}
	}
	return rows
}

// ownProcessList replaces SHOW PROCESSLIST for governed sessions.
type ownProcessList struct{ user string }

var _ sql.ExecSourceRel = (*ownProcessList)(nil)

func (p *ownProcessList) Schema() sql.Schema   { return plan.NewShowProcessList().Schema() }
func (p *ownProcessList) Children() []sql.Node { return nil }
func (p *ownProcessList) Resolved() bool       { return true }
func (p *ownProcessList) IsReadOnly() bool     { return true }
func (p *ownProcessList) String() string       { return "ProcessList(own connections)" }
func (p *ownProcessList) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(p, len(children), 0)
	}
	return p, nil
}

func (p *ownProcessList) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	return sql.RowsToRowIter(ownProcesses(ctx, p.user, false)...), nil
}
