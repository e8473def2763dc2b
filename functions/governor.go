package functions

import (
	"github.com/dolthub/go-mysql-server/sql"
)

// Governor is the governed server's hook into the DP functions and the
// planner's analyst rules. A nil Governor means an ungoverned engine: every
// session may read every table, and releases are not charged (the local,
// single-user server and `dpsql query`).
//
// The governed server implements it over its configuration (which tables are
// protected, by which privacy-unit column; which accounts are analysts) and
// its budget ledger.
type Governor interface {
	// PrivacyUnit returns the privacy-unit column of a protected table, or
	// ok = false when the table is not protected. Names are matched
	// case-insensitively.
	PrivacyUnit(database, table string) (column string, ok bool)
	// Governed reports whether the session's user may only obtain DP
	// releases (an analyst). Admins and ungoverned sessions are not.
	Governed(ctx *sql.Context) bool
	// Check reports, without side effects, whether the session's user could
	// be charged for r now: the planner calls it before reading any data so
	// that a release over budget is refused before touching data.
	Check(ctx *sql.Context, r Release) error
	// Charge records r against the session user's budget durably (the
	// ledger's transaction is synced to disk) or refuses it. It is called
	// once per release, before any released value is returned; on error
	// nothing is released. Sessions that are not governed are not charged.
	Charge(ctx *sql.Context, r Release) error
}

// Release describes one private release for the budget ledger.
type Release struct {
	// Function is DP_SET_UNION, DP_NGRAMS or SELECT DISTINCT (the rewrite).
	Function string
	// Database and Table name the protected table read.
	Database, Table string
	// Epsilon and Delta are the release's privacy parameters, all levels and
	// rounds included.
	Epsilon, Delta float64
	// Mechanism is the DPSU mechanism used.
	Mechanism string
	// Query is the statement text (for the audit log).
	Query string
}
