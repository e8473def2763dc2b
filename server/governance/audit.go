package governance

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/ledger"
)

// AuditName is the SQL name of the audit table function.
const AuditName = "dp_audit"

// AuditSchema are the columns of DP_AUDIT(), one row per audit record of
// the ledger, in commit order (seq increasing; ORDER BY seq DESC for the
// newest first):
//
//	seq                 the record's sequence number in the ledger
//	time                when it was committed (UTC)
//	account             the analyst
//	database_name       the database the release was charged on
//	table_name          the protected table released over (NULL in records
//	                    written before dpsql recorded it)
//	operation           SELECT DISTINCT, GROUP BY aggregates, DP_SET_UNION or
//	                    DP_NGRAMS (NULL likewise)
//	statement           the statement text (cut to 1024 bytes)
//	statement_sha256    the SHA-256 of the full text when it was cut, else NULL
//	epsilon, delta      the release's (ε, δ)
//	mechanism           its mechanism (key selection for aggregates)
//	reused              true when the release was answered from a stored
//	                    earlier release, charging nothing
//	reused_seq          the record of that earlier release (NULL otherwise)
//	charged_epsilon     what the record added to the account's basic sums:
//	charged_delta       (ε, δ), or 0 for a reused release
//	rho                 the zCDP cost charged (zcdp accounts; NULL otherwise)
//	threshold_fail      the thresholds' failure probability charged (likewise)
//	connection_id       the MySQL connection that made the request
//
// It reads the ledger only: never a protected row, and it charges nothing.
// Sequence numbers are the ledger's, global to all analysts: the gaps in an
// analyst's own records show how many records others caused (about the
// analysts' activity, nothing about the protected data).
func AuditSchema() sql.Schema {
	col := func(name string, t sql.Type, nullable bool) *sql.Column {
		return &sql.Column{Name: name, Type: t, Nullable: nullable, Source: AuditName}
	}
	varchar := func(n int64) sql.Type { return types.MustCreateStringWithDefaults(sqltypes.VarChar, n) }
	return sql.Schema{
		col("seq", types.Uint64, false),
		col("time", types.DatetimeMaxPrecision, false),
		col("account", varchar(32), false),
		col("database_name", varchar(64), false),
		col("table_name", varchar(64), true),
		col("operation", varchar(32), true),
		col("statement", types.LongText, false),
		col("statement_sha256", varchar(64), true),
		col("epsilon", types.Float64, false),
		col("delta", types.Float64, false),
		col("mechanism", varchar(64), true),
		col("reused", types.Boolean, false),
		col("reused_seq", types.Uint64, true),
		col("charged_epsilon", types.Float64, false),
		col("charged_delta", types.Float64, false),
		col("rho", types.Float64, true),
		col("threshold_fail", types.Float64, true),
		col("connection_id", types.Uint32, true),
	}
}

// AuditFunction returns the DP_AUDIT() table function of g, to register on
// the engine's provider. An administrator sees every record; any other
// account only its own. Like DP_BUDGET it takes no arguments (filter with
// WHERE) and needs a current database.
func AuditFunction(g *Governor) sql.TableFunction {
	return rowsFunction(AuditName, AuditSchema(), g.AuditRows,
		"filter with WHERE, e.g. WHERE database_name = '…' ORDER BY seq DESC LIMIT 10")
}

// AuditRows returns the rows DP_AUDIT() shows ctx's user.
func (g *Governor) AuditRows(ctx *sql.Context) ([]sql.Row, error) {
	var f ledger.AuditFilter
	if g.SessionRole(ctx) != Admin {
		if f.Analyst = User(ctx); f.Analyst == "" {
			return nil, nil
		}
	}
	recs, err := g.ledger.Audit(f)
	if err != nil {
		return nil, fmt.Errorf("privacy budget ledger: %w", err)
	}
	rows := make([]sql.Row, 0, len(recs))
	for _, r := range recs {
		rows = append(rows, auditRow(r))
	}
	return rows, nil
}

func auditRow(r ledger.Record) sql.Row {
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	statement := r.Description
	if r.Function != "" {
		// describe's prefix: the function and table are columns of their own.
		statement = strings.TrimPrefix(statement, describe(release.Request{Function: r.Function, Database: r.Database, Table: r.Table})+": ")
	}
	var reusedSeq, rho, thr, conn any
	reused := int8(0)
	chargedEps, chargedDelta := r.Epsilon, r.Delta
	if r.Reused {
		reused, reusedSeq = 1, r.ReusedSeq
		chargedEps, chargedDelta = 0, 0
	}
	if r.Rho != 0 || r.ThresholdFail != 0 {
		rho, thr = r.Rho, r.ThresholdFail
	}
	if r.Connection != 0 {
		conn = r.Connection
	}
	return sql.Row{
		r.Seq, r.Time.UTC(), r.Analyst, r.Database, orNull(r.Table), orNull(r.Function),
		statement, orNull(r.DescriptionSHA256),
		r.Epsilon, r.Delta, orNull(r.Mechanism),
		reused, reusedSeq, chargedEps, chargedDelta, rho, thr, conn,
	}
}
