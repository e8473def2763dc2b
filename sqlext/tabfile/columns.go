package tabfile

import (
	"encoding/json"
	"fmt"
)

// ColumnNames returns the names a self-describing file gives its columns:
// the keys of the first object of a JSON-lines file (gzip or not), in
// order, or the flat (non-repeated) columns of a Parquet file, nested
// names joined with dots. TSV and CSV files name nothing (their header row,
// if any, is data to the reader: see LooksLikeHeader).
func ColumnNames(path string, format Format) ([]string, error) {
	switch format {
	case JSONL:
		return jsonlKeys(path)
	case Parquet:
		return parquetColumns(path)
	}
	return nil, fmt.Errorf("%s: %s files do not name their columns; declare them", path, format)
}

// jsonlKeys returns the keys of the first object of a JSON-lines file (gzip
// or not), in order.
func jsonlKeys(path string) ([]string, error) {
	in, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer in.close()
	dec := json.NewDecoder(in.src)
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s: the first line is not a JSON object: %v; declare the columns: --load 'TABLE(key, …)=FILE'", path, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s: the first line is not a JSON object; JSON lines hold one object per line", path)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: line 1: %v", path, err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("%s: line 1: %v", path, err)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: the first object has no keys; declare the columns: --load 'TABLE(key, …)=FILE'", path)
	}
	return keys, nil
}
