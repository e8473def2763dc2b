package storage

import (
	"github.com/dolthub/go-mysql-server/sql"
)

// NullCode is the code of NULL in ColumnCodes.
const NullCode = nullCode

// ColumnCodes returns column col of every row, in row order, as codes:
// codes[r] is row r's code (NullCode for NULL), and values[c] the value of
// code c exactly as a scan gives it (a string for TEXT, an int64 for
// BIGINT). Readers that group rows by value (the release index's build)
// then look values up once per code instead of once per row.
//
// A TEXT column hands out its own dictionary: nothing is copied, and both
// slices are shared and read-only. A BIGINT column is coded on the call,
// in order of first row (4 bytes per row, freed by the caller). ok is
// false for other types and for a push-down table, whose rows stay in
// its database. The scan guard applies, as to PartitionRows; the
// coding of a BIGINT column ends early with ctx's error.
func (t *Table) ColumnCodes(ctx *sql.Context, col string) (codes []uint32, values []any, ok bool, err error) {
	if t.push != nil {
		return nil, nil, false, nil
	}
	i := t.schema.IndexOfColName(col)
	if i < 0 {
		return nil, nil, false, nil
	}
	if t.guard != nil {
		if err := t.guard(ctx); err != nil {
			return nil, nil, false, err
		}
	}
	switch c := t.data[i].(type) {
	case *textColumn:
		return c.codes[:t.rows:t.rows], c.dict[:len(c.dict):len(c.dict)], true, nil
	case *valueColumn[int64]:
		codes, values, err := int64Codes(ctx, c, t.rows)
		return codes, values, err == nil, err
	}
	return nil, nil, false, nil
}

// int64Codes numbers the distinct values of c's first rows rows in order
// of first row (see ColumnCodes).
func int64Codes(ctx *sql.Context, c *valueColumn[int64], rows int) ([]uint32, []any, error) {
	ids := map[int64]uint32{}
	codes := make([]uint32, rows)
	var values []any
	for r := range rows {
		if r&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		if c.nulls.has(r) {
			codes[r] = nullCode
			continue
		}
		v := c.vals[r]
		id, seen := ids[v]
		if !seen {
			id = uint32(len(values))
			ids[v] = id
			values = append(values, v)
		}
		codes[r] = id
	}
	return codes, values, nil
}
