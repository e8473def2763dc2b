package tabfile

import (
	"errors"
	"fmt"
)

// ErrNoParquet is returned for a Parquet file by a program that does not
// link the Parquet reader: it must import package
// github.com/dpsql/dpsql/sqlext/parquetfile for its side effect.
var ErrNoParquet = errors.New("this program cannot read Parquet files (package sqlext/parquetfile is not linked in)")

// parquetReader is the Parquet reader registered by package parquetfile.
var parquetReader struct {
	open    func(path string, o Options) (Source, error)
	columns func(path string) ([]string, error)
}

// RegisterParquet installs the Parquet reader: open serves OpenSource and
// columns serves ColumnNames for Parquet files. Package parquetfile calls
// it from its init function; it is not safe to call concurrently with
// reading.
func RegisterParquet(open func(path string, o Options) (Source, error), columns func(path string) ([]string, error)) {
	parquetReader.open, parquetReader.columns = open, columns
}

func openParquet(path string, o Options) (Source, error) {
	if parquetReader.open == nil {
		return nil, fmt.Errorf("%s: %w", path, ErrNoParquet)
	}
	return parquetReader.open(path, o)
}

func parquetColumns(path string) ([]string, error) {
	if parquetReader.columns == nil {
		return nil, fmt.Errorf("%s: %w", path, ErrNoParquet)
	}
	return parquetReader.columns(path)
}
