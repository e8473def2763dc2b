package release

import (
	"fmt"

	"github.com/dpsql/dpsql/internal/mysqlerr"
	"github.com/dpsql/dpsql/sqlext/explain"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/sqlext/accounting"
)

// Governor is the governed server's hook into the releases. A nil Governor
// means an ungoverned engine: every session may read every table, and
// releases are not charged (the local, single-user server and `dpsql
// query`).
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
	Check(ctx *sql.Context, r Request) error
	// Charge records r against the session user's budget durably (the
	// ledger's transaction is synced to disk) or refuses it. It is called
	// once per release, before any released value is returned; on error
	// nothing is released. Sessions that are not governed are not charged.
	Charge(ctx *sql.Context, r Request) error
}

// Previewer is implemented by governors that can say, without charging,
// what a statement's requests would cost the session's user and what would
// be left (DP_EXPLAIN).
type Previewer interface {
	Preview(ctx *sql.Context, reqs []Request) ([]explain.Fact, error)
}

// Request describes one private release for the budget ledger.
type Request struct {
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
	// Cost is the release's privacy cost for the ledger's accounting
	// (accounting.SetUnion, accounting.Ngrams, …); the zero value means
	// accounting.Basic(Epsilon, Delta).
	Cost accounting.Cost
	// Reuse identifies the release for reuse (zero: not reusable); the
	// requests of one release node share it. A Governor that keeps
	// releases (Reuser) lets Check pass a request it could answer from a
	// stored release, whatever the budget left.
	Reuse ReuseKey
}

// LedgerCost returns r.Cost, or the basic cost of its (ε, δ) when unset.
func (r Request) LedgerCost() accounting.Cost {
	if r.Cost.Releases == 0 {
		return accounting.Basic(r.Epsilon, r.Delta)
	}
	return r.Cost
}

// Check asks gov whether every request could be charged now (nil gov:
// yes).
func Check(ctx *sql.Context, gov Governor, reqs []Request) error {
	if gov == nil {
		return nil
	}
	for _, r := range reqs {
		if err := gov.Check(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// Charge charges every request to gov, in order, stopping at the first
// refusal (nil gov: nothing is charged). The charges made before a refusal
// stay: they are durable by contract.
func Charge(ctx *sql.Context, gov Governor, reqs []Request) error {
	if gov == nil {
		return nil
	}
	for _, r := range reqs {
		if err := gov.Charge(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// ERTableAccessDenied is MySQL's ER_TABLEACCESS_DENIED_ERROR (vitess
// v0.20.0's constants lack it), the error of every refused read of a
// protected table.
const ERTableAccessDenied = mysqlerr.TableAccessDenied

// ErrAccess is the refusal of a read of a protected table (MySQL error
// 1142, SQLSTATE 42000): why it is refused, and the allowed forms.
func ErrAccess(db, table, why string) error {
	return mysql.NewSQLError(ERTableAccessDenied, "42000",
		"SELECT command denied for table '%s.%s': %s. An analyst may read a protected table only through a private release: "+
			"SELECT DISTINCT c1[, c2…] FROM %s [WHERE …], SELECT c… FROM %s [WHERE …] GROUP BY c…, "+
			"SELECT COUNT(*), SUM(x), AVG(x)… FROM %s [WHERE …] (one noisy row), "+
			"SELECT DP_SET_UNION(item, privacy_unit) FROM %s [WHERE …], or SELECT * FROM DP_NGRAMS('%s.%s', …); "+
			"metadata (DESCRIBE, SHOW COLUMNS, SHOW CREATE TABLE) is allowed",
		db, table, why, table, table, table, table, db, table)
}

// ErrNotAllowed is the refusal of an expression a release may not
// evaluate (MySQL error 1142, like every refusal to read protected rows).
func ErrNotAllowed(db, table string, where string, err error) error {
	return ErrAccess(db, table, fmt.Sprintf("in the %s: %v", where, err))
}
