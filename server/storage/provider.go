// Package storage is a read-only, column-oriented, in-memory storage for
// go-mysql-server: databases of immutable tables loaded from files (TSV,
// CSV, JSON lines, Parquet through sqlext/tabfile; other row sources plug in
// through RowSource) or built in code.
//
// Columns are typed (BIGINT, DOUBLE, TEXT, DATE, DATETIME); text is
// dictionary-encoded so a scan allocates nothing per string value, and rows
// are materialised in batches. Tables implement sql.StatisticsTable with a
// per-table policy (RowCounts) so that protected tables can report no row
// count to information_schema and SHOW TABLE STATUS.
//
// Provider implements sql.DatabaseProvider, sql.FunctionProvider and
// sql.TableFunctionProvider with case-insensitive lookups (go-mysql-server's
// memory provider looks table functions up by the name as typed), so DP
// table functions can be registered on it.
package storage

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
)

// Provider serves databases, functions and table functions to an engine.
// It is safe for concurrent use; databases and tables may be added while
// the engine runs.
type Provider struct {
	cat      *catalog
	tableFns map[string]sql.TableFunction
}

// catalog is the state Provider copies share (WithTableFunctions returns a
// copy, as go-mysql-server expects, that must still see new databases).
type catalog struct {
	mu    sync.RWMutex
	dbs   map[string]*Database
	funcs map[string]sql.Function
}

var (
	_ sql.DatabaseProvider      = (*Provider)(nil)
	_ sql.FunctionProvider      = (*Provider)(nil)
	_ sql.TableFunctionProvider = (*Provider)(nil)
)

// NewProvider returns a provider holding dbs.
func NewProvider(dbs ...*Database) (*Provider, error) {
	p := &Provider{
		cat:      &catalog{dbs: map[string]*Database{}, funcs: map[string]sql.Function{}},
		tableFns: map[string]sql.TableFunction{},
	}
	for _, db := range dbs {
		if err := p.AddDatabase(db); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// AddDatabase adds db; a database of the same name (case-insensitively)
// must not exist.
func (p *Provider) AddDatabase(db *Database) error {
	k := strings.ToLower(db.name)
	if k == "information_schema" || k == "mysql" {
		return fmt.Errorf("database name %s is reserved", db.name)
	}
	p.cat.mu.Lock()
	defer p.cat.mu.Unlock()
	if _, dup := p.cat.dbs[k]; dup {
		return fmt.Errorf("database %s already exists", db.name)
	}
	p.cat.dbs[k] = db
	return nil
}

// Lookup returns the database called name (case-insensitive).
func (p *Provider) Lookup(name string) (*Database, bool) {
	p.cat.mu.RLock()
	defer p.cat.mu.RUnlock()
	db, ok := p.cat.dbs[strings.ToLower(name)]
	return db, ok
}

// Database implements sql.DatabaseProvider.
func (p *Provider) Database(_ *sql.Context, name string) (sql.Database, error) {
	if db, ok := p.Lookup(name); ok {
		return db, nil
	}
	return nil, sql.ErrDatabaseNotFound.New(name)
}

// HasDatabase implements sql.DatabaseProvider.
func (p *Provider) HasDatabase(_ *sql.Context, name string) bool {
	_, ok := p.Lookup(name)
	return ok
}

// AllDatabases implements sql.DatabaseProvider, sorted by name.
func (p *Provider) AllDatabases(*sql.Context) []sql.Database {
	p.cat.mu.RLock()
	defer p.cat.mu.RUnlock()
	keys := slices.Sorted(maps.Keys(p.cat.dbs))
	out := make([]sql.Database, len(keys))
	for i, k := range keys {
		out[i] = p.cat.dbs[k]
	}
	return out
}

// RegisterFunction makes fns callable in SQL by their names
// (case-insensitive). A provider function shadows a built-in one of the
// same name; registering a name twice is an error.
func (p *Provider) RegisterFunction(fns ...sql.Function) error {
	p.cat.mu.Lock()
	defer p.cat.mu.Unlock()
	for _, f := range fns {
		k := strings.ToLower(f.FunctionName())
		if _, dup := p.cat.funcs[k]; dup {
			return fmt.Errorf("function %s is already registered", f.FunctionName())
		}
		p.cat.funcs[k] = f
	}
	return nil
}

// Function implements sql.FunctionProvider.
func (p *Provider) Function(_ *sql.Context, name string) (sql.Function, bool) {
	p.cat.mu.RLock()
	defer p.cat.mu.RUnlock()
	f, ok := p.cat.funcs[strings.ToLower(name)]
	return f, ok
}

// TableFunction implements sql.TableFunctionProvider (case-insensitive).
func (p *Provider) TableFunction(_ *sql.Context, name string) (sql.TableFunction, bool) {
	f, ok := p.tableFns[strings.ToLower(name)]
	return f, ok
}

// WithTableFunctions implements sql.TableFunctionProvider: it returns a
// provider that shares p's databases and functions and also serves fns.
// Pass the result to the analyzer (analyzer.NewBuilder) or use
// RegisterTableFunction before building the engine.
func (p *Provider) WithTableFunctions(fns ...sql.TableFunction) (sql.TableFunctionProvider, error) {
	np := &Provider{cat: p.cat, tableFns: maps.Clone(p.tableFns)}
	if err := np.addTableFunctions(fns); err != nil {
		return nil, err
	}
	return np, nil
}

// RegisterTableFunction adds table functions to p itself. Call it before
// the engine runs queries (table functions are not locked).
func (p *Provider) RegisterTableFunction(fns ...sql.TableFunction) error {
	return p.addTableFunctions(fns)
}

func (p *Provider) addTableFunctions(fns []sql.TableFunction) error {
	for _, f := range fns {
		k := strings.ToLower(f.Name())
		if _, dup := p.tableFns[k]; dup {
			return fmt.Errorf("table function %s is already registered", f.Name())
		}
		p.tableFns[k] = f
	}
	return nil
}

// Database is a named set of read-only tables.
type Database struct {
	name   string
	mu     sync.RWMutex
	tables map[string]*Table
	views  map[string]sql.ViewDefinition // by lower-cased name
}

var (
	_ sql.Database         = (*Database)(nil)
	_ sql.ReadOnlyDatabase = (*Database)(nil)
)

// NewDatabase returns an empty database.
func NewDatabase(name string) *Database {
	return &Database{name: name, tables: map[string]*Table{}}
}

// Name implements sql.Nameable.
func (d *Database) Name() string { return d.name }

// IsReadOnly implements sql.ReadOnlyDatabase. The tables are read-only
// (they implement no insert, update or DDL interface), but the database is
// not: it stores views (go-mysql-server refuses CREATE VIEW in a read-only
// database).
func (d *Database) IsReadOnly() bool { return false }

// AddTable adds t; a table of the same name (case-insensitively) must not
// exist.
func (d *Database) AddTable(t *Table) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := strings.ToLower(t.name)
	if _, dup := d.tables[k]; dup {
		return fmt.Errorf("table %s.%s already exists", d.name, t.name)
	}
	t.setDatabase(d.name)
	d.tables[k] = t
	return nil
}

// ReplaceTable puts t in place of the table of the same name, or adds it.
// Queries already running keep scanning the old table.
func (d *Database) ReplaceTable(t *Table) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t.setDatabase(d.name)
	d.tables[strings.ToLower(t.name)] = t
}

// Table returns the table called name (case-insensitive).
func (d *Database) Table(name string) (*Table, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	t, ok := d.tables[strings.ToLower(name)]
	return t, ok
}

// Tables returns the tables, sorted by name.
func (d *Database) Tables() []*Table {
	d.mu.RLock()
	defer d.mu.RUnlock()
	keys := slices.Sorted(maps.Keys(d.tables))
	out := make([]*Table, len(keys))
	for i, k := range keys {
		out[i] = d.tables[k]
	}
	return out
}

// GetTableInsensitive implements sql.Database.
func (d *Database) GetTableInsensitive(_ *sql.Context, name string) (sql.Table, bool, error) {
	t, ok := d.Table(name)
	if !ok {
		return nil, false, nil
	}
	return t, true, nil
}

// GetTableNames implements sql.Database, sorted.
func (d *Database) GetTableNames(*sql.Context) ([]string, error) {
	tables := d.Tables()
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.name
	}
	return names, nil
}
