package release

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/release/pushdown"
)

// PushdownSource returns the source of the scan's table when its rows stay
// in a database (mode: pushdown), nil when they are held in memory.
func (s *Scan) PushdownSource() pushdown.Source {
	if t, ok := s.src.(pushdown.Table); ok {
		return t.PushdownSource()
	}
	return nil
}

// PushdownParts returns what a push-down release reads: the table's full
// schema, the privacy-unit column, the analysed filter (nil without one)
// and keys, whose column references index the schema.
func (s *Scan) PushdownParts() (schema sql.Schema, unit string, filter sql.Expression, keys []sql.Expression) {
	return s.src.Schema(), s.unitCol, s.pushFilter, s.pushKeys
}

// PushdownSupported is what a release over a push-down table may be.
const PushdownSupported = "SELECT DISTINCT, GROUP BY (with COUNT, SUM, AVG and the other DP aggregates) or DP_SET_UNION " +
	"whose keys, items and aggregated values are plain columns, with no WHERE clause or one made of plain columns compared with literals " +
	"(=, <>, <, <=, >, >=, BETWEEN, IN (…), IS [NOT] NULL; text columns with strings, number columns with numbers) combined with AND, OR and NOT, " +
	"and no join or subquery"

// ErrPushdown refuses a release over a push-down table (one whose rows stay
// in its database: mode: pushdown) that is not of a supported shape
// (MySQL error 1142, before anything is read or charged): what is not
// supported, and what is.
func ErrPushdown(db, table, what string) error {
	return mysql.NewSQLError(ERTableAccessDenied, "42000",
		"private release on %s.%s: %s is not supported on this table, whose rows stay in its database (mode: pushdown); supported: %s",
		db, table, what, PushdownSupported)
}

// ErrPushdownSource is what an analyst is told when a push-down table's
// database fails during a release: nothing of the source's message (which
// could quote a value), nothing charged.
func ErrPushdownSource(db, table string) error {
	return mysql.NewSQLError(mysql.ERUnknownError, "HY000",
		"private release on %s.%s: the table's database did not answer; nothing was charged; try again later (the server's log says why)", db, table)
}
