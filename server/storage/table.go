package storage

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"
)

// RowCounts says what a table reports as its row count to
// information_schema.tables, SHOW TABLE STATUS and the optimiser.
type RowCounts int

const (
	// ExactCounts reports the exact row count; COUNT(*) may then be
	// answered from it without a scan. For unprotected tables.
	ExactCounts RowCounts = iota
	// HiddenCounts reports 0 rows and 0 bytes: nothing about the table's
	// size leaves through metadata. The choice for protected tables.
	HiddenCounts
	// CoarseCounts reports the row count rounded up to a power of ten (and
	// the data length likewise). It still depends on the data, so it is not
	// differentially private; use it only where an order of magnitude is
	// public knowledge.
	CoarseCounts
)

// partitionRows is the number of rows per partition.
const partitionRows = 1 << 16

// Table is a read-only, column-oriented table held in memory. Build one
// with a TableBuilder. A Table is immutable, so any number of queries may
// scan it concurrently.
type Table struct {
	name    string
	comment string
	cols    []Column
	data    []column
	rows    int
	schema  sql.Schema
	counts  RowCounts
	guard   func(*sql.Context) error
	version uint64      // see Version
	push    *dbPushdown // mode: pushdown: the rows stay in this database (pushdown.go)

	// projection (nil: all columns, in order)
	proj       []int
	projNames  []string
	projSchema sql.Schema
}

var (
	_ sql.Table           = (*Table)(nil)
	_ sql.StatisticsTable = (*Table)(nil)
	_ sql.ProjectedTable  = (*Table)(nil)
	_ sql.CommentedTable  = (*Table)(nil)
	_ sql.PrimaryKeyTable = (*Table)(nil)
)

// versions numbers the tables built by this process (Version).
var versions atomic.Uint64

func newTable(name, comment string, cols []Column, data []column, rows int) *Table {
	t := &Table{name: name, comment: comment, cols: cols, data: data, rows: rows, version: versions.Add(1)}
	t.schema = make(sql.Schema, len(cols))
	for i, c := range cols {
		t.schema[i] = &sql.Column{
			Name:     c.Name,
			Type:     c.Type.SQLType(),
			Nullable: !c.NotNull,
			Source:   name,
		}
	}
	return t
}

// setDatabase records the database name in the schema (DatabaseSource).
func (t *Table) setDatabase(db string) {
	for _, c := range t.schema {
		c.DatabaseSource = db
	}
}

// Name implements sql.Table.
func (t *Table) Name() string { return t.name }

// String implements sql.Table.
func (t *Table) String() string { return t.name }

// Comment implements sql.CommentedTable.
func (t *Table) Comment() string { return t.comment }

// Version identifies the rows of t within this process: every copy of t
// (WithProjections, WithRowCounts, WithScanGuard) serves the same rows and
// has the same version; a table built again (a reload, even of the same
// file) has a larger one. Caches of data derived from a table's rows (the
// release index) key on it. It is a counter of loads, not a digest of the
// rows: it says nothing about the data.
func (t *Table) Version() uint64 { return t.version }

// Columns describes the table's columns.
func (t *Table) Columns() []Column { return append([]Column(nil), t.cols...) }

// Len returns the number of rows (exact, whatever RowCounts says: for the
// operator, not for analysts).
func (t *Table) Len() int { return t.rows }

// Schema implements sql.Table; with projections, the projected columns.
func (t *Table) Schema() sql.Schema {
	if t.proj != nil {
		return t.projSchema
	}
	return t.schema
}

// PrimaryKeySchema implements sql.PrimaryKeyTable: the full schema and no
// key (tables are keyless). go-mysql-server v0.20.0 needs it to map column
// ids to positions once WithProjections has pruned columns: without it,
// a projected non-key table's columns are taken to be its first ones.
func (t *Table) PrimaryKeySchema() sql.PrimaryKeySchema {
	return sql.NewPrimaryKeySchema(t.schema)
}

// Collation implements sql.Table.
func (t *Table) Collation() sql.CollationID { return sql.Collation_Default }

// WithRowCounts returns a copy of t (sharing the data) that reports row
// counts as c says.
func (t *Table) WithRowCounts(c RowCounts) *Table {
	nt := *t
	nt.counts = c
	return &nt
}

// WithScanGuard returns a copy of t (sharing the data) that calls guard
// before serving any rows and fails the scan with its error. The governed
// server guards protected tables so that only private releases read them,
// whatever plan the analyzer made (a second line behind the planner's
// guard).
func (t *Table) WithScanGuard(guard func(*sql.Context) error) *Table {
	nt := *t
	nt.guard = guard
	return &nt
}

// RowCounts returns how the table reports its row count.
func (t *Table) RowCounts() RowCounts { return t.counts }

// RowCount implements sql.StatisticsTable. Only ExactCounts reports the
// count as exact.
func (t *Table) RowCount(*sql.Context) (uint64, bool, error) {
	switch t.counts {
	case HiddenCounts:
		return 0, false, nil
	case CoarseCounts:
		return coarse(uint64(t.rows)), false, nil
	}
	return uint64(t.rows), true, nil
}

// DataLength implements sql.StatisticsTable: an estimate of the memory the
// table's data holds.
func (t *Table) DataLength(*sql.Context) (uint64, error) {
	var n int64
	for _, c := range t.data {
		n += c.bytes()
	}
	switch t.counts {
	case HiddenCounts:
		return 0, nil
	case CoarseCounts:
		return coarse(uint64(n)), nil
	}
	return uint64(n), nil
}

// coarse rounds n up to a power of ten (0 stays 0).
func coarse(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	p := uint64(1)
	for p < n && p <= math.MaxUint64/10 {
		p *= 10
	}
	return p
}

// WithProjections implements sql.ProjectedTable: scans then produce only
// the named columns, in that order.
func (t *Table) WithProjections(names []string) sql.Table {
	nt := *t
	if names == nil {
		nt.proj, nt.projNames, nt.projSchema = nil, nil, nil
		return &nt
	}
	nt.proj = make([]int, len(names))
	nt.projSchema = make(sql.Schema, len(names))
	for i, name := range names {
		j := t.schema.IndexOfColName(name)
		if j < 0 {
			// The analyzer only projects columns it found in Schema().
			panic(fmt.Sprintf("storage: table %s has no column %s", t.name, name))
		}
		nt.proj[i] = j
		nt.projSchema[i] = t.schema[j]
	}
	nt.projNames = append([]string(nil), names...)
	return &nt
}

// Projections implements sql.ProjectedTable.
func (t *Table) Projections() []string { return t.projNames }

type partition struct{ start, end int }

func (p partition) Key() []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(p.start))
}

// Partitions implements sql.Table: consecutive ranges of rows.
func (t *Table) Partitions(*sql.Context) (sql.PartitionIter, error) {
	var parts []sql.Partition
	for s := 0; s < t.rows; s += partitionRows {
		parts = append(parts, partition{s, min(s+partitionRows, t.rows)})
	}
	return sql.PartitionsToPartitionIter(parts...), nil
}

// PartitionRows implements sql.Table.
func (t *Table) PartitionRows(ctx *sql.Context, p sql.Partition) (sql.RowIter, error) {
	if t.guard != nil {
		if err := t.guard(ctx); err != nil {
			return nil, err
		}
	}
	pp, ok := p.(partition)
	if !ok {
		return nil, fmt.Errorf("storage: table %s got a foreign partition %T", t.name, p)
	}
	cols := t.proj
	if cols == nil {
		cols = make([]int, len(t.data))
		for i := range cols {
			cols[i] = i
		}
	}
	return &rowIter{t: t, cols: cols, next: pp.start, end: pp.end}, nil
}

// rowBatch is how many rows a row iterator materialises at once: rows are
// carved from one allocation per batch.
const rowBatch = 256

type rowIter struct {
	t         *Table
	cols      []int
	next, end int
	batch     []any
	k, n      int
}

func (it *rowIter) Next(*sql.Context) (sql.Row, error) {
	if it.k == it.n {
		if it.next >= it.end {
			return nil, io.EOF
		}
		n := min(rowBatch, it.end-it.next)
		w := len(it.cols)
		// A fresh array per batch: consumers may keep rows.
		it.batch = make([]any, n*w)
		for j, c := range it.cols {
			it.t.data[c].fill(it.batch, w, j, it.next, n)
		}
		it.next += n
		it.k, it.n = 0, n
	}
	w := len(it.cols)
	row := it.batch[it.k*w : (it.k+1)*w : (it.k+1)*w]
	it.k++
	return row, nil
}

func (it *rowIter) Close(*sql.Context) error { return nil }

// TableBuilder assembles a Table column by column or row by row.
type TableBuilder struct {
	name    string
	comment string
	cols    []*ColumnBuilder
}

// NewTableBuilder starts a table with the given columns (at least one,
// distinct names, case-insensitively).
func NewTableBuilder(name string, cols []Column) (*TableBuilder, error) {
	if name == "" {
		return nil, fmt.Errorf("a table needs a name")
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("table %s needs at least one column", name)
	}
	seen := map[string]bool{}
	b := &TableBuilder{name: name}
	for _, c := range cols {
		if c.Name == "" {
			return nil, fmt.Errorf("table %s: a column has no name", name)
		}
		k := strings.ToLower(c.Name)
		if seen[k] {
			return nil, fmt.Errorf("table %s: column %s appears twice", name, c.Name)
		}
		seen[k] = true
		if c.Type < Text || c.Type > Datetime {
			return nil, fmt.Errorf("table %s: column %s has an unknown type", name, c.Name)
		}
		b.cols = append(b.cols, newColumnBuilder(c))
	}
	return b, nil
}

// SetComment sets the table comment (shown by SHOW CREATE TABLE and
// information_schema).
func (b *TableBuilder) SetComment(c string) { b.comment = c }

// Column returns the builder of column i, for typed appends. Every column
// must end with the same number of values.
func (b *TableBuilder) Column(i int) *ColumnBuilder { return b.cols[i] }

// NumColumns returns the number of columns.
func (b *TableBuilder) NumColumns() int { return len(b.cols) }

// Rows returns the number of complete rows so far.
func (b *TableBuilder) Rows() int {
	n := math.MaxInt
	for _, c := range b.cols {
		n = min(n, c.n)
	}
	return n
}

// Append adds one row of Go values (see ColumnBuilder.Append).
func (b *TableBuilder) Append(values ...any) error {
	if len(values) != len(b.cols) {
		return fmt.Errorf("table %s has %d columns, got %d values", b.name, len(b.cols), len(values))
	}
	for i, v := range values {
		if err := b.cols[i].Append(v); err != nil {
			b.rollback()
			return err
		}
	}
	return nil
}

// AppendText adds one row of text fields, parsed by column type (see
// ColumnBuilder.AppendText).
func (b *TableBuilder) AppendText(fields [][]byte) error {
	if len(fields) != len(b.cols) {
		return fmt.Errorf("table %s has %d columns, the row has %d field(s)", b.name, len(b.cols), len(fields))
	}
	for i, f := range fields {
		if err := b.cols[i].AppendText(f); err != nil {
			b.rollback()
			return err
		}
	}
	return nil
}

// rollback drops the values of a partly appended row.
func (b *TableBuilder) rollback() {
	n := b.Rows()
	for _, c := range b.cols {
		if c.n > n {
			c.truncate(n)
		}
	}
}

// Build returns the table. The builder must not be used after.
func (b *TableBuilder) Build() (*Table, error) {
	n := b.cols[0].n
	cols := make([]Column, len(b.cols))
	data := make([]column, len(b.cols))
	for i, c := range b.cols {
		if c.n != n {
			return nil, fmt.Errorf("table %s: column %s has %d values, column %s has %d", b.name, c.col.Name, c.n, b.cols[0].col.Name, n)
		}
		cols[i] = c.col
		data[i] = c.build()
	}
	return newTable(b.name, b.comment, cols, data, n), nil
}
