package storage

// Tables read from a database: MySQL or MariaDB (go-sql-driver/mysql) and
// PostgreSQL (jackc/pgx through database/sql).
//
// A load is one read-only transaction at REPEATABLE READ — InnoDB's
// consistent read view, PostgreSQL's transaction snapshot — holding one
// SELECT whose rows are streamed into the column builders: the table is a
// consistent snapshot of the source, never a mix of two states, and dpsql
// holds one row of the result at a time besides the columns being built.

import (
	"context"
	dbsql "database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/dpsql/dpsql/internal/progress"
)

// DBSource describes a table or query of a database to load.
type DBSource struct {
	// Driver is "mysql" (MySQL, MariaDB) or "postgres".
	Driver string
	// DSN is the data source name; it holds the password and never
	// appears in an error of LoadDB.
	DSN string
	// Table ([schema.]table) or Query (a SELECT) says what to read.
	Table, Query string
	// Describe names the source in errors and progress lines, without the
	// DSN ("mysql table orders").
	Describe string
}

// DBLoadOptions configure LoadDB.
type DBLoadOptions struct {
	// Columns, when given, are the columns to read (by their Source name,
	// or Name) and their types; without them every column of the source is
	// read with the type its schema gives (SourceType).
	Columns []DBColumn
	// Progress receives the status lines of package progress (nil: none).
	Progress io.Writer
	// Label names the load in progress lines ("shop.orders (mysql table orders)").
	Label string
	// Comment is the table comment.
	Comment string
	// Check, when set, is called every CheckRows rows and at the end; an
	// error stops the load (the memory guard: the caller compares the
	// process's memory with its limit).
	Check func(rows int64) error
	// ConnectTimeout bounds connecting and starting the transaction (0: 30s).
	ConnectTimeout time.Duration
}

// DBColumn is a declared column of a database dataset.
type DBColumn struct {
	Name   string // the column's name in dpsql
	Source string // the source column's name ("": Name)
	Type   Type
}

// CheckRows is how many rows LoadDB reads between two calls of Check.
const CheckRows = 1 << 16

// driverName maps a source driver to its database/sql driver.
func driverName(d string) (string, error) {
	switch d {
	case "mysql":
		return "mysql", nil
	case "postgres":
		return "pgx", nil
	}
	return "", fmt.Errorf("unknown driver %q: use mysql (MySQL, MariaDB) or postgres", d)
}

// LoadDB reads src into a new table called name, in one read-only
// REPEATABLE READ transaction. Its errors say what failed and what to fix,
// and never contain the DSN or the password in it.
func LoadDB(ctx context.Context, name string, src DBSource, opts DBLoadOptions) (_ *Table, _ LoadInfo, err error) {
	defer func() {
		if err != nil {
			err = redact(err, src.Driver, src.DSN)
		}
	}()
	start := time.Now()
	dn, err := driverName(src.Driver)
	if err != nil {
		return nil, LoadInfo{}, err
	}
	db, err := dbsql.Open(dn, src.DSN)
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: the DSN does not parse: %v (fix the DSN)", src.Describe, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	// Connect within the timeout (the transaction lives on the
	// connection the ping opened: at most one is open).
	cctx, cancel := context.WithTimeout(ctx, cmpDuration(opts.ConnectTimeout, 30*time.Second))
	err = db.PingContext(cctx)
	cancel()
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: cannot connect: %v%s", src.Describe, err, hint(err, 0))
	}
	tx, err := db.BeginTx(ctx, &dbsql.TxOptions{Isolation: dbsql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: cannot start a read-only transaction: %v%s", src.Describe, err, hint(err, 0))
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo

	q, err := selectStatement(src, opts.Columns)
	if err != nil {
		return nil, LoadInfo{}, err
	}
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: %v%s", src.Describe, err, hint(err, 0))
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: %v%s", src.Describe, err, hint(err, 0))
	}
	cols, pick, err := resultColumns(src, types, opts.Columns)
	if err != nil {
		return nil, LoadInfo{}, err
	}
	b, err := NewTableBuilder(name, cols)
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: %v", src.Describe, err)
	}
	b.SetComment(opts.Comment)

	var loaded atomic.Int64
	label := cmpString(opts.Label, src.Describe)
	prog := progress.Start(opts.Progress, "loading "+label, func() string { return fmt.Sprintf("%d rows", loaded.Load()) })
	defer prog.Stop()

	vals := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	row := make([]any, len(cols))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, LoadInfo{}, fmt.Errorf("%s: row %d: %v", src.Describe, loaded.Load()+1, err)
		}
		for i, k := range pick {
			v, err := convert(vals[k], cols[i].Type, types[k].DatabaseTypeName())
			if err != nil {
				return nil, LoadInfo{}, fmt.Errorf("%s: row %d: column %s: %v", src.Describe, loaded.Load()+1, cols[i].Name, err)
			}
			row[i] = v
		}
		if err := b.Append(row...); err != nil {
			return nil, LoadInfo{}, fmt.Errorf("%s: row %d: %v (declare the column's type under columns:)", src.Describe, loaded.Load()+1, err)
		}
		if n := loaded.Add(1); opts.Check != nil && n%CheckRows == 0 {
			if err := opts.Check(n); err != nil {
				return nil, LoadInfo{}, fmt.Errorf("%s: stopped after %d rows: %w", src.Describe, n, err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: the load failed after %d rows: %v%s", src.Describe, loaded.Load(), err, hint(err, loaded.Load()))
	}
	if opts.Check != nil {
		if err := opts.Check(loaded.Load()); err != nil {
			return nil, LoadInfo{}, fmt.Errorf("%s: stopped after %d rows: %w", src.Describe, loaded.Load(), err)
		}
	}
	t, err := b.Build()
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: %v", src.Describe, err)
	}
	return t, LoadInfo{Rows: t.rows, Columns: cols, Duration: time.Since(start)}, nil
}

// selectStatement is the SELECT a load runs: the query as given, or the
// table's declared columns (all without a declaration), with identifiers
// quoted for the driver.
func selectStatement(src DBSource, declared []DBColumn) (string, error) {
	if src.Query != "" {
		return src.Query, nil
	}
	quote := func(id string) string {
		if src.Driver == "postgres" {
			return `"` + strings.ReplaceAll(id, `"`, `""`) + `"`
		}
		return "`" + strings.ReplaceAll(id, "`", "``") + "`"
	}
	var tbl []string
	for _, part := range strings.Split(src.Table, ".") {
		tbl = append(tbl, quote(part))
	}
	list := "*"
	if len(declared) > 0 {
		var names []string
		for _, c := range declared {
			names = append(names, quote(cmpString(c.Source, c.Name)))
		}
		list = strings.Join(names, ", ")
	}
	return fmt.Sprintf("SELECT %s FROM %s", list, strings.Join(tbl, ".")), nil
}

// resultColumns returns the table's columns and, for each, the index of the
// result column it reads.
func resultColumns(src DBSource, types []*dbsql.ColumnType, declared []DBColumn) ([]Column, []int, error) {
	if len(declared) == 0 {
		cols := make([]Column, len(types))
		pick := make([]int, len(types))
		for i, ct := range types {
			t, ok := SourceType(ct.DatabaseTypeName())
			if !ok {
				return nil, nil, fmt.Errorf("%s: column %s has type %s, which dpsql cannot load: declare the dataset's columns with a type for it (columns: [{name: %s, type: TEXT}, …]), or convert it in source.query",
					src.Describe, ct.Name(), typeName(ct), ct.Name())
			}
			cols[i] = Column{Name: ct.Name(), Type: t}
			pick[i] = i
		}
		return cols, pick, nil
	}
	cols := make([]Column, len(declared))
	pick := make([]int, len(declared))
	for i, c := range declared {
		want := cmpString(c.Source, c.Name)
		k := -1
		for j, ct := range types {
			if strings.EqualFold(ct.Name(), want) {
				k = j
				break
			}
		}
		if k < 0 {
			var have []string
			for _, ct := range types {
				have = append(have, ct.Name())
			}
			return nil, nil, fmt.Errorf("%s: no column %s in the result (it has %s): fix columns: or the query", src.Describe, want, strings.Join(have, ", "))
		}
		cols[i] = Column{Name: c.Name, Type: c.Type}
		pick[i] = k
	}
	return cols, pick, nil
}

func typeName(ct *dbsql.ColumnType) string {
	if n := ct.DatabaseTypeName(); n != "" {
		return n
	}
	return "unknown"
}

// SourceType maps a source column type, as the driver names it
// (database/sql's DatabaseTypeName: MySQL's INT, UNSIGNED BIGINT, DECIMAL,
// VARCHAR…; PostgreSQL's INT4, FLOAT8, NUMERIC, TIMESTAMPTZ…), to the
// column store's: integers and booleans to BIGINT; floating and decimal
// numbers to DOUBLE; DATE; DATETIME, TIMESTAMP and TIMESTAMPTZ to
// DATETIME(6), in UTC; character, binary, JSON, enumeration, UUID and TIME
// types to TEXT. Anything else (geometry, intervals, arrays, network
// addresses…) is not loaded without a declared type.
func SourceType(name string) (Type, bool) {
	n := strings.ToUpper(strings.TrimPrefix(strings.ToUpper(name), "UNSIGNED "))
	switch n {
	case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT", "YEAR",
		"INT2", "INT4", "INT8", "BOOL", "BOOLEAN":
		return BigInt, true
	case "FLOAT", "DOUBLE", "REAL", "DECIMAL", "NUMERIC", "FLOAT4", "FLOAT8":
		return Double, true
	case "DATE":
		return Date, true
	case "DATETIME", "TIMESTAMP", "TIMESTAMPTZ":
		return Datetime, true
	case "CHAR", "VARCHAR", "TEXT", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT",
		"BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BINARY", "VARBINARY",
		"JSON", "JSONB", "ENUM", "SET", "TIME", "BPCHAR", "NAME", "UUID", "CITEXT", "XML":
		return Text, true
	}
	return 0, false
}

// convert turns a driver value into one ColumnBuilder.Append takes for a
// column of type t.
func convert(v any, t Type, srcType string) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		if t == Text {
			return strconv.FormatBool(x), nil
		}
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case int64:
		switch t {
		case Text:
			return strconv.FormatInt(x, 10), nil
		case Double:
			return float64(x), nil
		}
		return x, nil
	case uint64:
		if t == Text {
			return strconv.FormatUint(x, 10), nil
		}
		if t == Double {
			return float64(x), nil
		}
		if x > 1<<63-1 {
			return nil, fmt.Errorf("%d does not fit BIGINT (declare the column DOUBLE or TEXT)", x)
		}
		return int64(x), nil
	case int32:
		return convert(int64(x), t, srcType)
	case float32:
		return convert(float64(x), t, srcType)
	case float64:
		switch t {
		case Text:
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		case BigInt:
			if x != float64(int64(x)) {
				return nil, fmt.Errorf("%v is not an integer", x)
			}
			return int64(x), nil
		}
		return x, nil
	case time.Time:
		if t == Text {
			if strings.EqualFold(srcType, "DATE") {
				return x.Format(time.DateOnly), nil
			}
			return x.Format("2006-01-02 15:04:05.999999"), nil
		}
		return x, nil
	case []byte:
		return x, nil // stored, or parsed as text, by ColumnBuilder.Append
	case string:
		return x, nil
	}
	if t == Text {
		return fmt.Sprint(v), nil
	}
	return nil, fmt.Errorf("the driver gave %T, which a %s column cannot hold (declare the column TEXT)", v, t)
}

// hint says what to fix for a source error: the password, the table, the
// server's address, the connection.
func hint(err error, rows int64) string {
	var me *mysql.MySQLError
	var pe *pgconn.PgError
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &me):
		switch me.Number {
		case 1045:
			return " (wrong user or password: fix the DSN)"
		case 1044, 1142, 1143:
			return " (the DSN's user may not read this: grant it SELECT)"
		case 1049:
			return " (no such database: fix the DSN's database name)"
		case 1146:
			return " (no such table: fix source.table, or the DSN's database)"
		case 1054:
			return " (no such column: fix columns: or source.query)"
		case 1064:
			return " (fix source.query)"
		case 2013, 2006, 1927:
			return lost(rows)
		}
	case errors.As(err, &pe):
		switch {
		case pe.Code == "28P01" || pe.Code == "28000":
			return " (wrong user or password: fix the DSN)"
		case pe.Code == "3D000":
			return " (no such database: fix the DSN's database name)"
		case pe.Code == "42P01":
			return " (no such table: fix source.table, or the DSN's database or search_path)"
		case pe.Code == "42703":
			return " (no such column: fix columns: or source.query)"
		case pe.Code == "42501":
			return " (the DSN's user may not read this: grant it SELECT)"
		case pe.Code == "42601":
			return " (fix source.query)"
		case strings.HasPrefix(pe.Code, "57P"), strings.HasPrefix(pe.Code, "08"):
			return lost(rows)
		}
	case errors.Is(err, syscall.ECONNREFUSED):
		return " (nothing listens at the DSN's address: start the database server or fix the DSN's host and port)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return " (the server did not answer in time: check the DSN's host and port and the network)"
	case errors.As(err, &oe) && oe.Op == "dial":
		return " (cannot connect: check the DSN's host and port)"
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return lost(rows)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return " (cannot connect: check the DSN's host, port, user and password)"
	}
	if strings.Contains(err.Error(), "cannot parse") {
		return " (fix the DSN)"
	}
	if strings.Contains(err.Error(), "unexpected EOF") || strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "conn closed") {
		return lost(rows)
	}
	return ""
}

func lost(rows int64) string {
	if rows == 0 {
		return " (the connection to the source was lost: check that its server is up, then reload)"
	}
	return fmt.Sprintf(" (the connection to the source was lost after %d rows: nothing of this load is served; check that its server is up, then reload)", rows)
}

// redact removes the DSN and the password in it from err's text.
func redact(err error, drv, dsn string) error {
	msg := err.Error()
	secrets := []string{dsn}
	secrets = append(secrets, passwords(drv, dsn)...)
	changed := false
	for _, s := range secrets {
		if len(s) >= 3 && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "<redacted>")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return errors.New(msg)
}

// passwords returns the password(s) a DSN holds, in every form parsing
// finds them.
func passwords(drv, dsn string) []string {
	var out []string
	add := func(p string) {
		if p != "" {
			out = append(out, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	switch drv {
	case "mysql":
		if c, err := mysql.ParseDSN(dsn); err == nil {
			add(c.Passwd)
		}
		// user:password@… even when the rest does not parse.
		if at := strings.LastIndex(dsn, "@"); at > 0 {
			if _, p, ok := strings.Cut(dsn[:at], ":"); ok {
				add(p)
			}
		}
	case "postgres":
		if c, err := pgx.ParseConfig(dsn); err == nil {
			add(c.Password)
		}
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			p, _ := u.User.Password()
			add(p)
		}
		for _, f := range strings.Fields(dsn) {
			if k, v, ok := strings.Cut(f, "="); ok && strings.EqualFold(k, "password") {
				add(strings.Trim(v, "'"))
			}
		}
	}
	return out
}

func cmpString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cmpDuration(a, b time.Duration) time.Duration {
	if a > 0 {
		return a
	}
	return b
}
