// Package governance implements the policy of dpsql's governed server on
// top of its configuration and its privacy-budget ledger:
//
//   - Governor, the release.Governor of the engine: which tables are
//     protected (and by which privacy-unit column), which sessions are
//     governed (every account but the configured administrators), and the
//     budget checks and charges of their releases through package ledger;
//   - release reuse (Reuse, Governor.ChargeOrReuse): an identical release
//     request within a window is answered from the release stored in the
//     ledger, at no charge — post-processing of a release already made;
//     identity is decided from the release's specification, the scope, the
//     table's configuration and its load generation, never from the data;
//   - BudgetFunction, the DP_BUDGET() table function that shows an analyst
//     their spent and remaining (ε, δ) per database (administrators: every
//     analyst's), and AuditFunction, DP_AUDIT(), the ledger's audit records
//     (analysts: their own; administrators: all), charges and reuses;
//   - Rules, analyzer rules that keep analysts from changing global system
//     variables, from setting dp_epsilon/dp_delta above their per-release
//     caps, from killing other users' connections and from watching other
//     sessions (SHOW PROCESSLIST, information_schema.processlist);
//   - InstallAccounts, which puts the configured accounts into
//     go-mysql-server's MySQLDb with their grants.
//
// Roles come from the configuration, never from grants: a session is
// governed unless its user is a configured administrator, so an account
// created with CREATE USER at run time is treated as an analyst without
// budget (it can read public tables it is granted and obtain no release).
package governance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/internal/mysqlerr"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/ledger"
)

// Role is what an account may do.
type Role int

const (
	// Unknown is an account the configuration does not name (created at
	// run time by an administrator, or no session at all). It is governed
	// like an analyst and has no budget.
	Unknown Role = iota
	// Admin runs any SQL, reads protected tables and is never charged.
	Admin
	// Analyst reads public tables and obtains DP releases over protected
	// tables, each charged to their budget on the table's database.
	Analyst
)

func (r Role) String() string {
	switch r {
	case Admin:
		return "admin"
	case Analyst:
		return "analyst"
	}
	return "unknown"
}

// ProtectedTable declares a protected table and its privacy-unit column.
type ProtectedTable struct {
	Database, Table string
	// PrivacyUnit is the column identifying the person whose rows are
	// protected together.
	PrivacyUnit string
	// Source describes where the table's rows come from, for its load
	// generation (ledger.LoadGeneration): the dataset's configuration and
	// the file's identity, never its content. Empty: unknown, every start
	// is a new generation (so no release is reused across restarts).
	Source string
}

// PublicTable names a table the configuration declares public.
type PublicTable struct{ Database, Table string }

// Options configure New.
type Options struct {
	// Protected lists the protected tables.
	Protected []ProtectedTable
	// Public lists the tables the configuration declares public: the only
	// tables that may enrich a private release (IN / EXISTS subqueries,
	// release.PublicTables). A table both protected and public is
	// protected.
	Public []PublicTable
	// Admins and Analysts are user names (MySQL account names without the
	// host: the configuration gives each name one role).
	Admins, Analysts []string
	// Ledger holds the analysts' budgets (already set with SetLimits).
	Ledger *ledger.Ledger
	// Bounds bound every release's ε and δ (zero fields: DefaultBounds).
	Bounds Bounds
	// Reuse configures release reuse (the zero value: off).
	Reuse Reuse
}

// Bounds are the range a governed release's (ε, δ) must lie in, whatever
// the analyst's budget: ε below MinEpsilon would make releases, and the
// side channels of their running time, almost free; δ above MaxDelta
// releases values that one person holds with probability about δ each (at
// δ = 0.5 a release returned dozens of one-person secrets); δ below
// MinDelta only makes the calibration numerically fragile.
type Bounds struct {
	MinEpsilon, MinDelta, MaxDelta float64
}

// DefaultBounds: ε ≥ 0.001, 1e-15 ≤ δ ≤ 1e-5.
func DefaultBounds() Bounds { return Bounds{MinEpsilon: 1e-3, MinDelta: 1e-15, MaxDelta: 1e-5} }

func (b Bounds) withDefaults() Bounds {
	d := DefaultBounds()
	if b.MinEpsilon <= 0 {
		b.MinEpsilon = d.MinEpsilon
	}
	if b.MinDelta <= 0 {
		b.MinDelta = d.MinDelta
	}
	if b.MaxDelta <= 0 {
		b.MaxDelta = d.MaxDelta
	}
	return b
}

// check refuses a release outside the bounds (MySQL error 1210), before
// anything is charged.
func (b Bounds) check(r release.Request) error {
	switch {
	case r.Epsilon < b.MinEpsilon:
		return mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState,
			"%s: ε=%g is below the server's floor of %g (limits.min_epsilon in its configuration): with a smaller ε, releases would be almost free", r.Function, r.Epsilon, b.MinEpsilon)
	case r.Delta < b.MinDelta:
		return mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState,
			"%s: δ=%g is below the server's floor of %g (limits.min_delta in its configuration)", r.Function, r.Delta, b.MinDelta)
	case r.Delta > b.MaxDelta:
		return mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState,
			"%s: δ=%g is above the server's ceiling of %g (limits.max_delta in its configuration): a release publishes each value one person holds with probability about δ, so a large δ gives away individual secrets; use a smaller dp_delta", r.Function, r.Delta, b.MaxDelta)
	}
	return nil
}

// Governor implements release.Governor over a ledger. It is safe for
// concurrent use.
type Governor struct {
	protected map[string]string // lower(db) + "\x00" + lower(table) -> privacy unit
	public    map[string]bool   // same keys: declared public
	roles     map[string]Role
	ledger    *ledger.Ledger
	bounds    Bounds
	reuse     Reuse
	versions  map[string]string // tableKey -> "generation N, privacy unit C"; versionMu guards it (reload.go)
	versionMu sync.RWMutex
	closing   atomic.Bool

	mu sync.Mutex
	// inflight counts releases between Check and the end of Charge, so that
	// Close can wait for charges being written.
	inflight sync.WaitGroup

	// flights are the reusable releases being made, by reuse key (join).
	flightMu sync.Mutex
	flights  map[string]*flight
}

var (
	_ release.Governor     = (*Governor)(nil)
	_ release.PublicTables = (*Governor)(nil)
)

// New returns a governor. Every analyst should have budgets in the ledger;
// one without a budget on a database is refused there with a message
// saying so.
func New(o Options) (*Governor, error) {
	if o.Ledger == nil {
		return nil, errors.New("governance: a governor needs a ledger")
	}
	g := &Governor{protected: map[string]string{}, roles: map[string]Role{}, ledger: o.Ledger, bounds: o.Bounds.withDefaults(),
		reuse: o.Reuse, versions: map[string]string{}}
	if err := o.Reuse.validate(); err != nil {
		return nil, err
	}
	for _, t := range o.Protected {
		if t.Database == "" || t.Table == "" || t.PrivacyUnit == "" {
			return nil, fmt.Errorf("governance: protected table %q.%q needs a database, a table and a privacy unit", t.Database, t.Table)
		}
		g.protected[tableKey(t.Database, t.Table)] = t.PrivacyUnit
		source := ""
		if t.Source != "" {
			// The protection is part of the version: a new privacy unit
			// is a new generation.
			source = "privacy unit " + strings.ToLower(t.PrivacyUnit) + "; " + t.Source
		}
		gen, err := o.Ledger.LoadGeneration(t.Database, t.Table, source)
		if err != nil {
			return nil, fmt.Errorf("governance: load generation of %s.%s: %w", t.Database, t.Table, err)
		}
		g.versions[tableKey(t.Database, t.Table)] = fmt.Sprintf("generation %d, privacy unit %s", gen, strings.ToLower(t.PrivacyUnit))
	}
	g.public = map[string]bool{}
	for _, t := range o.Public {
		if k := tableKey(t.Database, t.Table); g.protected[k] == "" {
			g.public[k] = true
		}
	}
	for _, u := range o.Admins {
		g.roles[u] = Admin
	}
	for _, u := range o.Analysts {
		if g.roles[u] == Admin {
			return nil, fmt.Errorf("governance: user %q is both an admin and an analyst", u)
		}
		g.roles[u] = Analyst
	}
	return g, nil
}

func tableKey(db, table string) string { return strings.ToLower(db) + "\x00" + strings.ToLower(table) }

// Ledger returns the ledger the governor charges.
func (g *Governor) Ledger() *ledger.Ledger { return g.ledger }

// PrivacyUnit implements release.Governor.
func (g *Governor) PrivacyUnit(database, table string) (string, bool) {
	c, ok := g.protected[tableKey(database, table)]
	return c, ok
}

// Public implements release.PublicTables: whether the configuration
// declares database.table public. Tables are fixed at start (the column
// store is read-only: no CREATE TABLE, INSERT or DROP at run time), so a
// declared name always denotes the table loaded from the configuration.
func (g *Governor) Public(database, table string) bool {
	return g.public[tableKey(database, table)]
}

// User returns the user name of ctx's session ("" without a session).
func User(ctx *sql.Context) string {
	if ctx == nil || ctx.Session == nil {
		return ""
	}
	return ctx.Session.Client().User
}

// Role returns the role of a user name.
func (g *Governor) Role(user string) Role { return g.roles[user] }

// SessionRole returns the role of ctx's user (Unknown without a session).
func (g *Governor) SessionRole(ctx *sql.Context) Role {
	if ctx == nil || ctx.Session == nil {
		return Unknown
	}
	return g.roles[User(ctx)]
}

// Governed implements release.Governor: every session but an
// administrator's is governed (fail closed).
func (g *Governor) Governed(ctx *sql.Context) bool { return g.SessionRole(ctx) != Admin }

// Check implements release.Governor: the ledger's advisory check, for
// governed sessions.
func (g *Governor) Check(ctx *sql.Context, r release.Request) error {
	if !g.Governed(ctx) {
		return nil
	}
	if g.closing.Load() {
		return errShutdown()
	}
	if err := g.bounds.check(r); err != nil {
		return err
	}
	if g.reusable(ctx, r) {
		return nil // answered from a stored release, whatever the budget left
	}
	if err := g.ledger.CheckCost(User(ctx), r.Database, r.LedgerCost()); err != nil {
		return chargeError(err)
	}
	return nil
}

// Charge implements release.Governor: the release is recorded durably in
// the ledger (synced to disk) before Charge returns nil. Administrators are
// not charged.
func (g *Governor) Charge(ctx *sql.Context, r release.Request) error {
	if !g.Governed(ctx) {
		return nil
	}
	_, err := g.charge(ctx, r)
	return err
}

// charge records r for a governed session and returns its receipt.
func (g *Governor) charge(ctx *sql.Context, r release.Request) (ledger.Receipt, error) {
	if err := g.bounds.check(r); err != nil {
		return ledger.Receipt{}, err
	}
	done, err := g.enter()
	if err != nil {
		return ledger.Receipt{}, err
	}
	defer done()
	rec, err := g.ledger.ChargeCost(background(ctx), User(ctx), r.Database, r.LedgerCost(), meta(ctx, r))
	if err != nil {
		return ledger.Receipt{}, chargeError(err)
	}
	return rec, nil
}

// enter registers a write to the ledger that Close must wait for; it fails
// once the server is shutting down.
func (g *Governor) enter() (done func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing.Load() {
		return nil, errShutdown()
	}
	g.inflight.Add(1)
	return g.inflight.Done, nil
}

func background(ctx *sql.Context) context.Context {
	if ctx != nil {
		return ctx
	}
	return context.Background()
}

// meta is the audit description of r in ctx's session.
func meta(ctx *sql.Context, r release.Request) ledger.Meta {
	m := ledger.Meta{Description: describe(r), Mechanism: r.Mechanism, Function: r.Function, Table: r.Table}
	if ctx != nil && ctx.Session != nil {
		m.Connection = ctx.Session.ID()
	}
	return m
}

// describe is the audit description of a release: what was released over
// which table, then the statement.
func describe(r release.Request) string {
	var b strings.Builder
	b.WriteString(r.Function)
	if r.Table != "" {
		fmt.Fprintf(&b, " over %s.%s", r.Database, r.Table)
	}
	if r.Query != "" {
		b.WriteString(": ")
		b.WriteString(r.Query)
	}
	return b.String()
}

// Close makes every later Check and Charge fail (the server is shutting
// down) and waits for charges being written to finish; the ledger may be
// closed after it returns.
func (g *Governor) Close() {
	g.mu.Lock()
	g.closing.Store(true)
	g.mu.Unlock()
	g.inflight.Wait()
}

// MySQL errors of refused releases.
const (
	// CodeNoBudget is returned to an analyst without a budget on the
	// database (MySQL's ER_TABLEACCESS_DENIED_ERROR, as for other refusals
	// to read protected rows).
	CodeNoBudget = mysqlerr.TableAccessDenied
	// CodeBudget is returned when a release exceeds the remaining budget
	// or the per-release cap (MySQL's ER_USER_LIMIT_REACHED).
	CodeBudget = mysql.ERUserLimitReached
)

// chargeError turns a ledger refusal into a MySQL error that keeps the
// ledger's message (what was asked, what remains, what to do).
func chargeError(err error) error {
	var ce *ledger.ChargeError
	if !errors.As(err, &ce) {
		if errors.Is(err, context.Canceled) {
			return mysql.NewSQLError(mysql.ERQueryInterrupted, mysql.SSUnknownSQLState, "query execution was interrupted before the release was charged; nothing was released or charged")
		}
		return fmt.Errorf("privacy budget ledger: %w", err)
	}
	if errors.Is(err, ledger.ErrNoBudget) {
		return mysql.NewSQLError(CodeNoBudget, mysql.SSAccessDeniedError, "%s", ce.Error())
	}
	return mysql.NewSQLError(CodeBudget, mysql.SSClientError, "%s", ce.Error())
}

func errShutdown() error {
	return mysql.NewSQLError(mysql.ERServerShutdown, mysql.SSServerShutdown, "the server is shutting down: no new release is charged; reconnect when it is back")
}
