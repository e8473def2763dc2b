package demo

import (
	"errors"
	"io"
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/server/storage"
)

// WordRows returns the rows of db's words table (a database New or
// Generate made) as parallel slices: each row's user_id in decimal and its
// word, in the table's row order. Tests and accuracy harnesses read the
// demo's words through it.
func WordRows(db *storage.Database) (users, words []string, err error) {
	tbl, ok := db.Table("words")
	if !ok {
		return nil, nil, errors.New("demo: no words table")
	}
	ctx := sql.NewEmptyContext()
	parts, err := tbl.Partitions(ctx)
	if err != nil {
		return nil, nil, err
	}
	for {
		pt, err := parts.Next(ctx)
		if errors.Is(err, io.EOF) {
			return users, words, nil
		}
		if err != nil {
			return nil, nil, err
		}
		it, err := tbl.PartitionRows(ctx, pt)
		if err != nil {
			return nil, nil, err
		}
		for {
			r, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, nil, err
			}
			users = append(users, strconv.FormatInt(r[0].(int64), 10))
			words = append(words, r[1].(string))
		}
	}
}
