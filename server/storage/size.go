package storage

import "strings"

// TextBytes returns an upper bound of the bytes of the MySQL texts of the
// distinct values of column col: for a TEXT column the bytes of its
// distinct strings, for a BIGINT column 20 per row, for others 32 per
// row. It is a measure of the table's size (like Len), which the release
// index uses to bound an index before reading a row.
func (t *Table) TextBytes(col string) (int64, bool) {
	for i, c := range t.cols {
		if !strings.EqualFold(c.Name, col) {
			continue
		}
		if tc, ok := t.data[i].(*textColumn); ok {
			return tc.size, true
		}
		if c.Type == BigInt {
			return 20 * int64(t.rows), true
		}
		return 32 * int64(t.rows), true
	}
	return 0, false
}

// Distinct returns an upper bound of the number of distinct values of the
// column col: exact for TEXT (its dictionary; NULL not counted), counted
// at load for BIGINT (a NULL's slot may count once), the row count
// otherwise; ok is false when the table has no such column. Like
// TextBytes it is a statistic of the whole table, fixed per load.
func (t *Table) Distinct(col string) (int64, bool) {
	for i, c := range t.cols {
		if !strings.EqualFold(c.Name, col) {
			continue
		}
		if tc, ok := t.data[i].(*textColumn); ok {
			return int64(len(tc.dict)), true
		}
		if vc, ok := t.data[i].(*valueColumn[int64]); ok && vc.distinct > 0 {
			return vc.distinct, true
		}
		return int64(t.rows), true
	}
	return 0, false
}
