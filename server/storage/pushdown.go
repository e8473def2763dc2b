package storage

// Push-down tables (mode: pushdown): a protected table whose rows stay in
// its database. Its load reads the schema only (a SELECT that returns no
// row); a release asks the database for its grouped contributions
// (pushdown.Query) with SQL written here, from the configured table or
// query and the columns the schema gave, with every literal bound as a
// parameter. Values are converted as a load converts them (convert, then
// the column store's own conversion), so that a release reads the values
// an in-memory copy of the same snapshot would hold.

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dpsql/dpsql/release/pushdown"
)

// dbPushdown is the pushdown.Source of a table read from a database.
type dbPushdown struct {
	src  DBSource
	from string // the quoted table, or the configured query as a derived table
	cols map[string]pushColumn
	// connectTimeout bounds connecting and starting the transaction.
	connectTimeout time.Duration
}

// pushColumn is one column of a push-down table: its name in the source,
// its type in dpsql and the source's type name.
type pushColumn struct {
	Column
	source  string
	srcType string
}

var _ pushdown.Source = (*dbPushdown)(nil)

// PushdownSource implements pushdown.Table: the table's database, or nil
// for a table held in memory.
func (t *Table) PushdownSource() pushdown.Source {
	if t.push == nil {
		return nil
	}
	return t.push
}

// LoadDBSchema reads src's columns and types (a SELECT that returns no row)
// and returns an empty table that reads its rows from src on demand
// (PushdownSource). Its errors are LoadDB's.
func LoadDBSchema(ctx context.Context, name string, src DBSource, opts DBLoadOptions) (_ *Table, _ LoadInfo, err error) {
	defer func() {
		if err != nil {
			err = redact(err, src.Driver, src.DSN)
		}
	}()
	start := time.Now()
	p := &dbPushdown{src: src, connectTimeout: cmpDuration(opts.ConnectTimeout, 30*time.Second)}
	p.from = p.fromClause()
	db, tx, err := p.begin(ctx)
	if err != nil {
		return nil, LoadInfo{}, err
	}
	defer db.Close()
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	q := "SELECT * FROM " + p.from + " WHERE 1 = 0"
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: %v%s", src.Describe, err, hint(err, 0))
	}
	types, err := rows.ColumnTypes()
	rows.Close()
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: %v%s", src.Describe, err, hint(err, 0))
	}
	cols, pick, err := resultColumns(src, types, opts.Columns)
	if err != nil {
		return nil, LoadInfo{}, err
	}
	p.cols = map[string]pushColumn{}
	for i, c := range cols {
		ct := types[pick[i]]
		p.cols[strings.ToLower(c.Name)] = pushColumn{Column: c, source: ct.Name(), srcType: strings.ToUpper(ct.DatabaseTypeName())}
	}
	b, err := NewTableBuilder(name, cols)
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: %v", src.Describe, err)
	}
	b.SetComment(opts.Comment)
	t, err := b.Build()
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("%s: %v", src.Describe, err)
	}
	t.push = p
	return t, LoadInfo{Columns: cols, Duration: time.Since(start)}, nil
}

// fromClause is what the statements read: the quoted table, or the
// configured query as a derived table (the administrator's text, never an
// analyst's).
func (p *dbPushdown) fromClause() string {
	if p.src.Query != "" {
		return "(" + strings.TrimRight(strings.TrimSpace(p.src.Query), ";") + ") AS dpsql_source"
	}
	var parts []string
	for _, part := range strings.Split(p.src.Table, ".") {
		parts = append(parts, p.quote(part))
	}
	return strings.Join(parts, ".")
}

func (p *dbPushdown) quote(id string) string {
	if p.src.Driver == "postgres" {
		return `"` + strings.ReplaceAll(id, `"`, `""`) + `"`
	}
	return "`" + strings.ReplaceAll(id, "`", "``") + "`"
}

// begin connects and starts a read-only REPEATABLE READ transaction, as
// LoadDB does.
func (p *dbPushdown) begin(ctx context.Context) (*dbsql.DB, *dbsql.Tx, error) {
	dn, err := driverName(p.src.Driver)
	if err != nil {
		return nil, nil, err
	}
	db, err := dbsql.Open(dn, p.src.DSN)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the DSN does not parse: %v (fix the DSN)", p.src.Describe, err)
	}
	db.SetMaxOpenConns(1)
	cctx, cancel := context.WithTimeout(ctx, p.connectTimeout)
	err = db.PingContext(cctx)
	cancel()
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("%s: cannot connect: %v%s", p.src.Describe, err, hint(err, 0))
	}
	tx, err := db.BeginTx(ctx, &dbsql.TxOptions{Isolation: dbsql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("%s: cannot start a read-only transaction: %v%s", p.src.Describe, err, hint(err, 0))
	}
	return db, tx, nil
}

// textType reports whether a source type holds text that the database
// compares under a collation (compared and grouped here byte for byte).
func (p *dbPushdown) textType(srcType string) bool {
	switch srcType {
	case "CHAR", "VARCHAR", "TEXT", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET", "JSON",
		"BPCHAR", "NAME", "CITEXT":
		return true
	}
	return false
}

// groupExpr is the expression a column is grouped and returned by: text
// as its bytes (MySQL and MariaDB compare text under the column's
// collation, often case- and trailing-space-insensitive; dpsql compares
// bytes), other types as they are. PostgreSQL's deterministic collations
// compare equal only equal bytes, except CITEXT's, read as text.
func (p *dbPushdown) groupExpr(c pushColumn) string {
	q := p.quote(c.source)
	switch {
	case p.src.Driver != "postgres" && p.textType(c.srcType):
		return "CAST(" + q + " AS BINARY)"
	case p.src.Driver == "postgres" && c.srcType == "CITEXT":
		return q + "::text"
	}
	return q
}

// cmpExpr is the expression a column is compared and ordered by: text in
// byte order (dpsql's utf8mb4_0900_bin order is the order of the bytes).
func (p *dbPushdown) cmpExpr(c pushColumn) string {
	if p.src.Driver == "postgres" && p.textType(c.srcType) {
		return p.groupExpr(c) + ` COLLATE "C"`
	}
	return p.groupExpr(c)
}

// column returns the column called name (its dpsql name).
func (p *dbPushdown) column(name string) (pushColumn, error) {
	c, ok := p.cols[strings.ToLower(name)]
	if !ok {
		return c, fmt.Errorf("no column %s", name)
	}
	return c, nil
}

// filterable reports whether a column may be compared with literals of
// its dpsql type in the source with the same result as in dpsql.
func (p *dbPushdown) filterable(c pushColumn) bool {
	switch c.Type {
	case Text:
		return p.textType(c.srcType)
	case BigInt:
		switch c.srcType {
		case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT", "INT2", "INT4", "INT8",
			"UNSIGNED TINYINT", "UNSIGNED SMALLINT", "UNSIGNED MEDIUMINT", "UNSIGNED INT", "UNSIGNED BIGINT":
			return true
		}
	case Double:
		switch c.srcType {
		case "DOUBLE", "FLOAT8", "DECIMAL", "NUMERIC":
			return true
		}
	}
	return false
}

// Check reports whether the source can answer q: its columns exist, and
// the filtered ones compare in the source as in dpsql.
func (p *dbPushdown) Check(q pushdown.Query) error {
	for _, n := range append([]string{q.Unit}, q.Group...) {
		if _, err := p.column(n); err != nil {
			return err
		}
	}
	return p.checkPred(q.Filter)
}

func (p *dbPushdown) checkPred(f *pushdown.Pred) error {
	if f == nil {
		return nil
	}
	for _, a := range f.Args {
		if err := p.checkPred(a); err != nil {
			return err
		}
	}
	if f.Op != pushdown.Cmp && f.Op != pushdown.In && f.Op != pushdown.IsNull {
		return nil
	}
	c, err := p.column(f.Column)
	if err != nil {
		return err
	}
	if f.Op != pushdown.IsNull && !p.filterable(c) {
		return fmt.Errorf("column %s (%s in the source) cannot be compared with a literal in push-down mode: compare text, integer, DOUBLE or DECIMAL columns", c.Name, c.srcType)
	}
	return nil
}

// Statements implements pushdown.Source.
func (p *dbPushdown) Statements(qs []pushdown.Query) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i], _, _ = p.statement(q)
	}
	return out
}

// statement writes the SQL of q, its parameters and its grouped columns
// (the unit first).
func (p *dbPushdown) statement(q pushdown.Query) (string, []any, []pushColumn) {
	var (
		sel  []string
		cols []pushColumn
		pos  []string
	)
	for i, n := range append([]string{q.Unit}, q.Group...) {
		c, err := p.column(n)
		if err != nil {
			return "", nil, nil // Check refused it
		}
		cols = append(cols, c)
		sel = append(sel, fmt.Sprintf("%s AS g%d", p.groupExpr(c), i))
		pos = append(pos, fmt.Sprint(i+1))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s, COUNT(*) AS n FROM %s", strings.Join(sel, ", "), p.from)
	var args []any
	if q.Filter != nil {
		b.WriteString(" WHERE ")
		p.writePred(&b, q.Filter, &args)
	}
	fmt.Fprintf(&b, " GROUP BY %s ORDER BY ", strings.Join(pos, ", "))
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		if p.src.Driver == "postgres" && p.textType(c.srcType) {
			b.WriteString(p.cmpExpr(c)) // byte order; grouped by the column, so allowed
		} else {
			b.WriteString(pos[i])
		}
	}
	return b.String(), args, cols
}

// writePred writes f, appending its literals to args as parameters.
func (p *dbPushdown) writePred(b *strings.Builder, f *pushdown.Pred, args *[]any) {
	switch f.Op {
	case pushdown.And, pushdown.Or:
		op := " AND "
		if f.Op == pushdown.Or {
			op = " OR "
		}
		b.WriteString("(")
		for i, a := range f.Args {
			if i > 0 {
				b.WriteString(op)
			}
			p.writePred(b, a, args)
		}
		b.WriteString(")")
	case pushdown.Not:
		b.WriteString("(NOT ")
		p.writePred(b, f.Args[0], args)
		b.WriteString(")")
	case pushdown.IsNull:
		c, _ := p.column(f.Column)
		b.WriteString("(" + p.quote(c.source) + " IS NULL)")
	case pushdown.Cmp:
		c, _ := p.column(f.Column)
		fmt.Fprintf(b, "(%s %s %s)", p.cmpExpr(c), cmpOp(f.Comparison), p.param(f.Values[0], args))
	case pushdown.In:
		c, _ := p.column(f.Column)
		ps := make([]string, len(f.Values))
		for i, v := range f.Values {
			ps[i] = p.param(v, args)
		}
		fmt.Fprintf(b, "(%s IN (%s))", p.cmpExpr(c), strings.Join(ps, ", "))
	}
}

// cmpOp returns the comparison as written, one of the six allowed.
func cmpOp(op string) string {
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
		return op
	}
	return "="
}

// param appends v to args and returns its placeholder: ? for MySQL, $n
// with the parameter's type for PostgreSQL (so that the column's type
// never makes a literal fail to convert).
func (p *dbPushdown) param(v any, args *[]any) string {
	*args = append(*args, v)
	if p.src.Driver != "postgres" {
		return "?"
	}
	cast := "text"
	switch v.(type) {
	case int64:
		cast = "int8"
	case float64:
		cast = "float8"
	}
	return fmt.Sprintf("$%d::%s", len(*args), cast)
}

// Read implements pushdown.Source. A row whose value the column's type
// cannot hold is skipped (a scan skips a row whose evaluation fails),
// never an error: whether a release fails must not depend on a row.
func (p *dbPushdown) Read(ctx context.Context, qs []pushdown.Query, fn func(int, *pushdown.Row) error) (err error) {
	defer func() {
		if err != nil && !errors.Is(err, errCallback) {
			err = redact(err, p.src.Driver, p.src.DSN)
		}
	}()
	for _, q := range qs {
		if err := p.Check(q); err != nil {
			return fmt.Errorf("%s: %v", p.src.Describe, err)
		}
	}
	db, tx, err := p.begin(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to undo
	for i, q := range qs {
		if err := p.read(ctx, tx, i, q, fn); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// errCallback marks an error of Read's callback, returned as it is.
var errCallback = errors.New("callback")

type callbackError struct{ err error }

func (e callbackError) Error() string        { return e.err.Error() }
func (e callbackError) Is(target error) bool { return target == errCallback }
func (e callbackError) Unwrap() error        { return e.err }

func (p *dbPushdown) read(ctx context.Context, tx *dbsql.Tx, qi int, q pushdown.Query, fn func(int, *pushdown.Row) error) error {
	stmt, args, cols := p.statement(q)
	rows, err := tx.QueryContext(ctx, stmt, args...)
	if err != nil {
		return fmt.Errorf("%s: %v%s", p.src.Describe, err, hint(err, 0))
	}
	defer rows.Close()
	n := len(cols)
	vals := make([]any, n+1)
	ptrs := make([]any, n+1)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	conv := make([]*ColumnBuilder, n)
	for i, c := range cols {
		conv[i] = newColumnBuilder(Column{Name: c.Name, Type: c.Type})
	}
	row := &pushdown.Row{Group: make([]any, n-1)}
	var read int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("%s: row %d: %v", p.src.Describe, read+1, err)
		}
		read++
		ok := true
		for i, c := range cols {
			v, err := storedValue(conv[i], vals[i], c.srcType)
			if err != nil {
				ok = false
				break
			}
			if i == 0 {
				row.Unit = v
			} else {
				row.Group[i-1] = v
			}
		}
		cnt, isInt := countOf(vals[n])
		if !ok || !isInt || cnt < 1 {
			continue
		}
		row.Count = cnt
		if err := fn(qi, row); err != nil {
			return callbackError{err}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: the read failed after %d groups: %v%s", p.src.Describe, read, err, hint(err, read))
	}
	return nil
}

// countOf reads COUNT(*)'s value.
func countOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case uint64:
		return int64(min(x, 1<<62)), true
	case []byte:
		n, ok := parseInt(x)
		return n, ok
	case string:
		n, ok := parseInt([]byte(x))
		return n, ok
	}
	return 0, false
}

// storedValue converts a driver value as a load does (convert, then the
// column's Append) and returns the value the column store would hold:
// int64, float64, string, time.Time or nil.
func storedValue(b *ColumnBuilder, v any, srcType string) (any, error) {
	v, err := convert(v, b.col.Type, srcType)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	if b.col.Type == Text {
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	}
	b.n = 0
	b.ints, b.flts, b.times, b.codes, b.nulls = b.ints[:0], b.flts[:0], b.times[:0], b.codes[:0], b.nulls[:0]
	if b.col.Type == Text {
		clear(b.dict)
		b.strs, b.size = b.strs[:0], 0
	}
	if err := b.Append(v); err != nil {
		return nil, err
	}
	if b.nulls.has(0) || (b.col.Type == Text && b.codes[0] == nullCode) {
		return nil, nil
	}
	switch b.col.Type {
	case Text:
		return b.strs[b.codes[0]], nil
	case BigInt:
		return b.ints[0], nil
	case Double:
		return b.flts[0], nil
	}
	return b.times[0], nil
}
