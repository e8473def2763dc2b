package server

// DP_RELOAD('db.table') and DP_DATASETS(): administrators' reload and view
// of the datasets (reload.go). Analysts get MySQL's 1142 from both: a load
// error can quote a value of a row, and protected tables' row counts are
// hidden from them.

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/mysqlerr"
	"github.com/dpsql/dpsql/server/governance"
)

// DP_RELOAD and DP_DATASETS.

const (
	// ReloadName is the SQL name of the reload table function.
	ReloadName = "dp_reload"
	// DatasetsName is the SQL name of administrators' view of the datasets.
	DatasetsName = "dp_datasets"
)

// DatasetsSchema is the schema of DP_DATASETS() and DP_RELOAD(…).
func DatasetsSchema() sql.Schema {
	col := func(name string, t sql.Type) *sql.Column {
		return &sql.Column{Name: name, Type: t, Nullable: true, Source: DatasetsName}
	}
	return sql.Schema{
		col("database_name", types.LongText),
		col("table_name", types.LongText),
		col("source", types.LongText),
		col("protection", types.LongText),
		col("refresh", types.LongText),
		col("row_count", types.Int64),
		col("loaded_at", types.DatetimeMaxPrecision),
		col("generation", types.LongText),
		col("content_sha256", types.LongText),
		col("last_error", types.LongText),
		col("last_error_at", types.DatetimeMaxPrecision),
	}
}

// rows returns DP_DATASETS()'s rows, one per dataset, or of one dataset.
func (ds *datasets) rows(only *dataset) []sql.Row {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	var out []sql.Row
	for _, d := range ds.all {
		if only != nil && d != only {
			continue
		}
		var rows, loadedAt, gen, digest, lastErr, errAt, refresh any
		if d.loaded {
			rows, loadedAt, digest = int64(d.rows), d.loadedAt.UTC(), d.digest
			if d.generation != "" {
				gen = d.generation
			}
		}
		if d.lastError != "" {
			lastErr, errAt = d.lastError, d.errorAt.UTC()
		}
		if d.cfg.Refresh > 0 {
			refresh = d.cfg.Refresh.String()
		}
		protection := "public"
		if d.cfg.Protected() {
			protection = "privacy unit " + d.cfg.PrivacyUnit + ", generation: " + string(d.cfg.Generation)
		}
		out = append(out, sql.Row{d.cfg.Database, d.cfg.Table, describe(d.cfg), protection, refresh, rows, loadedAt, gen, digest, lastErr, errAt})
	}
	return out
}

// adminOnly refuses a non-administrator with MySQL's 1142.
func adminOnly(ctx *sql.Context, gov *governance.Governor, what string) error {
	if gov.SessionRole(ctx) == governance.Admin {
		return nil
	}
	return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s is refused for '%s': only administrators reload datasets or see their sources", what, governance.User(ctx))
}

// datasetsFunction is DP_DATASETS(): every dataset's row.
func datasetsFunction(ds *datasets, gov *governance.Governor) sql.TableFunction {
	return &functions.TableFunc{
		FuncName: DatasetsName,
		About:    "every dataset's source, rows, load time, generation and last error (administrators)",
		Shown:    strings.ToUpper(DatasetsName) + "()",
		Columns:  DatasetsSchema(),
		Check: func(args []sql.Expression) error {
			if len(args) != 0 {
				return mysql.NewSQLError(functions.ErWrongParamCount, mysql.SSClientError,
					"Incorrect parameter count in the call to DP_DATASETS: it takes no arguments; filter with WHERE table_name = '…'")
			}
			return nil
		},
		Rows: func(ctx *sql.Context, _ sql.Expression) (sql.RowIter, error) {
			if err := adminOnly(ctx, gov, "DP_DATASETS"); err != nil {
				return nil, err
			}
			return sql.RowsToRowIter(ds.rows(nil)...), nil
		},
	}
}

// reloadFunction is DP_RELOAD('db.table'): loads the dataset again and
// returns its row.
func reloadFunction(ds *datasets, gov *governance.Governor) sql.TableFunction {
	return &functions.TableFunc{
		FuncName: ReloadName,
		About:    "loads a dataset again (administrators)",
		Shown:    strings.ToUpper(ReloadName) + "()",
		Columns:  DatasetsSchema(),
		Check: func(args []sql.Expression) error {
			if len(args) != 1 || !functions.IsConstant(args[0]) {
				return mysql.NewSQLError(functions.ErWrongParamCount, mysql.SSClientError,
					"Incorrect parameter count in the call to DP_RELOAD: it takes one constant string, the dataset: DP_RELOAD('shop.orders')")
			}
			return nil
		},
		Rows: func(ctx *sql.Context, arg sql.Expression) (sql.RowIter, error) {
			return ds.reloadCall(ctx, gov, arg)
		},
	}
}

// reloadCall answers DP_RELOAD(arg).
func (ds *datasets) reloadCall(ctx *sql.Context, gov *governance.Governor, arg sql.Expression) (sql.RowIter, error) {
	if err := adminOnly(ctx, gov, "DP_RELOAD"); err != nil {
		return nil, err
	}
	v, err := arg.Eval(ctx, nil)
	if err != nil {
		return nil, err
	}
	name, _ := v.(string)
	d, ok := ds.find(strings.TrimSpace(name))
	if !ok {
		return nil, mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSClientError,
			"DP_RELOAD: no dataset %q: name one of the configuration as 'database.table' (SELECT * FROM DP_DATASETS() lists them)", name)
	}
	if err := ds.reload(ctx, d, "DP_RELOAD by "+governance.User(ctx)); err != nil {
		return nil, mysql.NewSQLError(mysql.ERUnknownError, mysql.SSUnknownSQLState, "DP_RELOAD('%s') failed, and the previous snapshot is still served: %v", name, err)
	}
	return sql.RowsToRowIter(ds.rows(d)...), nil
}
