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
