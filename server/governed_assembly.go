package server

// The steps of NewGoverned (governed.go) after the ledger: the datasets,
// the Governor, the file directory, the views, the accounts and the
// network configuration.

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/governance"
	"github.com/dpsql/dpsql/server/ledger"
	"github.com/dpsql/dpsql/server/storage"
)

// openLedger opens the ledger of cfg's data directory (waiting lockTimeout
// for another process to release it), verifies it and applies the
// configured budgets.
func openLedger(cfg *config.Config, lockTimeout time.Duration, logw io.Writer) (_ *ledger.Ledger, err error) {
	l, err := ledger.Open(cfg.DataDir, ledger.Options{LockTimeout: lockTimeout, Accounting: cfg.Accounting.LedgerAccounting()})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	if err := l.Verify(); err != nil {
		return nil, fmt.Errorf("%w; the ledger must be consistent before anything is charged: restore %s from a backup", err, l.Path())
	}
	if err := l.SetLimits(context.Background(), cfg.LedgerLimits()); err != nil {
		return nil, err
	}
	fmt.Fprintf(logw, "privacy-budget ledger: %s\n", l.Path())
	return l, nil
}

// warnMemory warns when the loaded data already takes more than 80% of
// lim.MaxMemoryBytes: the memory guard would stop analysts' statements all
// the time.
func warnMemory(lim Limits, logw io.Writer) {
	if used := memoryInUse(); lim.MaxMemoryBytes > 0 && used > uint64(lim.MaxMemoryBytes)/10*8 {
		fmt.Fprintf(logw, "WARNING: the loaded data already takes %d MiB, more than 80%% of limits.max_memory_bytes (%d MiB): "+
			"analysts' statements will be stopped with error 1041; raise the limit (or GOMEMLIMIT) or serve less data\n",
			used>>20, lim.MaxMemoryBytes>>20)
	}
}

// servedTables are the tables a governed server serves, by kind: protected
// (those of the configuration whose database source failed to load are
// also in absent, by qualified name: they appear when a reload loads them)
// and public.
type servedTables struct {
	protected []governance.ProtectedTable
	public    []governance.PublicTable
	absent    map[string]bool
}

// loadData loads the configuration's datasets into p (through ds) and adds
// o.Databases, every table of which is public.
func loadData(o GovernedOptions, ds *datasets, p *storage.Provider) (servedTables, error) {
	tables := servedTables{protected: slices.Clone(o.Protected), absent: map[string]bool{}}
	for _, d := range o.Config.Datasets {
		source, ok, err := ds.loadInitial(d) // reload.go
		if err != nil {
			return tables, err
		}
		if d.Protected() {
			// A database dataset that failed to load is protected all the
			// same: it appears when a reload loads it.
			tables.protected = append(tables.protected, governance.ProtectedTable{Database: d.Database, Table: d.Table, PrivacyUnit: d.PrivacyUnit, Source: source})
			if !ok {
				tables.absent[d.QualifiedName()] = true
			}
		} else if d.Public {
			tables.public = append(tables.public, governance.PublicTable{Database: d.Database, Table: d.Table})
		}
	}
	for _, db := range o.Databases {
		if err := p.AddDatabase(db); err != nil {
			return tables, err
		}
		// Every table of theirs not protected is public (GovernedOptions).
		for _, t := range db.Tables() {
			tables.public = append(tables.public, governance.PublicTable{Database: db.Name(), Table: t.Name()})
		}
	}
	return tables, nil
}

// newGovernor returns the Governor of cfg's accounts over the ledger l, with
// every loaded protected table of p behind its scan guard.
func newGovernor(cfg *config.Config, l *ledger.Ledger, p *storage.Provider, tables servedTables) (*governance.Governor, error) {
	var admins, analysts []string
	for _, a := range cfg.Accounts.Admins {
		admins = append(admins, a.User)
	}
	for _, a := range cfg.Accounts.Analysts {
		analysts = append(analysts, a.User)
	}
	gov, err := governance.New(governance.Options{Protected: tables.protected, Public: tables.public, Admins: admins, Analysts: analysts, Ledger: l,
		Bounds: governance.Bounds{MinEpsilon: cfg.Limits.MinEpsilon, MinDelta: cfg.Limits.MinDelta, MaxDelta: cfg.Limits.MaxDelta},
		Reuse:  governance.Reuse{Enabled: cfg.Reuse.On(), Window: cfg.Reuse.EffectiveWindow(), Scope: governance.Scope(cfg.Reuse.EffectiveScope())}})
	if err != nil {
		return nil, err
	}
	for _, t := range tables.protected {
		if tables.absent[t.Database+"."+t.Table] {
			continue
		}
		if err := protect(p, gov, t); err != nil {
			return nil, err
		}
	}
	return gov, nil
}

// confineFiles confines the file functions of administrators (LOAD_FILE,
// SELECT … INTO OUTFILE, LOAD DATA; analysts may use none) to one
// directory of the data directory, so that SQL cannot read the ledger or
// the data files, nor write files elsewhere on the server.
func confineFiles(dataDir string) error {
	files := filepath.Join(dataDir, FilesDir)
	if err := os.MkdirAll(files, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return sql.SystemVariables.AssignValues(map[string]any{"secure_file_priv": files})
}

// createViews creates the views of the configuration, while authentication
// is still off (so with every privilege); CREATE VIEW binds the query, so
// a bad one fails the start.
func createViews(e *sqle.Engine, cfg *config.Config, logw io.Writer) error {
	for _, v := range cfg.Views {
		if len(cfg.Accounts.Admins) == 0 {
			return fmt.Errorf("view %s.%s: views are created as an administrator; declare one under accounts.admins", v.Database, v.Name)
		}
		if err := createView(e, cfg.Accounts.Admins[0].User, v); err != nil {
			return err
		}
		fmt.Fprintf(logw, "view %s.%s\n", v.Database, v.Name)
	}
	return nil
}

// installAccounts installs cfg's accounts in e's grant tables — an
// analyst may read the databases of its budgets and the public ones — and
// returns each account's default database.
func installAccounts(e *sqle.Engine, cfg *config.Config, p *storage.Provider, gov *governance.Governor, logw io.Writer) (map[string]string, error) {
	databases := servedDatabases(p)
	publicDBs := publicDatabases(p, gov)
	var accounts []governance.Account
	defaultDB := map[string]string{}
	for _, a := range cfg.Accounts.Admins {
		accounts = append(accounts, governance.Account{User: a.User, Host: a.Host, Plugin: a.Password.Plugin, AuthString: a.Password.AuthString, Role: governance.Admin})
		if len(databases) > 0 {
			defaultDB[a.User] = databases[0]
		}
	}
	for _, a := range cfg.Accounts.Analysts {
		var dbs []string
		for _, b := range a.Budgets {
			dbs = appendFold(dbs, canonical(databases, b.Database))
		}
		for _, d := range publicDBs {
			dbs = appendFold(dbs, d)
		}
		accounts = append(accounts, governance.Account{User: a.User, Host: a.Host, Plugin: a.Password.Plugin, AuthString: a.Password.AuthString, Role: governance.Analyst, Databases: dbs})
		if len(dbs) > 0 {
			defaultDB[a.User] = dbs[0]
		}
		fmt.Fprintf(logw, "analyst %s@%s: SELECT on %s\n", a.User, a.Host, strings.Join(dbs, ", "))
	}
	if err := governance.InstallAccounts(e.Analyzer.Catalog.MySQLDb, accounts); err != nil {
		return nil, err
	}
	if cfg.TLS == nil {
		for _, a := range accounts {
			if a.Plugin == config.CachingSha2Password {
				fmt.Fprintf(logw, "WARNING: account %s uses caching_sha2_password, which logs in only over TLS, and this configuration has no tls: it cannot log in "+
					"(configure tls:, or give it a mysql_native_password hash: dpsql passwd --plugin mysql_native_password)\n", a.User)
			}
		}
	}
	return defaultDB, nil
}

// serverConfig is the network side of the governed server: the listener,
// the limits, who is governed and who is an administrator, the default
// databases, the login hint, throttle and TLS of the configuration.
func serverConfig(o GovernedOptions, ln net.Listener, lim Limits, gov *governance.Governor, defaultDB map[string]string) (ServerConfig, error) {
	cfg := o.Config
	scfg := ServerConfig{
		Address:            cfg.Listen,
		Listener:           ln,
		ConnReadTimeout:    cmp.Or(o.ConnReadTimeout, ConnReadTimeout),
		DefaultDatabaseFor: func(user string) string { return defaultDB[user] },
		Limits:             lim,
		Governed:           func(user string) bool { return gov.Role(user) != governance.Admin },
		IsAdmin:            func(user string) bool { return gov.Role(user) == governance.Admin },
	}
	scfg.LoginHint = loginHint(cfg)
	scfg.ServerPaths = serverPaths(cfg)
	scfg.LoginThrottle = loginThrottle(cfg.LoginThrottle)
	if cfg.TLS != nil {
		cert, err := tls.LoadX509KeyPair(cfg.TLS.Cert, cfg.TLS.Key)
		if err != nil {
			return scfg, fmt.Errorf("tls: %w", err)
		}
		scfg.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		scfg.RequireSecureTransport = cfg.TLS.Require
	}
	return scfg, nil
}
