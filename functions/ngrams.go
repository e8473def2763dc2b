package functions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/internal/mysqlerr"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/explain"
	"github.com/dpsql/dpsql/sqlext/ngrams"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// NgramsName is the SQL name of the DP n-gram table function (lower case;
// providers must look table functions up case-insensitively, as
// server/storage does).
const NgramsName = "dp_ngrams"

// NgramsFunction is the name DP_NGRAMS reports in errors and in the ledger
// (Release.Function).
const NgramsFunction = "DP_NGRAMS"

// NgramsTableFunction returns DP_NGRAMS for registration on a
// sql.TableFunctionProvider (server.NewEngine does this).
func NgramsTableFunction(cfg Config) sql.TableFunction { return &NGrams{cfg: cfg} }

// NGrams is the table function
//
//	DP_NGRAMS('[db.]table', 'text_column', 'privacy_unit_column' [, 'options'])
//
// returning rows (ngram VARCHAR, n INT), ordered by n and then by ngram
// (bytewise, which is the order of the default utf8mb4_0900_bin collation):
// the n-grams of 1 to max_n tokens of the text column released under
// user-level (ε, δ)-differential privacy, where the privacy unit is the
// privacy_unit_column (DPNE, package sqlext/ngrams, docs/privacy.md §8).
// Nothing else leaves it: no counts, no weights, no mark on spurious
// n-grams.
//
// The adapter is thin. It evaluates the four constant arguments, resolves
// the table through the engine's catalog, reads every row of the table (all
// partitions) into an ngrams.Extractor — the text column in its MySQL text
// form, the privacy unit in the canonical text form DP_SET_UNION uses (so
// BIGINT 1 and VARCHAR '1' are the same unit), rows whose unit is NULL or
// empty dropped, NULL text giving no tokens — and runs one extraction with a
// fresh random source. Everything is computed before the first row is
// returned, so a server's ConnReadTimeout, which also bounds the wait for
// the next row, must allow for the whole extraction (docs/gms.md §4.6);
// cancelling the query stops the scan and the extraction.
//
// Reading tables. The table is looked up through the analyzer's catalog
// (sql.Catalog, given by WithCatalog), not through the unwrapped current
// database go-mysql-server passes to NewInstance, and the account must hold
// the SELECT privilege on it (checked with the catalog's authorization
// handler when accounts are enabled). This is deliberate (docs/gms.md §2.3): a
// DP function must not open tables an account could not name in a plain
// SELECT. Whether an analyst may see raw rows is a separate question,
// answered by the Governor and the planner's analyst rules; DP_NGRAMS is
// one of the releases they allow.
//
// Governance. When Config.Governor is set, the session is governed and the
// table is protected, the privacy_unit_column must be the table's declared
// privacy unit (else MySQL error 1142 naming the right column); the release
// is checked against the budget at plan time when the arguments are
// constant (Governor.Check, so an over-budget release is refused before
// any data is read) and charged in RowIter before any row is read
// (release.Governor.Charge, with the ε and δ of the whole extraction); a Charge
// error is returned as is and nothing is released. Ungoverned sessions and
// unprotected tables are not charged.
//
// Prepared statements. go-mysql-server builds table functions at plan time
// with unevaluated arguments; while a statement is being prepared they may
// still be bind variables (?), so checks that need their values wait for
// execution, where the statement is built again with the values. RowIter
// always re-evaluates the arguments and the dp_* session variables: what
// is charged is exactly what runs.
//
// One release per query. RowIter may be called more than once for one plan
// (a nested-loop join builds its inner side per outer row); the first call
// runs the release and later calls replay its rows, so a query charges and
// releases once per DP_NGRAMS call it contains.
type NGrams struct {
	cfg  Config
	db   sql.Database // the current database at plan time (may be nil)
	cat  sql.Catalog  // the analyzer's catalog (nil before WithCatalog)
	args []sql.Expression
	run  *ngramsRun // shared by the copies of one instance

	// planCtx is the query's context, kept by NewInstance for WithCatalog
	// only (go-mysql-server passes WithCatalog no context); nil otherwise.
	planCtx *sql.Context
}

// ngramsRun holds the outcome of an instance's release.
type ngramsRun struct {
	once   sync.Once
	ngrams []ngrams.NGram
	err    error
}

var (
	_ sql.TableFunction        = (*NGrams)(nil)
	_ sql.CatalogTableFunction = (*NGrams)(nil)
	_ sql.ExecSourceRel        = (*NGrams)(nil)
)

// ngramsSchema is the result schema: the n-gram's text (its tokens joined
// by single spaces) and its number of tokens.
var ngramsSchema = sql.Schema{
	{Name: "ngram", Type: types.MustCreateString(sqltypes.VarChar, 16383, sql.Collation_Default), Source: NgramsName},
	{Name: "n", Type: types.Int32, Source: NgramsName},
}

// Name implements sql.Nameable.
func (n *NGrams) Name() string { return NgramsName }

// Description describes the function.
func (n *NGrams) Description() string {
	return "returns the n-grams of a text column released under user-level differential privacy"
}

// NewInstance implements sql.TableFunction. It checks the number of
// arguments and that they are constants; the rest is checked in
// WithCatalog, which go-mysql-server calls right after.
func (n *NGrams) NewInstance(ctx *sql.Context, db sql.Database, args []sql.Expression) (sql.Node, error) {
	if len(args) < 3 || len(args) > 4 {
		return nil, mysql.NewSQLError(ErWrongParamCount, mysql.SSClientError,
			"Incorrect parameter count in the call to DP_NGRAMS: it takes 3 or 4 arguments, DP_NGRAMS('[database.]table', 'text_column', 'privacy_unit_column' [, 'options']), but %d were given", len(args))
	}
	for i, a := range args {
		if !IsConstant(a) {
			return nil, optionsError("DP_NGRAMS: the %s argument must be a constant string, not an expression that depends on a row (%s)", ngramsArgNames[i], a)
		}
	}
	return &NGrams{cfg: n.cfg, db: db, args: slices.Clone(args), run: &ngramsRun{}, planCtx: ctx}, nil
}

var ngramsArgNames = [...]string{"table", "text_column", "privacy_unit_column", "options"}

// WithCatalog implements sql.CatalogTableFunction. go-mysql-server's
// planbuilder calls it right after NewInstance, for the same query. When the
// arguments are known (not bind variables of a statement being prepared) it
// resolves the call — table, columns, privileges, options, governance — and
// asks the Governor whether a governed release fits the budget, so that bad
// calls and over-budget releases fail at plan time, before any data is read.
func (n *NGrams) WithCatalog(c sql.Catalog) (sql.TableFunction, error) {
	nn := *n
	nn.cat = c
	nn.planCtx = nil
	if ctx := n.planCtx; ctx != nil && !nn.deferred() {
		call, err := nn.resolve(ctx)
		if err != nil {
			return nil, err
		}
		rel, charged, err := nn.govern(ctx, call)
		if err != nil {
			return nil, err
		}
		if charged && !release.Explaining(ctx) {
			if err := nn.cfg.Governor.Check(ctx, rel); err != nil {
				return nil, err
			}
		}
	}
	return &nn, nil
}

// Explain implements release.Explainer: the extraction's plan in plain
// words and, when the session is charged, its request.
func (n *NGrams) Explain(ctx *sql.Context) ([]explain.Fact, []release.Request, error) {
	call, err := n.resolve(ctx)
	if err != nil {
		return nil, nil, err
	}
	rel, charged, err := n.govern(ctx, call)
	if err != nil {
		return nil, nil, err
	}
	p, err := ngrams.NewPlan(call.opts)
	if err != nil {
		return nil, nil, err
	}
	facts := append([]explain.Fact{explain.F("release", fmt.Sprintf("DP_NGRAMS over %s.%s", call.db, call.table), "what the statement releases privately")}, p.Facts()...)
	facts = append(facts, call.origins...)
	if !charged {
		return facts, nil, nil
	}
	return facts, []release.Request{rel}, nil
}

// deferred reports whether an argument is still a bind variable (the
// statement is being prepared, not executed).
func (n *NGrams) deferred() bool {
	for _, a := range n.args {
		bound := false
		transform.InspectExpr(a, func(e sql.Expression) bool {
			_, bound = e.(*expression.BindVar)
			return bound
		})
		if bound {
			return true
		}
	}
	return false
}

// String implements sql.Node.
func (n *NGrams) String() string {
	args := make([]string, len(n.args))
	for i, a := range n.args {
		args[i] = a.String()
	}
	return "DP_NGRAMS(" + strings.Join(args, ", ") + ")"
}

// Schema implements sql.Node.
func (n *NGrams) Schema() sql.Schema { return ngramsSchema }

// Children implements sql.Node: none.
func (n *NGrams) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *NGrams) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// Resolved implements sql.Node.
func (n *NGrams) Resolved() bool {
	for _, a := range n.args {
		if !a.Resolved() {
			return false
		}
	}
	return true
}

// IsReadOnly implements sql.Node.
func (n *NGrams) IsReadOnly() bool { return true }

// Database implements sql.Databaser: the current database at plan time.
func (n *NGrams) Database() sql.Database { return n.db }

// WithDatabase implements sql.Databaser.
func (n *NGrams) WithDatabase(db sql.Database) (sql.Node, error) {
	nn := *n
	nn.db = db
	return &nn, nil
}

// Expressions implements sql.Expressioner.
func (n *NGrams) Expressions() []sql.Expression { return n.args }

// WithExpressions implements sql.Expressioner. New arguments make a new
// release.
func (n *NGrams) WithExpressions(exprs ...sql.Expression) (sql.Node, error) {
	if len(exprs) != len(n.args) {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(exprs), len(n.args))
	}
	nn := *n
	nn.args = slices.Clone(exprs)
	nn.run = &ngramsRun{}
	return &nn, nil
}

// ngramsCall is a resolved call: the table to read and how.
type ngramsCall struct {
	db, table string // as the catalog names them
	tbl       sql.Table
	text      string // column names as the table spells them
	unit      string
	unitArg   string // the privacy_unit_column argument as given
	opts      ngrams.Options
	origins   []explain.Fact // where the options came from (DP_EXPLAIN)
}

// resolve evaluates the arguments and the session variables and checks
// everything that can be checked without reading data.
func (n *NGrams) resolve(ctx *sql.Context) (*ngramsCall, error) {
	var vals [4]string
	var optionsGiven bool
	for i, a := range n.args {
		if !IsConstant(a) {
			return nil, optionsError("DP_NGRAMS: the %s argument must be a constant string, not an expression that depends on a row (%s)", ngramsArgNames[i], a)
		}
		v, err := a.Eval(ctx, nil)
		if err != nil {
			return nil, err
		}
		if v == nil {
			if i == 3 {
				continue // NULL options: the defaults
			}
			return nil, optionsError("DP_NGRAMS: the %s argument is NULL: pass a string such as %s", ngramsArgNames[i], ngramsArgExamples[i])
		}
		s, ok := v.(string)
		if !ok {
			c, _, err := types.LongText.Convert(ctx, v)
			if err != nil {
				return nil, optionsError("DP_NGRAMS: the %s argument must be a string such as %s", ngramsArgNames[i], ngramsArgExamples[i])
			}
			s, _ = c.(string)
		}
		vals[i] = s
		optionsGiven = optionsGiven || i == 3
	}

	call := &ngramsCall{unitArg: strings.TrimSpace(vals[2])}
	if err := n.resolveTable(ctx, call, vals[0], vals[1], vals[2]); err != nil {
		return nil, err
	}
	ctx = n.withDefaults(ctx, call)
	opts, err := ngramsOptions(dpvars.SessionParams(ctx), vals[3], optionsGiven, mechanismSource(ctx, call))
	if err != nil {
		return nil, err
	}
	if optionsGiven {
		noteStatementOptions(ctx, vals[3])
	}
	call.opts = opts
	call.origins = dpvars.OriginFacts(ctx, dpvars.VarEpsilon, dpvars.VarDelta, dpvars.VarMechanism, dpvars.VarMaxItems)
	return call, nil
}

// withDefaults returns ctx carrying, for a governed session, the
// configured defaults of the call's table (Config.Defaults): the table's
// dp: options, below the call's options string, the statement's hints and
// the analyst's SET, as for any analyst's release over the table (an
// ungoverned session's DP_SET_UNION and DP_NGRAMS take none, as the
// planner gives them none). A column's dp: section does not apply: its Δ0
// counts the column's values a user has, and the extraction's keys are
// n-grams of the text, not its values (as for GROUP BY of an expression
// of a column).
func (n *NGrams) withDefaults(ctx *sql.Context, call *ngramsCall) *sql.Context {
	if n.cfg.Defaults == nil || n.cfg.Governor == nil || !n.cfg.Governor.Governed(ctx) {
		return ctx
	}
	return dpvars.WithOwnDefaults(ctx, n.cfg.Defaults(call.db, call.table), nil)
}

// mechanismSource names, for an error, where dp_mechanism's value came
// from: the table's configuration or the session variable.
func mechanismSource(ctx *sql.Context, call *ngramsCall) string {
	if dpvars.Origin(ctx, dpvars.VarMechanism) == dpvars.OriginTable {
		return fmt.Sprintf("the configured mechanism of %s.%s (its dp: section)", call.db, call.table)
	}
	return "the session variable dp_mechanism"
}

var ngramsArgExamples = [...]string{"'db.table'", "'body'", "'user_id'", "'epsilon=1, max_n=3'"}

// resolveTable finds the table and its two columns and checks the account's
// SELECT privilege on the table.
func (n *NGrams) resolveTable(ctx *sql.Context, call *ngramsCall, name, textCol, unitCol string) error {
	dbName, tblName, err := splitTableName(name)
	if err != nil {
		return err
	}
	if dbName == "" {
		switch {
		case n.db != nil:
			dbName = n.db.Name()
		case ctx.GetCurrentDatabase() != "":
			dbName = ctx.GetCurrentDatabase()
		default:
			return mysql.NewSQLError(mysql.ERNoDb, mysql.SSNoDB,
				"No database selected: DP_NGRAMS('%s', …) names no database; write 'database.%s' or USE a database first", name, tblName)
		}
	}
	var db sql.Database
	if n.cat != nil {
		db, err = n.cat.Database(ctx, dbName)
		if err != nil {
			if sql.ErrDatabaseNotFound.Is(err) {
				return mysql.NewSQLError(mysql.ERBadDb, mysql.SSClientError, "Unknown database '%s' (DP_NGRAMS table argument '%s')", dbName, name)
			}
			return err
		}
	} else if n.db != nil && strings.EqualFold(n.db.Name(), dbName) {
		db = n.db // a node built without a catalog (not by go-mysql-server)
	} else {
		return mysql.NewSQLError(mysql.ERBadDb, mysql.SSClientError, "Unknown database '%s' (DP_NGRAMS table argument '%s')", dbName, name)
	}
	tbl, ok, err := db.GetTableInsensitive(ctx, tblName)
	if err != nil {
		return err
	}
	if !ok {
		return mysql.NewSQLError(mysql.ERNoSuchTable, mysql.SSUnknownTable, "Table '%s.%s' doesn't exist (DP_NGRAMS reads base tables, not views)", db.Name(), tblName)
	}
	call.db, call.table, call.tbl = db.Name(), tbl.Name(), tbl
	if err := n.checkSelect(ctx, call.db, call.table); err != nil {
		return err
	}

	text, err := findColumn(tbl.Schema(), call, textCol, "text_column")
	if err != nil {
		return err
	}
	if !isTextType(text.Type) {
		return optionsError("DP_NGRAMS: the text_column '%s' of %s.%s is %s, not text: n-grams are extracted from CHAR, VARCHAR, TEXT, BLOB, JSON, ENUM or SET columns", text.Name, call.db, call.table, strings.ToUpper(text.Type.String()))
	}
	unit, err := findColumn(tbl.Schema(), call, unitCol, "privacy_unit_column")
	if err != nil {
		return err
	}
	call.text, call.unit = text.Name, unit.Name
	return nil
}

// checkSelect refuses a table the session's account holds no SELECT
// privilege on. It asks the catalog's authorization handler, which allows
// everything when accounts are disabled (the local server).
func (n *NGrams) checkSelect(ctx *sql.Context, db, table string) error {
	if n.cat == nil || n.cat.AuthorizationHandler() == nil {
		return nil
	}
	probe := &selectProbe{Node: n, op: sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: db, Table: table}, sql.PrivilegeType_Select)}
	h := n.cat.AuthorizationHandler()
	if err := h.HandleAuthNode(ctx, h.NewQueryState(ctx), probe); err != nil {
		return err
	}
	if probe.denied {
		client := ctx.Session.Client()
		return mysql.NewSQLError(mysqlerr.TableAccessDenied, mysql.SSClientError,
			"SELECT command denied to user '%s'@'%s' for table '%s': DP_NGRAMS reads only tables the account may SELECT from", client.User, client.Address, table)
	}
	return nil
}

// selectProbe asks the authorization handler whether the session holds one
// privilege, and records the answer instead of failing, so that the refusal
// can name the table.
type selectProbe struct {
	sql.Node
	op     sql.PrivilegedOperation
	denied bool
}

func (p *selectProbe) CheckAuth(ctx *sql.Context, c sql.PrivilegedOperationChecker) bool {
	p.denied = !c.UserHasPrivileges(ctx, p.op)
	return true
}

// findColumn returns the column called name (case-insensitive; surrounding
// backquotes allowed) of sch.
func findColumn(sch sql.Schema, call *ngramsCall, name, arg string) (*sql.Column, error) {
	want := unquoteIdent(strings.TrimSpace(name))
	for _, c := range sch {
		if strings.EqualFold(c.Name, want) {
			return c, nil
		}
	}
	names := make([]string, len(sch))
	for i, c := range sch {
		names[i] = c.Name
	}
	return nil, mysql.NewSQLError(mysql.ERBadFieldError, mysql.SSBadFieldError,
		"Unknown column '%s' in table '%s.%s' (DP_NGRAMS %s): the columns are %s", want, call.db, call.table, arg, strings.Join(names, ", "))
}

// isTextType reports whether values of t are text DP_NGRAMS tokenises:
// strings (CHAR, VARCHAR, TEXT and the binary BINARY, VARBINARY, BLOB),
// JSON documents (as their JSON text), ENUM and SET (as their labels).
// Numbers, dates, times, BIT and geometry are not text.
func isTextType(t sql.Type) bool {
	return types.IsText(t) || types.IsJSON(t) || types.IsEnum(t) || types.IsSet(t)
}

// splitTableName splits 'table', 'db.table' or '`db`.`table`' (backquotes
// allowed around either part, a doubled backquote standing for one inside
// them; space around the parts ignored).
func splitTableName(s string) (db, table string, err error) {
	bad := optionsError("DP_NGRAMS: the table argument '%s' is not a table name: write 'table' or 'database.table' (backquotes allowed, as in '`my db`.`my table`')", s)
	var parts []string
	in := s
	for {
		in = strings.TrimLeft(in, " \t\r\n")
		var part string
		if strings.HasPrefix(in, "`") {
			var b strings.Builder
			i, closed := 1, false
			for ; i < len(in); i++ {
				if in[i] == '`' {
					if i+1 < len(in) && in[i+1] == '`' {
						b.WriteByte('`')
						i++
						continue
					}
					closed = true
					break
				}
				b.WriteByte(in[i])
			}
			if !closed {
				return "", "", bad
			}
			part, in = b.String(), strings.TrimLeft(in[i+1:], " \t\r\n")
		} else {
			j := strings.IndexByte(in, '.')
			if j < 0 {
				j = len(in)
			}
			part, in = strings.TrimSpace(in[:j]), in[j:]
			if strings.Contains(part, "`") {
				return "", "", bad
			}
		}
		if part == "" {
			return "", "", bad
		}
		parts = append(parts, part)
		if in == "" {
			break
		}
		if in[0] != '.' || len(parts) == 2 {
			return "", "", bad
		}
		in = in[1:]
	}
	if len(parts) == 2 {
		return parts[0], parts[1], nil
	}
	return "", parts[0], nil
}

func unquoteIdent(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		return strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	}
	return s
}

// NgramsOptions returns the extraction options of a DP_NGRAMS call: the
// options string (keys max_n, epsilon, delta, max_items, mechanism, update,
// alpha, eta, budget_split) over defaults taken from the session's dp_*
// variables p (epsilon, delta, max_items, mechanism, alpha) and from
// ngrams.Defaults (max_n 3, update weighted_gaussian, eta 0.01, a uniform
// budget_split). given says whether an options string was passed (NULL or
// absent: defaults only). Errors are MySQL error 1210 and say which option
// is wrong and what is allowed; a dp_mechanism the extraction cannot use
// (DP_SET_UNION's Laplace mechanisms, for one) is reported as coming from
// the session variable.
func NgramsOptions(p setunion.Options, options string, given bool) (ngrams.Options, error) {
	return ngramsOptions(p, options, given, "the session variable dp_mechanism")
}

// ngramsOptions is NgramsOptions with mechFrom naming where p's mechanism
// came from, for the error when the extraction cannot use it.
func ngramsOptions(p setunion.Options, options string, given bool, mechFrom string) (ngrams.Options, error) {
	o := ngrams.Defaults()
	update, mechFromSession := "", true
	if given {
		// The keys DP_NGRAMS shares with DP_SET_UNION are set in p by
		// setunion.Options.Set, as DP_SET_UNION's options string sets them.
		set := NewOptionSet(NgramsFunction)
		set.Int("max_n", &o.MaxN)
		set.SetUnionKeys(&p, "epsilon", "delta", "max_items")
		set.Func("mechanism", func(v string) error { mechFromSession = false; return p.Set("mechanism", v) })
		set.String("update", &update)
		set.SetUnionKeys(&p, "alpha")
		set.Float("eta", &o.Eta)
		set.Func("budget_split", func(v string) error { return o.Set("budget_split", v) })
		if err := set.Parse(options); err != nil {
			return ngrams.Options{}, optionsError("%s", err.Error())
		}
	}
	o.Epsilon, o.Delta, o.MaxItems = p.Epsilon, p.Delta, p.MaxItems
	mech, alpha := string(p.Mechanism), p.Alpha
	o.Mechanism = mechanismName(mech)
	if update != "" {
		o.Update = mechanismName(update)
	}
	if alpha != nil {
		o.Alpha = setunion.Float(*alpha)
	}
	if mechFromSession {
		probe := ngrams.Defaults()
		probe.Mechanism = o.Mechanism
		if err := probe.Validate(); err != nil {
			return ngrams.Options{}, optionsError("DP_NGRAMS: %s is %s, which n-gram extraction cannot use (%s); pass a mechanism in the options, e.g. 'mechanism=%s', or SET dp_mechanism = '%s'",
				mechFrom, mech, err, setunion.DefaultMechanism, setunion.DefaultMechanism)
		}
	}
	if err := o.Validate(); err != nil {
		return ngrams.Options{}, optionsError("DP_NGRAMS: %s", err.Error())
	}
	return o, nil
}

// mechanismName normalises a mechanism name; an unknown one is kept as
// given so that validation reports it with the names n-grams accept.
func mechanismName(s string) setunion.Mechanism {
	if m, err := setunion.ParseMechanism(s); err == nil {
		return m
	}
	return setunion.Mechanism(s)
}

// govern applies the Governor to a resolved call: it returns the release
// to charge and charged = true when the session is governed and the table
// protected, after checking that the privacy unit argument is the table's
// declared privacy-unit column.
func (n *NGrams) govern(ctx *sql.Context, call *ngramsCall) (release.Request, bool, error) {
	g := n.cfg.Governor
	if g == nil || !g.Governed(ctx) {
		return release.Request{}, false, nil
	}
	col, protected := g.PrivacyUnit(call.db, call.table)
	if !protected {
		return release.Request{}, false, nil
	}
	if !strings.EqualFold(unquoteIdent(call.unitArg), col) {
		client := ctx.Session.Client()
		return release.Request{}, false, mysql.NewSQLError(mysqlerr.TableAccessDenied, mysql.SSClientError,
			"DP_NGRAMS command denied to user '%s'@'%s' for table '%s': the privacy unit of the protected table %s.%s is the column '%s'; pass '%s' as the privacy_unit_column argument",
			client.User, client.Address, call.table, call.db, call.table, col, col)
	}
	cost, _ := accounting.Ngrams(call.opts)
	return release.Request{
		Cost:      cost,
		Function:  NgramsFunction,
		Database:  call.db,
		Table:     call.table,
		Epsilon:   call.opts.Epsilon,
		Delta:     call.opts.Delta,
		Mechanism: string(call.opts.Mechanism),
		Query:     ctx.Query(),
		Reuse:     release.ReuseKey{Spec: ngramsSpec(ctx, call), Fresh: !dpvars.SessionReuse(ctx)},
	}, true, nil
}

// ngramsSpec is the release specification of a call for reuse: its scan's
// Spec and the extraction's options ("" when either cannot be described:
// not reused).
func ngramsSpec(ctx *sql.Context, call *ngramsCall) string {
	scan, err := ngramsScan(ctx, call)
	if err != nil || scan.Spec() == "" {
		return ""
	}
	o, err := json.Marshal(canonicalNgrams(call.opts)) // ngramskey.go
	if err != nil {
		return ""
	}
	return "ngrams " + scan.Spec() + " options=" + string(o)
}

// RowIter implements sql.ExecSourceRel. The first call of an instance runs
// the release (charge, read, extract) before returning; later calls replay
// its rows (see NGrams).
func (n *NGrams) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	run := n.run
	if run == nil {
		return nil, errors.New("DP_NGRAMS: the table function was executed without NewInstance")
	}
	run.once.Do(func() { run.ngrams, run.err = n.extract(ctx) })
	if run.err != nil {
		return nil, run.err
	}
	return &ngramsIter{ngrams: run.ngrams}, nil
}

// extract resolves the call and makes the release (release.Run): charge a
// governed release (or reuse a stored one), read the table's text and
// privacy-unit columns, run the extraction.
func (n *NGrams) extract(ctx *sql.Context) ([]ngrams.NGram, error) {
	call, err := n.resolve(ctx)
	if err != nil {
		return nil, err
	}
	rel, charged, err := n.govern(ctx, call)
	if err != nil {
		return nil, err
	}
	ex, err := ngrams.New(call.opts)
	if err != nil {
		return nil, optionsError("DP_NGRAMS: %s", err.Error())
	}
	// The text and privacy-unit columns are read through the release scan
	// (sealed evaluation, release context): the one path by which a
	// release reads protected rows.
	scan, err := ngramsScan(ctx, call)
	if err != nil {
		return nil, err
	}
	s := release.Steps{What: "DP_NGRAMS", Check: checkNgrams}
	if charged {
		s.Gov, s.Requests = n.cfg.Governor, []release.Request{rel}
	}
	s.Read = func(ctx *sql.Context) error {
		// The table's corpus from the release index cache, when it has
		// one; else read and tokenise the rows now. Either gives the same
		// release.
		if c, ok := scan.IndexedCorpus(ctx, n.cfg.Indexes); ok {
			fromCorpus, err := ngrams.NewFromCorpus(call.opts, c)
			ex = fromCorpus
			return err
		}
		return scan.AddNgramRows(ctx, ex)
	}
	s.Mechanism = func(ctx *sql.Context) (release.Released, error) {
		res, err := ex.RunContext(ctx, n.cfg.rand())
		if err != nil {
			return release.Released{}, err
		}
		core := release.Released{Rows: make([]release.ReleasedRow, len(res.NGrams))}
		for i, g := range res.NGrams {
			core.Rows[i] = release.ReleasedRow{Key: g.Text, Values: []float64{float64(g.N)}}
		}
		return core, nil
	}
	core, err := release.Run(ctx, s)
	if err != nil {
		return nil, err
	}
	out := make([]ngrams.NGram, len(core.Rows))
	for i, r := range core.Rows {
		out[i] = ngrams.NGram{Text: r.Key, N: int(r.Values[0])}
	}
	return out, nil
}

// checkNgrams checks that a stored release is one of n-grams: one value,
// the n, per released n-gram (release.Steps.Check).
func checkNgrams(core release.Released) error {
	for _, r := range core.Rows {
		if len(r.Values) != 1 {
			return release.ErrWrongShape
		}
	}
	return nil
}

// ngramsScan compiles the scan of the call's table (release.NewNgramsScan).
func ngramsScan(ctx *sql.Context, call *ngramsCall) (*release.Scan, error) {
	return release.NewNgramsScan(ctx, call.db, call.table, call.tbl, call.unit, call.text)
}

// ngramsIter returns the released n-grams as rows.
type ngramsIter struct {
	ngrams []ngrams.NGram
	i      int
}

func (it *ngramsIter) Next(*sql.Context) (sql.Row, error) {
	if it.i >= len(it.ngrams) {
		return nil, io.EOF
	}
	g := it.ngrams[it.i]
	it.i++
	return sql.Row{g.Text, int32(g.N)}, nil
}

func (it *ngramsIter) Close(*sql.Context) error { return nil }
