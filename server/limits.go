package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	gms "github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/sirupsen/logrus"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/internal/mysqlerr"
)

// Limits bound what one statement, one account and one connection may use,
// so that no client can stop the server or hold it for everyone else. A
// statement beyond a limit gets a MySQL error that names the limit and its
// setting; the server goes on serving. Zero fields take DefaultLimits.
type Limits struct {
	// MaxStatementBytes bounds a statement's text.
	MaxStatementBytes int
	// MaxStatementTokens bounds its tokens (words, literals, operators).
	MaxStatementTokens int
	// MaxOperators bounds its operator tokens (+, AND, =, …): a chain of n
	// operators is an expression n levels deep, which go-mysql-server plans
	// recursively (a 1M-term sum overflowed its stack and ended the process).
	MaxOperators int
	// MaxNesting bounds the depth of parentheses.
	MaxNesting int
	// MaxInList bounds the items of one IN (…) list (go-mysql-server plans
	// long lists in quadratic time: 200,000 items planned for minutes).
	MaxInList int
	// MaxExecutionTime bounds the running time of a governed session's
	// statement (analysts); 0 after defaults means DefaultLimits'.
	MaxExecutionTime time.Duration
	// MaxStringBytes bounds every string a function produces outside a
	// release (inside one, the release's own value limit applies).
	MaxStringBytes int
	// MaxStatementsPerAccount bounds the statements one account runs at a
	// time, over all its connections.
	MaxStatementsPerAccount int
	// MaxConnections bounds the authenticated connections;
	// AdminConnections of them are kept for administrators.
	MaxConnections   int
	AdminConnections int
	// MaxConnectionsPerAccount bounds one account's connections.
	MaxConnectionsPerAccount int
	// HandshakeTimeout closes a connection that has not authenticated in
	// that time; MaxPendingHandshakes bounds such connections (the oldest
	// is closed to admit a new one).
	HandshakeTimeout     time.Duration
	MaxPendingHandshakes int
	// MaxPendingHandshakesPerAddress bounds the pending connections from
	// one client address (default: half of MaxPendingHandshakes), so that
	// a flood from one address leaves places to the others.
	MaxPendingHandshakesPerAddress int
	// MaxMemoryBytes bounds the memory the process holds: above it, the
	// most recent statements of governed sessions are stopped (error 1041)
	// until it is below again. 0 takes DefaultMaxMemory; negative: no
	// bound.
	MaxMemoryBytes int64
	// MaxUserVariableBytes bounds the bytes a session's user variables
	// (SET @v = …) hold together: they outlive the statement, so neither
	// max_execution_time nor the memory guard frees them.
	MaxUserVariableBytes int
}

// DefaultLimits are the limits of a server whose configuration sets none.
func DefaultLimits() Limits {
	return Limits{
		MaxStatementBytes:        1 << 20,
		MaxStatementTokens:       100_000,
		MaxOperators:             1_000,
		MaxNesting:               200,
		MaxInList:                10_000,
		MaxExecutionTime:         10 * time.Minute,
		MaxStringBytes:           engine.DefaultMaxStringBytes,
		MaxStatementsPerAccount:  8,
		MaxConnections:           256,
		AdminConnections:         8,
		MaxConnectionsPerAccount: 64,
		HandshakeTimeout:         10 * time.Second,
		MaxPendingHandshakes:     64,
		MaxUserVariableBytes:     16 << 20,
	}
}

// WithDefaults returns l with its zero fields set from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxStatementBytes, d.MaxStatementBytes)
	set(&l.MaxStatementTokens, d.MaxStatementTokens)
	set(&l.MaxOperators, d.MaxOperators)
	set(&l.MaxNesting, d.MaxNesting)
	set(&l.MaxInList, d.MaxInList)
	set(&l.MaxStringBytes, d.MaxStringBytes)
	set(&l.MaxStatementsPerAccount, d.MaxStatementsPerAccount)
	set(&l.MaxConnections, d.MaxConnections)
	set(&l.MaxConnectionsPerAccount, d.MaxConnectionsPerAccount)
	set(&l.MaxPendingHandshakes, d.MaxPendingHandshakes)
	if l.MaxPendingHandshakesPerAddress <= 0 {
		l.MaxPendingHandshakesPerAddress = max(1, l.MaxPendingHandshakes/2)
	}
	set(&l.MaxUserVariableBytes, d.MaxUserVariableBytes)
	if l.AdminConnections < 0 {
		l.AdminConnections = 0
	} else if l.AdminConnections == 0 {
		l.AdminConnections = d.AdminConnections
	}
	l.AdminConnections = min(l.AdminConnections, l.MaxConnections)
	if l.MaxExecutionTime <= 0 {
		l.MaxExecutionTime = d.MaxExecutionTime
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = d.HandshakeTimeout
	}
	if l.MaxMemoryBytes == 0 {
		l.MaxMemoryBytes = int64(DefaultMaxMemory())
		if l.MaxMemoryBytes == 0 {
			l.MaxMemoryBytes = -1
		}
	}
	return l
}

// limitError is the error of a statement beyond one of the limits:
// code, the limit's name in the configuration and the observed and allowed
// values.
func limitError(code int, state, what, setting string, got, max any) error {
	return mysql.NewSQLError(code, state, "%s: %v, more than the limit of %v (limits.%s in the server's configuration)", what, got, max, setting)
}

// CheckStatementText applies the limits that need only the text of a
// statement: bytes, tokens, operators, nesting and IN-list items. It scans tokens without
// building a syntax tree, so it cannot itself be made to recurse.
func (l Limits) CheckStatementText(text string) error {
	if len(text) > l.MaxStatementBytes {
		return limitError(mysql.ERNetPacketTooLarge, "08S01", "statement too long", "max_statement_bytes", fmt.Sprintf("%d bytes", len(text)), l.MaxStatementBytes)
	}
	tkn := ast.NewStringTokenizer(text)
	tokens, ops, depth, prev := 0, 0, 0, 0
	// IN lists open at depths lists, with items items so far (the parser
	// check InListCheck counts them too, but go-mysql-server reports a
	// parser check's error as a syntax error, 1105).
	var lists, items []int
	for {
		typ, _ := tkn.Scan()
		if typ == 0 || typ == ast.LEX_ERROR {
			return nil
		}
		if tokens++; tokens > l.MaxStatementTokens {
			return limitError(mysql.ERNetPacketTooLarge, "08S01", "statement too long", "max_statement_tokens", fmt.Sprintf("over %d tokens", l.MaxStatementTokens), l.MaxStatementTokens)
		}
		last := prev
		prev = typ
		switch {
		case typ == '(':
			if depth++; depth > l.MaxNesting {
				return limitError(ERTooHighLevelOfNesting, "HY000", "expression nested too deeply", "max_nesting", fmt.Sprintf("over %d parentheses", l.MaxNesting), l.MaxNesting)
			}
			if last == ast.IN {
				lists, items = append(lists, depth), append(items, 1)
			}
		case typ == ',':
			if k := len(lists) - 1; k >= 0 && lists[k] == depth {
				if items[k]++; items[k] > l.MaxInList {
					return limitError(mysql.ERNetPacketTooLarge, "08S01", "IN list too long", "max_in_list", fmt.Sprintf("over %d items", l.MaxInList), l.MaxInList)
				}
			}
		case typ == ')':
			if k := len(lists) - 1; k >= 0 && lists[k] == depth {
				lists, items = lists[:k], items[:k]
			}
			depth--
		case isOperator(typ):
			if ops++; ops > l.MaxOperators {
				return limitError(ERTooHighLevelOfNesting, "HY000", "expression too large", "max_operators", fmt.Sprintf("over %d operators", l.MaxOperators), l.MaxOperators)
			}
		}
	}
}

// ERTooHighLevelOfNesting is MySQL's ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT.
const ERTooHighLevelOfNesting = mysqlerr.TooHighLevelOfNestingForSelect

// isOperator reports whether a token type is a unary or binary operator.
func isOperator(typ int) bool {
	switch typ {
	case '+', '-', '*', '/', '%', '&', '|', '^', '~', '!', '=', '<', '>',
		ast.AND, ast.OR, ast.XOR, ast.NOT, ast.LE, ast.GE, ast.NE, ast.NULL_SAFE_EQUAL, ast.SHIFT_LEFT, ast.SHIFT_RIGHT,
		ast.DIV, ast.MOD, ast.LIKE, ast.REGEXP, ast.IN, ast.IS, ast.BETWEEN, ast.CASE, ast.WHEN,
		ast.JSON_EXTRACT_OP, ast.JSON_UNQUOTE_EXTRACT_OP:
		return true
	}
	return false
}

// InListCheck is a planner check (planner.Check) refusing IN lists longer
// than l.MaxInList.
func (l Limits) InListCheck(stmt ast.Statement, _ string, _ error) error {
	if stmt == nil {
		return nil
	}
	var err error
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		if err != nil {
			return false, nil
		}
		if c, ok := n.(*ast.ComparisonExpr); ok && (c.Operator == ast.InStr || c.Operator == ast.NotInStr) {
			if t, ok := c.Right.(ast.ValTuple); ok && len(t) > l.MaxInList {
				err = limitError(mysql.ERNetPacketTooLarge, "08S01", "IN list too long", "max_in_list", fmt.Sprintf("%d items", len(t)), l.MaxInList)
				return false, nil
			}
		}
		return true, nil
	}, stmt)
	return err
}

// statementGuard is the server's interceptor: it applies the text limits,
// the per-account concurrency limit and, for governed sessions, the
// execution time limit to every statement, and turns a panic anywhere in
// statement handling into an error for that statement alone (logged for
// the administrator, without the values involved).
type statementGuard struct {
	lim      Limits
	governed func(user string) bool
	log      *logrus.Logger

	mem *memoryGuard // nil: no memory bound
	// paths hides server paths in governed users' errors (nil: none).
	paths *pathScrubber
	// sessions iterates over the server's sessions (the session's
	// max_execution_time; nil: none).
	sessions func(func(sql.Session) (bool, error)) error

	mu      sync.Mutex
	running map[string]int
}

var _ gms.Interceptor = (*statementGuard)(nil)

func newStatementGuard(lim Limits, governed func(string) bool, log *logrus.Logger) *statementGuard {
	if governed == nil {
		governed = func(string) bool { return false }
	}
	if log == nil {
		log = logrus.StandardLogger()
	}
	g := &statementGuard{lim: lim, governed: governed, log: log, running: map[string]int{}}
	if lim.MaxMemoryBytes > 0 {
		g.mem = newMemoryGuard(uint64(lim.MaxMemoryBytes), log)
	}
	return g
}

func (g *statementGuard) Priority() int { return 0 }

// enter counts a statement of user, or refuses it beyond the limit.
func (g *statementGuard) enter(user string) (func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[user] >= g.lim.MaxStatementsPerAccount {
		return nil, mysql.NewSQLError(mysql.ERUserLimitReached, "42000",
			"account '%s' is already running %d statements: wait for one to end (limits.max_statements_per_account in the server's configuration)", user, g.running[user])
	}
	g.running[user]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.running[user]--; g.running[user] <= 0 {
			delete(g.running, user)
		}
	}, nil
}

// deadline bounds a governed session's statement (query is its text) by
// the configured limit, or the session's max_execution_time below it
// (effectiveTimeout), and cancels any statement whose client disconnects.
func (g *statementGuard) deadline(ctx context.Context, c *mysql.Conn, query string) (context.Context, context.CancelFunc) {
	if !g.governed(c.User) {
		ctx, cancel := context.WithCancel(ctx)
		cancelOnDisconnect(ctx, c, cancel)
		return ctx, cancel
	}
	t := effectiveTimeout(g.lim.MaxExecutionTime, g.sessionMaxExecutionTime(c.ConnectionID), isSelect(query))
	ctx = context.WithValue(ctx, timeoutKey{}, t)
	ctx, cancelCause := context.WithCancelCause(ctx)
	ctx, cancelTimeout := context.WithTimeout(ctx, t.d)
	unwatch := func() {}
	if g.mem != nil {
		unwatch = g.mem.watch(cancelCause)
	}
	cancel := func() {
		unwatch()
		cancelTimeout()
		cancelCause(context.Canceled)
	}
	cancelOnDisconnect(ctx, c, cancel)
	return ctx, cancel
}

// finish maps the outcome of a statement: a timeout becomes MySQL's 3024
// naming the setting, a cancellation (KILL QUERY) 1317, and a panic caught
// by go-mysql-server loses its text.
func (g *statementGuard) finish(ctx context.Context, c *mysql.Conn, err error) error {
	if err == nil {
		return nil
	}
	if g.governed(c.User) {
		return g.paths.scrubError(g.finishError(ctx, c, err))
	}
	return g.finishError(ctx, c, err)
}

// finishError is finish's mapping, before governed users' errors lose
// the server's paths.
func (g *statementGuard) finishError(ctx context.Context, c *mysql.Conn, err error) error {
	if errors.Is(context.Cause(ctx), errMemory) && g.mem != nil {
		return g.mem.memoryError()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return mysql.NewSQLError(mysql.ERQueryTimeout, "HY000", "%s", timeoutOf(ctx, g.lim.MaxExecutionTime).message(g.lim.MaxExecutionTime))
	}
	var se *mysql.SQLError
	if errors.Is(err, context.Canceled) || (errors.As(err, &se) && se.Num == mysql.ERUnknownError && se.Message == context.Canceled.Error()) {
		// KILL QUERY cancels the statement's context; MySQL answers 1317.
		return mysql.NewSQLError(mysql.ERQueryInterrupted, "70100", "Query execution was interrupted")
	}
	if msg := err.Error(); strings.Contains(msg, "handler caught panic") {
		g.log.Errorf("dpsql: go-mysql-server caught a panic in a statement of connection %d (user %s); the statement failed, the server goes on", c.ConnectionID, c.User)
		return errInternal()
	}
	return mysqlError(err)
}

func errInternal() error {
	return mysql.NewSQLError(mysql.ERUnknownError, "HY000",
		"internal error while handling the statement (a panic in go-mysql-server); the statement was stopped, the connection and the server go on, and the administrator's log has the details")
}

// stackArgs matches the argument words of a goroutine stack's frames.
var stackArgs = regexp.MustCompile(`\((0x[0-9a-f]+|\.\.\.|, |\{|\}|0x[0-9a-f]+\?)*\)`)

// recovered turns a panic into an error and logs where it happened: the
// panic's type and the stack without argument values (a panic value, or
// an argument, may carry data).
func (g *statementGuard) recovered(c *mysql.Conn, err *error) {
	r := recover()
	if r == nil {
		return
	}
	stack := stackArgs.ReplaceAllString(string(debug.Stack()), "(…)")
	g.log.Errorf("dpsql: panic (%T) in a statement of connection %d (user %s); the statement failed, the server goes on:\n%s", r, c.ConnectionID, c.User, stack)
	*err = errInternal()
}

// Query implements gms.Interceptor.
func (g *statementGuard) Query(ctx context.Context, chain gms.Chain, c *mysql.Conn, query string, callback func(*sqltypes.Result, bool) error) (err error) {
	defer g.recovered(c, &err)
	if err := g.lim.CheckStatementText(query); err != nil {
		return err
	}
	leave, err := g.enter(c.User)
	if err != nil {
		return err
	}
	defer leave()
	ctx, cancel := g.deadline(ctx, c, query)
	defer cancel()
	return g.finish(ctx, c, chain.ComQuery(ctx, c, query, callback))
}

// MultiQuery implements gms.Interceptor.
func (g *statementGuard) MultiQuery(ctx context.Context, chain gms.Chain, c *mysql.Conn, query string, callback func(*sqltypes.Result, bool) error) (rest string, err error) {
	defer g.recovered(c, &err)
	if err := g.lim.CheckStatementText(query); err != nil {
		return "", err
	}
	leave, err := g.enter(c.User)
	if err != nil {
		return "", err
	}
	defer leave()
	ctx, cancel := g.deadline(ctx, c, query)
	defer cancel()
	rest, err = chain.ComMultiQuery(ctx, c, query, callback)
	return rest, g.finish(ctx, c, err)
}

// Prepare implements gms.Interceptor.
func (g *statementGuard) Prepare(ctx context.Context, chain gms.Chain, c *mysql.Conn, query string, prepare *mysql.PrepareData) (_ []*querypb.Field, err error) {
	defer g.recovered(c, &err)
	if err := g.lim.CheckStatementText(query); err != nil {
		return nil, err
	}
	fields, err := chain.ComPrepare(ctx, c, query, prepare)
	return fields, g.finish(ctx, c, err)
}

// StmtExecute implements gms.Interceptor.
func (g *statementGuard) StmtExecute(ctx context.Context, chain gms.Chain, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) (err error) {
	defer g.recovered(c, &err)
	leave, err := g.enter(c.User)
	if err != nil {
		return err
	}
	defer leave()
	ctx, cancel := g.deadline(ctx, c, prepare.PrepareStmt)
	defer cancel()
	return g.finish(ctx, c, chain.ComStmtExecute(ctx, c, prepare, callback))
}

// ParsedQuery implements gms.Interceptor; go-mysql-server's handler does
// not dispatch parsed queries through interceptors.
func (g *statementGuard) ParsedQuery(gms.Chain, *mysql.Conn, string, ast.Statement, func(*sqltypes.Result, bool) error) error {
	return errors.New("dpsql: parsed queries are not supported")
}
