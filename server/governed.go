// The governed server: NewGoverned assembles it from a configuration
// (package config): it opens the privacy-budget ledger in the data
// directory, loads the datasets into the column store, builds the engine
// with the analyst rules and the budget governor, installs the accounts,
// and serves the MySQL protocol (with TLS when configured) until
// Shutdown.
//
// Roles: administrators (full SQL, never charged) and analysts (public
// tables, and DP releases over protected tables charged to their budget);
// see package governance. The embedded default of `dpsql serve` without a
// configuration is built by Demo.

package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/lookup"
	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/governance"
	"github.com/dpsql/dpsql/server/ledger"
	"github.com/dpsql/dpsql/server/storage"
)

// ConnReadTimeout is the connection read timeout of the governed server:
// connections idle that long are closed, and a statement may take that
// long before its first row (a DP release computes everything before its
// first row). Eight hours, MySQL's default wait_timeout.
const ConnReadTimeout = 8 * time.Hour

// FilesDir is the directory inside the data directory that administrators'
// LOAD_FILE, SELECT … INTO OUTFILE and LOAD DATA are confined to
// (secure_file_priv).
const FilesDir = "files"

// GovernedOptions configure New.
type GovernedOptions struct {
	// Config is a loaded configuration (config.Load). Its datasets are
	// loaded from their files; its accounts, budgets, defaults, TLS and
	// data directory are used as they are.
	Config *config.Config
	// Databases are served besides the configuration's datasets (the
	// embedded default's demo database); their protected tables are listed
	// in Protected, every other table of theirs is public.
	Databases []*storage.Database
	Protected []governance.ProtectedTable
	// Listener, when set, is used instead of listening on Config.Listen
	// (tests pass one on 127.0.0.1:0).
	Listener net.Listener
	// Log receives what the server reports while starting: loading
	// progress, each table loaded, the accounts. Nil: nothing.
	Log io.Writer
	// Functions configures the DP functions (tests inject seeded
	// randomness; leave it zero in production). Its Governor is set by New.
	Functions functions.Config
	// LedgerLockTimeout is how long to wait for another process to release
	// the ledger (0: ledger.DefaultLockTimeout).
	LedgerLockTimeout time.Duration
	// ConnReadTimeout overrides the connection read timeout (0:
	// ConnReadTimeout). Tests set a tight one to check that a release
	// outlasting it ends cleanly.
	ConnReadTimeout time.Duration
}

// Governed is a governed dpsql server.
type Governed struct {
	cfg    *config.Config
	ledger *ledger.Ledger
	gov    *governance.Governor
	engine *sqle.Engine
	srv    *Server
	log    io.Writer
	// indexes are the release indexes (nil: none).
	indexes *release.Indexes
	// datasets reloads and refreshes the datasets (reload.go).
	datasets *datasets
	// globals holds the global system variables the server set (the
	// configured dp_* defaults, secure_file_priv) as they were before, for
	// Shutdown to restore: they are the process's, not the server's.
	globals map[string]any

	shutdown struct {
		once     sync.Once
		canceled int
		err      error
	}
}

// NewGoverned starts everything but accepting connections: it checks the files of
// the configuration, listens (failing at once if the address is in use),
// opens the ledger (failing at once if another dpsql holds it), applies the
// configured budgets, loads the datasets, builds the engine and installs
// the accounts. Serve accepts
// connections; Shutdown stops and releases everything.
func NewGoverned(o GovernedOptions) (_ *Governed, err error) {
	cfg := o.Config
	if cfg == nil {
		return nil, errors.New("governed: no configuration")
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	if err := cfg.CheckFiles(); err != nil {
		return nil, err
	}

	// The address first, then the ledger: a second server on the same port
	// or the same data directory fails before loading anything.
	ln := o.Listener
	if ln == nil {
		if ln, err = Listen(cfg.Listen); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				ln.Close()
			}
		}()
	}
	l, err := openLedger(cfg, o.LedgerLockTimeout, logw)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()

	// Data.
	p, err := storage.NewProvider()
	if err != nil {
		return nil, err
	}
	lim := serverLimits(cfg.Limits)
	ds := newDatasets(p, logw, uint64(max(lim.MaxMemoryBytes, 0)))
	defer func() {
		if err != nil {
			ds.close()
		}
	}()
	tables, err := loadData(o, ds, p)
	if err != nil {
		return nil, err
	}
	gov, err := newGovernor(cfg, l, p, tables)
	if err != nil {
		return nil, err
	}
	protected := tables.protected
	if err := p.RegisterTableFunction(governance.BudgetFunction(gov), governance.AuditFunction(gov),
		datasetsFunction(ds, gov), reloadFunction(ds, gov)); err != nil {
		return nil, err
	}
	fcfg := o.Functions
	fcfg.Governor = gov
	dpvars.AllowUnprovenMechanisms(cfg.AllowUnprovenMechanisms)
	warnMemory(lim, logw)
	popts, indexes := policyOptions(cfg, &fcfg, ds, p, protected, logw)
	e, err := NewEngine(Config{
		Provider:  p,
		Functions: fcfg,
		Rules:     append(planner.PolicyRules(gov, popts...), gov.Rules()...),
		Checks:    []planner.Check{governance.KillCheck},
		Limits:    lim,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	globals := saveGlobals()
	defer func() {
		if err != nil {
			restoreGlobals(globals)
		}
	}()
	if err := setDefaults(cfg.Defaults); err != nil {
		return nil, err
	}
	if err := confineFiles(cfg.DataDir); err != nil {
		return nil, err
	}
	if err := createViews(e, cfg, logw); err != nil {
		return nil, err
	}
	defaultDB, err := installAccounts(e, cfg, p, gov, logw)
	if err != nil {
		return nil, err
	}
	scfg, err := serverConfig(o, ln, lim, gov, defaultDB)
	if err != nil {
		return nil, err
	}
	srv, err := NewServer(e, scfg)
	if err != nil {
		return nil, err
	}
	ds.start(gov)
	return &Governed{cfg: cfg, ledger: l, gov: gov, engine: e, srv: srv, log: logw, indexes: indexes, globals: globals, datasets: ds}, nil
}

// policyOptions returns the planner's options for cfg — the release limits,
// the tables' configured defaults, the release indexes (prebuilt for the
// protected tables, and again after each reload) and the log — and the
// indexes (nil when release_index_bytes is -1); it gives the indexes and
// the defaults to the functions' configuration fcfg too.
func policyOptions(cfg *config.Config, fcfg *functions.Config, ds *datasets, p *storage.Provider, protected []governance.ProtectedTable, logw io.Writer) ([]planner.PolicyOption, *release.Indexes) {
	defaults := tableDefaults(cfg) // defaults.go
	fcfg.Defaults = defaults       // DP_NGRAMS's
	popts := []planner.PolicyOption{
		planner.WithLimits(sealed.Limits{MaxValueBytes: cfg.Limits.ReleaseValueBytes, MaxRowWork: cfg.Limits.ReleaseRowWork}),
		planner.WithLookupLimits(lookup.Limits{MaxRows: cfg.Limits.PublicLookupRows, MaxBytes: cfg.Limits.PublicLookupBytes}),
		planner.WithTableDefaults(defaults),
	}
	var indexes *release.Indexes
	if n := cfg.Limits.ReleaseIndexBytes; n >= 0 {
		if n == 0 {
			n = release.DefaultIndexBytes
		}
		indexes = release.NewIndexes(n, lockedLog(logw))
		popts = append(popts, planner.WithIndexes(indexes))
		fcfg.Indexes = indexes
		prebuildIndexes(indexes, p, len(cfg.Accounts.Analysts), protected)
		ds.swapped = func(db, table, unit string, t sql.Table) {
			indexes.Prebuild([]release.PrebuildTable{{DB: db, Name: table, Table: t, UnitCol: unit}})
		}
	}
	if fcfg.Rand != nil {
		popts = append(popts, planner.WithRand(fcfg.Rand)) // tests: seeded releases
	}
	popts = append(popts, planner.WithLog(lockedLog(logw))) // push-down sources' errors
	return popts, indexes
}

// loginHint is what a refused login without TLS is told (for every user
// alike, see ServerConfig.LoginHint): that caching_sha2_password
// accounts need TLS, when the configuration has such accounts.
func loginHint(cfg *config.Config) string {
	sha2 := false
	for _, a := range cfg.Accounts.Admins {
		sha2 = sha2 || a.Password.Plugin == config.CachingSha2Password
	}
	for _, a := range cfg.Accounts.Analysts {
		sha2 = sha2 || a.Password.Plugin == config.CachingSha2Password
	}
	switch {
	case !sha2:
		return ""
	case cfg.TLS == nil:
		return "note: accounts that use caching_sha2_password cannot log in to this server, which has no TLS (tls: in its configuration)"
	}
	return "note: accounts that use caching_sha2_password log in only over TLS (mysql --ssl, or --ssl-mode=REQUIRED with MySQL's client)"
}

// Listen listens on addr (host:port, TCP). When another program already
// listens there, the error wraps syscall.EADDRINUSE and says so.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("cannot listen on %s: %w: another server, perhaps another dpsql, listens there", addr, syscall.EADDRINUSE)
	}
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return ln, nil
}

// serverLimits converts the configuration's limits (zero fields take the
// defaults of DefaultLimits).
func serverLimits(l config.Limits) Limits {
	return Limits{
		MaxStatementBytes:              l.MaxStatementBytes,
		MaxStatementTokens:             l.MaxStatementTokens,
		MaxOperators:                   l.MaxOperators,
		MaxNesting:                     l.MaxNesting,
		MaxInList:                      l.MaxInList,
		MaxExecutionTime:               l.MaxExecutionTime,
		MaxStringBytes:                 l.MaxStringBytes,
		MaxStatementsPerAccount:        l.MaxStatementsPerAccount,
		MaxConnections:                 l.MaxConnections,
		AdminConnections:               l.AdminConnections,
		MaxConnectionsPerAccount:       l.MaxConnectionsPerAccount,
		HandshakeTimeout:               l.HandshakeTimeout,
		MaxPendingHandshakes:           l.MaxPendingHandshakes,
		MaxPendingHandshakesPerAddress: l.MaxPendingHandshakesPerAddress,
		MaxMemoryBytes:                 l.MaxMemoryBytes,
		MaxUserVariableBytes:           l.MaxUserVariableBytes,
	}.WithDefaults()
}

// createView runs CREATE VIEW for a view of the configuration, as admin.
func createView(e *sqle.Engine, admin string, v config.View) error {
	ctx := NewContext(context.Background(), admin, v.Database)
	q := fmt.Sprintf("CREATE VIEW `%s`.`%s` AS %s", v.Database, v.Name, v.Query)
	_, it, _, err := e.Query(ctx, q)
	if err == nil {
		_, err = sql.RowIterToRows(ctx, it)
	}
	if err != nil {
		return fmt.Errorf("view %s.%s: %w (check its query)", v.Database, v.Name, err)
	}
	return nil
}

// Addr returns the address the server listens on.
func (s *Governed) Addr() string { return s.srv.Addr() }

// Governor returns the server's governor.
func (s *Governed) Governor() *governance.Governor { return s.gov }

// Ledger returns the server's ledger (open until Shutdown).
func (s *Governed) Ledger() *ledger.Ledger { return s.ledger }

// Engine returns the server's engine.
func (s *Governed) Engine() *sqle.Engine { return s.engine }

// ReleaseIndexBytes returns the memory the release indexes hold
// (limits.release_index_bytes bounds it).
func (s *Governed) ReleaseIndexBytes() int64 { return s.indexes.Bytes() }

// Serve accepts connections until Shutdown (it then returns nil).
func (s *Governed) Serve() error {
	err := s.srv.Start()
	if err != nil && (errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "use of closed network connection")) {
		return nil
	}
	return err
}

// Shutdown stops the server gracefully: no new connections; idle clients
// are disconnected; running statements (releases included) may finish
// within timeout, after which they are canceled — a release canceled after
// its charge loses that budget, never privacy, since nothing was sent;
// then no more charges are accepted, charges being written complete, and
// the ledger is closed. It returns the number of statements canceled.
//
// Shutdown may be called more than once; later calls return the first
// call's results.
func (s *Governed) Shutdown(timeout time.Duration) (canceled int, err error) {
	sd := &s.shutdown
	sd.once.Do(func() {
		sd.canceled, sd.err = s.srv.Shutdown(timeout)
		s.datasets.close() // before the ledger: a reload records a generation
		s.indexes.Close()
		s.gov.Close()
		// The engine reports its background threads' context.Canceled.
		if err := s.engine.Close(); sd.err == nil && !errors.Is(err, context.Canceled) {
			sd.err = err
		}
		if err := s.ledger.Close(); sd.err == nil {
			sd.err = err
		}
		restoreGlobals(s.globals)
	})
	return sd.canceled, sd.err
}

// StorageType maps a configured SQL column type to the column store's:
// integer types (and BOOLEAN, YEAR) to BIGINT, FLOAT, DOUBLE and DECIMAL to
// DOUBLE, DATE to DATE, DATETIME and TIMESTAMP to DATETIME(6), and every
// other type (CHAR, VARCHAR, TEXT, BINARY, BLOB, JSON, TIME) to TEXT.
func StorageType(typ string) (storage.Type, error) {
	t, err := config.ParseColumnType(typ)
	if err != nil {
		return 0, err
	}
	switch {
	case t.Integer():
		return storage.BigInt, nil
	case t.Float(), t.Decimal():
		return storage.Double, nil
	case t.Name == "DATE":
		return storage.Date, nil
	case t.Name == "DATETIME", t.Name == "TIMESTAMP":
		return storage.Datetime, nil
	}
	return storage.Text, nil
}

// protect makes a protected table report no row count (information schema,
// SHOW TABLE STATUS, the optimiser) and serve rows to governed sessions
// only inside a private release (release.ScanGuard, behind the planner's
// own guard).
func protect(p *storage.Provider, gov *governance.Governor, t governance.ProtectedTable) error {
	db, ok := p.Lookup(t.Database)
	if !ok {
		return fmt.Errorf("protected table %s.%s: no database %s", t.Database, t.Table, t.Database)
	}
	tbl, ok := db.Table(t.Table)
	if !ok {
		return fmt.Errorf("protected table %s.%s: no such table", t.Database, t.Table)
	}
	if !slices.ContainsFunc(tbl.Columns(), func(c storage.Column) bool { return strings.EqualFold(c.Name, t.PrivacyUnit) }) {
		return fmt.Errorf("protected table %s.%s: privacy unit %s is not a column", t.Database, t.Table, t.PrivacyUnit)
	}
	db.ReplaceTable(tbl.WithRowCounts(storage.HiddenCounts).WithScanGuard(release.ScanGuard(gov, db.Name(), tbl.Name())))
	return nil
}

// servedDatabases returns the names of p's databases, sorted.
func servedDatabases(p *storage.Provider) []string {
	var out []string
	for _, db := range p.AllDatabases(sql.NewEmptyContext()) {
		out = append(out, db.Name())
	}
	return out
}

// publicDatabases returns the databases holding at least one public table.
func publicDatabases(p *storage.Provider, gov *governance.Governor) []string {
	var out []string
	for _, name := range servedDatabases(p) {
		db, _ := p.Lookup(name)
		for _, t := range db.Tables() {
			if _, protected := gov.PrivacyUnit(name, t.Name()); !protected {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// canonical returns the served spelling of a database name.
func canonical(served []string, name string) string {
	for _, s := range served {
		if strings.EqualFold(s, name) {
			return s
		}
	}
	return name
}

func appendFold(list []string, s string) []string {
	if slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) }) {
		return list
	}
	return append(list, s)
}

// serverGlobals are the global system variables NewGoverned sets.
var serverGlobals = []string{dpvars.VarMechanism, dpvars.VarEpsilon, dpvars.VarDelta,
	dpvars.VarMaxItems, dpvars.VarAlpha, dpvars.VarRounds, "secure_file_priv"}

func saveGlobals() map[string]any {
	m := map[string]any{}
	for _, name := range serverGlobals {
		if _, v, ok := sql.SystemVariables.GetGlobal(name); ok {
			m[name] = v
		}
	}
	return m
}

func restoreGlobals(m map[string]any) {
	if len(m) > 0 {
		_ = sql.SystemVariables.AssignValues(m)
	}
}

// setDefaults makes the configured DP options (dpsql's defaults where the
// configuration is silent) the global values of the dp_* variables, which
// every new session starts from.
func setDefaults(d config.Defaults) error {
	if err := dpvars.AssignGlobals(d.Options()); err != nil {
		return fmt.Errorf("defaults: %w", err)
	}
	return nil
}

// lockedLog returns a printf to w that is safe to call from any goroutine
// (release indexes are built outside statements).
func lockedLog(w io.Writer) func(format string, args ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, format+"\n", args...)
	}
}
