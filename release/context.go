package release

import (
	"context"

	"github.com/dolthub/go-mysql-server/sql"
)

// key marks a context as the scan of a private release.
type key struct{}

// Context returns a context for the table scan of a private release.
// Protected tables of a governed server serve rows to an analyst's session
// only under such a context (ScanGuard); every other read is refused by the
// storage layer as well as by the planner (defence in depth).
func Context(ctx *sql.Context) *sql.Context {
	return ctx.WithContext(context.WithValue(ctx.Context, key{}, true))
}

// InRelease reports whether ctx comes from Context.
func InRelease(ctx *sql.Context) bool {
	v, _ := ctx.Value(key{}).(bool)
	return v
}

// ScanGuard returns the check a governed server installs on each protected
// table (storage.Table.WithScanGuard): a governed session may read rows of
// db.table only inside a private release. It backs up the planner's guard
// at the storage layer, so that a plan shape the guard does not know still
// cannot read protected rows.
func ScanGuard(gov Governor, db, table string) func(*sql.Context) error {
	return func(ctx *sql.Context) error {
		if gov.Governed(ctx) && !InRelease(ctx) {
			return ErrAccess(db, table, "its rows can only be read by a private release")
		}
		return nil
	}
}
