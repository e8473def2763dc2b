package clients

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"
)

// GoDriver runs statements through github.com/go-sql-driver/mysql on one
// connection. Prepared statements are server-side (interpolateParams=false,
// the driver's default, set explicitly): COM_STMT_PREPARE, then EXECUTE with
// the binary protocol.
type GoDriver struct{}

func (GoDriver) Name() string { return "go-sql-driver/mysql" }

// GoConfig returns the driver configuration for t: TLS verified against
// t.CAFile (or unverified without one), parseTime off so that temporal values
// arrive as the server's text, server-side prepared statements.
func GoConfig(t Target) (*mysql.Config, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = t.User, t.Password, "tcp", t.Addr(), t.Database
	cfg.InterpolateParams = false
	cfg.Timeout = 10 * time.Second
	if t.TLS {
		tc, err := tlsConfig(t)
		if err != nil {
			return nil, err
		}
		cfg.TLS = tc
	}
	return cfg, nil
}

// OpenGo opens a database/sql pool for t with [GoConfig].
func OpenGo(t Target) (*sql.DB, error) {
	cfg, err := GoConfig(t)
	if err != nil {
		return nil, err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

func tlsConfig(t Target) (*tls.Config, error) {
	if t.CAFile == "" {
		return &tls.Config{InsecureSkipVerify: true}, nil
	}
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", t.CAFile)
	}
	return &tls.Config{RootCAs: pool, ServerName: t.Host}, nil
}

func (GoDriver) Run(ctx context.Context, t Target, stmts []Statement) ([]Result, error) {
	db, err := OpenGo(t)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err == nil {
		err = conn.PingContext(ctx)
	}
	if err != nil {
		return nil, goError(err)
	}
	defer conn.Close()
	out := make([]Result, len(stmts))
	for i, s := range stmts {
		out[i] = goRun(ctx, conn, s)
		if s.Warnings {
			out[i].Warnings = goWarnings(ctx, conn)
		}
	}
	return out, nil
}

func goRun(ctx context.Context, conn *sql.Conn, s Statement) Result {
	if s.Meta != "" {
		return Result{Error: &Error{Message: "go-sql-driver/mysql has no " + s.Meta + " (JDBC metadata)"}}
	}
	var rows *sql.Rows
	var err error
	if s.Prepared {
		var st *sql.Stmt
		if st, err = conn.PrepareContext(ctx, s.SQL); err != nil {
			return Result{Error: goError(err)}
		}
		defer st.Close()
		rows, err = st.QueryContext(ctx, s.Args...)
	} else {
		rows, err = conn.QueryContext(ctx, s.SQL)
	}
	if err != nil {
		return Result{Error: goError(err)}
	}
	r, err := ScanRows(rows)
	if err != nil {
		return Result{Error: goError(err)}
	}
	return r
}

// goWarnings reads SHOW WARNINGS (nil if it fails: the caller's assertion
// on the warnings then fails).
func goWarnings(ctx context.Context, conn *sql.Conn) []Warning {
	rows, err := conn.QueryContext(ctx, "SHOW WARNINGS")
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []Warning
	for rows.Next() {
		var w Warning
		if rows.Scan(&w.Level, &w.Code, &w.Message) != nil {
			return nil
		}
		out = append(out, w)
	}
	return out
}

// ScanRows reads all rows as text (NULL as nil) and closes rows.
func ScanRows(rows *sql.Rows) (Result, error) {
	defer rows.Close()
	var r Result
	cols, err := rows.ColumnTypes()
	if err != nil {
		return r, err
	}
	for _, c := range cols {
		r.Columns = append(r.Columns, c.Name())
		r.Types = append(r.Types, c.DatabaseTypeName())
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return r, err
		}
		row := make([]*string, len(vals))
		for i, v := range vals {
			if v != nil {
				row[i] = str(string(v))
			}
		}
		r.Rows = append(r.Rows, row)
	}
	return r, rows.Err()
}

// goError converts a driver error to an [*Error], keeping the MySQL number
// and state when the server sent them.
func goError(err error) *Error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return &Error{Code: int(me.Number), State: string(me.SQLState[:]), Message: me.Message}
	}
	return &Error{Message: err.Error()}
}
