// Package pushdown describes what a release asks of a protected table whose
// rows stay in a database (mode: pushdown): per privacy unit, the distinct
// combinations of a few plain columns and how many rows hold each, among
// the rows that pass a filter made only of plain columns compared with
// literals. The planner builds a Query from a release it has checked
// (planner/pushdown.go); the table's Source (server/storage) writes the SQL
// itself — identifiers from the configured schema, literals as bound
// parameters — so no text of the analyst is ever sent to the database.
//
// It is a leaf: the planner and the storage both import it and nothing
// else of ours.
package pushdown

import "context"

// Query asks for the grouped contributions of one release:
//
//	SELECT unit, g1, …, gn, COUNT(*) FROM table WHERE filter
//	GROUP BY unit, g1, …, gn ORDER BY unit, g1, …, gn
//
// with values compared and grouped byte for byte (text) or by value
// (numbers, dates), as dpsql's own column store compares them.
type Query struct {
	// Unit is the privacy-unit column (its name in dpsql).
	Unit string
	// Group are the other grouped columns: the release's keys, then the
	// aggregates' value columns.
	Group []string
	// Filter keeps the rows it is true for; nil keeps every row.
	Filter *Pred
}

// Op is the operator of a Pred.
type Op int

// Operators of a filter.
const (
	And    Op = iota // every Args is true
	Or               // some Args is true
	Not              // Args[0] is false
	Cmp              // Column Cmp Values[0]
	In               // Column IN (Values…)
	IsNull           // Column IS NULL
)

// Pred is a filter: AND, OR and NOT of comparisons of a plain column with
// literals. SQL's three-valued logic applies, as in dpsql.
type Pred struct {
	Op   Op
	Args []*Pred
	// Column is the compared column (its name in dpsql): Cmp, In, IsNull.
	Column string
	// Comparison is =, <>, <, <=, > or >= (Cmp).
	Comparison string
	// Values are the literals, int64, float64 or string, of the column's
	// kind (the planner refuses other pairs): bound as parameters.
	Values []any
}

// Row is one group of a Query's result: the privacy unit's value, the
// grouped columns' values — each as dpsql's column store holds it (int64,
// float64, string, time.Time or nil) — and how many rows it has.
type Row struct {
	Unit  any
	Group []any
	Count int64
}

// Source is a protected table whose rows stay in its database.
type Source interface {
	// Check reports, reading nothing, whether the source can answer q:
	// its columns exist and the filtered ones compare in the source as in
	// dpsql. Its error says what is not supported.
	Check(q Query) error
	// Read runs the queries, in order, in one read-only transaction that
	// sees one snapshot of the database, and calls fn with each row of
	// each (q its index), in the queries' order. fn's Row is valid during
	// the call only; an error of fn stops the read and is returned as it
	// is. Other errors are the source's: they may quote its messages and
	// must not reach an analyst.
	Read(ctx context.Context, qs []Query, fn func(q int, r *Row) error) error
	// Statements returns the SQL Read would send for qs, for tests and the
	// operator's log (parameters as placeholders).
	Statements(qs []Query) []string
}

// Table is implemented by a table whose rows are read through a Source;
// PushdownSource returns nil for a table held in memory.
type Table interface {
	PushdownSource() Source
}
