package storage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

// A Database keeps views in memory and has no triggers, stored procedures
// or events, which it says by implementing their interfaces with empty
// answers. This matters
// once accounts are enabled: go-mysql-server then wraps every database in
// a mysql_db.PrivilegedDatabase, which implements these interfaces itself
// and reports "database doesn't support views" (and likewise for the
// others) for a database that does not — an error the planbuilder raises
// while resolving any table, and information_schema while listing
// routines or triggers.
var (
	_ sql.ViewDatabase            = (*Database)(nil)
	_ sql.TriggerDatabase         = (*Database)(nil)
	_ sql.StoredProcedureDatabase = (*Database)(nil)
	_ sql.EventDatabase           = (*Database)(nil)
)

func (d *Database) readOnly(what string) error {
	return fmt.Errorf("database %s is read-only: it cannot store %s", d.name, what)
}

// CreateView implements sql.ViewDatabase. Views are kept in memory (the
// tables are read-only, but a view is only a stored query): they last until
// the server stops. A name already taken by a table or view is refused.
func (d *Database) CreateView(ctx *sql.Context, name string, selectStatement, createViewStmt string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := strings.ToLower(name)
	if _, ok := d.tables[k]; ok {
		return sql.ErrTableAlreadyExists.New(name)
	}
	if _, ok := d.views[k]; ok {
		return sql.ErrExistingView.New(d.name, name)
	}
	if d.views == nil {
		d.views = map[string]sql.ViewDefinition{}
	}
	d.views[k] = sql.ViewDefinition{Name: name, TextDefinition: selectStatement, CreateViewStatement: createViewStmt, SqlMode: sql.LoadSqlMode(ctx).String()}
	return nil
}

// DropView implements sql.ViewDatabase.
func (d *Database) DropView(_ *sql.Context, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := strings.ToLower(name)
	if _, ok := d.views[k]; !ok {
		return sql.ErrViewDoesNotExist.New(d.name, name)
	}
	delete(d.views, k)
	return nil
}

// GetViewDefinition implements sql.ViewDatabase.
func (d *Database) GetViewDefinition(_ *sql.Context, name string) (sql.ViewDefinition, bool, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	v, ok := d.views[strings.ToLower(name)]
	return v, ok, nil
}

// AllViews implements sql.ViewDatabase.
func (d *Database) AllViews(*sql.Context) ([]sql.ViewDefinition, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]sql.ViewDefinition, 0, len(d.views))
	for _, v := range d.views {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b sql.ViewDefinition) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// GetTriggers implements sql.TriggerDatabase: there are none.
func (d *Database) GetTriggers(*sql.Context) ([]sql.TriggerDefinition, error) { return nil, nil }

// CreateTrigger implements sql.TriggerDatabase: refused (read-only).
func (d *Database) CreateTrigger(*sql.Context, sql.TriggerDefinition) error {
	return d.readOnly("triggers")
}

// DropTrigger implements sql.TriggerDatabase.
func (d *Database) DropTrigger(_ *sql.Context, name string) error {
	return sql.ErrTriggerDoesNotExist.New(name)
}

// GetStoredProcedure implements sql.StoredProcedureDatabase: there are none.
func (d *Database) GetStoredProcedure(*sql.Context, string) (sql.StoredProcedureDetails, bool, error) {
	return sql.StoredProcedureDetails{}, false, nil
}

// GetStoredProcedures implements sql.StoredProcedureDatabase.
func (d *Database) GetStoredProcedures(*sql.Context) ([]sql.StoredProcedureDetails, error) {
	return nil, nil
}

// SaveStoredProcedure implements sql.StoredProcedureDatabase: refused.
func (d *Database) SaveStoredProcedure(*sql.Context, sql.StoredProcedureDetails) error {
	return d.readOnly("stored procedures")
}

// DropStoredProcedure implements sql.StoredProcedureDatabase.
func (d *Database) DropStoredProcedure(_ *sql.Context, name string) error {
	return sql.ErrStoredProcedureDoesNotExist.New(name)
}

// GetEvent implements sql.EventDatabase: there are none.
func (d *Database) GetEvent(*sql.Context, string) (sql.EventDefinition, bool, error) {
	return sql.EventDefinition{}, false, nil
}

// GetEvents implements sql.EventDatabase.
func (d *Database) GetEvents(*sql.Context) ([]sql.EventDefinition, any, error) {
	return nil, nil, nil
}

// SaveEvent implements sql.EventDatabase: refused.
func (d *Database) SaveEvent(*sql.Context, sql.EventDefinition) (bool, error) {
	return false, d.readOnly("events")
}

// DropEvent implements sql.EventDatabase.
func (d *Database) DropEvent(_ *sql.Context, name string) error {
	return sql.ErrEventDoesNotExist.New(name)
}

// UpdateEvent implements sql.EventDatabase: refused.
func (d *Database) UpdateEvent(*sql.Context, string, sql.EventDefinition) (bool, error) {
	return false, d.readOnly("events")
}

// UpdateLastExecuted implements sql.EventDatabase (never called: there
// are no events).
func (d *Database) UpdateLastExecuted(*sql.Context, string, time.Time) error { return nil }

// NeedsToReloadEvents implements sql.EventDatabase.
func (d *Database) NeedsToReloadEvents(*sql.Context, any) (bool, error) { return false, nil }
