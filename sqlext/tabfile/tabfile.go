// Package tabfile reads data files row by row, fast and without SQL: TSV and
// CSV (optionally gzip compressed) through Reader, and all formats — TSV,
// CSV, JSON lines (optionally gzip compressed) and Parquet — through the
// Source interface of OpenSource, which also selects columns and represents
// NULL. It is shared by the batch commands and the data loaders.
//
// TSV is split on tabs with no quoting (the shared corpora are TSV whose text
// has had tabs and newlines replaced by spaces). CSV follows RFC 4180 through
// encoding/csv (quoted fields may contain commas, quotes and newlines). JSON
// lines hold one JSON object per line; Parquet files are read column by
// column with github.com/parquet-go/parquet-go by package sqlext/parquetfile,
// which a program imports for its side effect (RegisterParquet) so that
// programs reading only TSV and CSV do not link parquet-go. Values of JSON
// lines and Parquet files are rendered as the text MySQL accepts for them
// (see OpenSource).
package tabfile

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
)

// Format is a file format.
type Format string

// Formats.
const (
	TSV     Format = "tsv"
	CSV     Format = "csv"
	JSONL   Format = "jsonl"
	Parquet Format = "parquet"
)

const formatNames = "tsv, csv, jsonl or parquet"

// ParseFormat checks a format name: tsv, csv, jsonl (also ndjson) or parquet,
// case-insensitive.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case TSV, CSV, JSONL, Parquet:
		return f, nil
	case "ndjson":
		return JSONL, nil
	}
	return "", fmt.Errorf("unknown format %q: use %s", s, formatNames)
}

// FormatOf guesses the format from a file name, ignoring a .gz suffix: .csv
// is CSV, .jsonl, .ndjson and .json are JSON lines, .parquet and .pq are
// Parquet, anything else TSV.
func FormatOf(path string) Format {
	p := strings.TrimSuffix(strings.ToLower(path), ".gz")
	switch {
	case strings.HasSuffix(p, ".csv"):
		return CSV
	case strings.HasSuffix(p, ".jsonl"), strings.HasSuffix(p, ".ndjson"), strings.HasSuffix(p, ".json"):
		return JSONL
	case strings.HasSuffix(p, ".parquet"), strings.HasSuffix(p, ".pq"):
		return Parquet
	}
	return TSV
}

// Reader reads rows of a delimited file (TSV or CSV). It is a Source that
// returns every field of each row; OpenSource adds column selection,
// headers and NULL.
type Reader struct {
	in     *input
	format Format
	line   int64

	br     *bufio.Reader
	long   []byte
	fields [][]byte
	csv    *csv.Reader
}

// Open opens path (gzip-compressed if its first bytes are the gzip magic
// number, whatever its name) for reading in the given format, TSV or CSV.
func Open(path string, format Format) (*Reader, error) {
	switch format {
	case TSV, CSV:
	case JSONL, Parquet:
		return nil, fmt.Errorf("%s: %s files are not read here: use a tsv or csv file", path, format) // OpenSource reads them
	default:
		return nil, fmt.Errorf("unknown format %q: use tsv or csv", format)
	}
	in, err := openInput(path)
	if err != nil {
		return nil, err
	}
	return newReader(in, format), nil
}

// NewReader reads rows of src in the given format, TSV or CSV
// (gzip-compressed if src starts with the gzip magic number), exactly as Open
// reads a file. It is for sources that are not local files, such as the files
// of a Beam filesystem. Progress reports a size of 0, and Close does not close
// src.
func NewReader(src io.Reader, format Format) (*Reader, error) {
	if format != TSV && format != CSV {
		return nil, fmt.Errorf("format %q is not read here: use tsv or csv", format)
	}
	in, err := newInput(src, 0)
	if err != nil {
		return nil, err
	}
	return newReader(in, format), nil
}

func newReader(in *input, format Format) *Reader {
	r := &Reader{in: in, format: format}
	if format == TSV {
		r.br = bufio.NewReaderSize(in.src, 1<<20)
	} else {
		r.csv = csv.NewReader(in.src)
		r.csv.FieldsPerRecord = -1
		r.csv.ReuseRecord = true
	}
	return r
}

// Next returns the fields of the next non-empty row, or io.EOF. The returned
// slices are valid until the next call.
func (r *Reader) Next() ([][]byte, error) {
	if r.csv != nil {
		for {
			rec, err := r.csv.Read()
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil, io.EOF
				}
				return nil, err
			}
			line, _ := r.csv.FieldPos(0)
			r.line = int64(line)
			if len(rec) == 1 && rec[0] == "" {
				continue
			}
			r.fields = r.fields[:0]
			for _, s := range rec {
				r.fields = append(r.fields, []byte(s))
			}
			return r.fields, nil
		}
	}
	for {
		line, err := readLine(r.br, &r.long)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, err
		}
		r.line++
		if len(line) == 0 {
			continue
		}
		r.fields = r.fields[:0]
		for {
			i := bytes.IndexByte(line, '\t')
			if i < 0 {
				r.fields = append(r.fields, line)
				break
			}
			r.fields = append(r.fields, line[:i])
			line = line[i+1:]
		}
		return r.fields, nil
	}
}

// Line returns the 1-based line number of the row Next returned last.
func (r *Reader) Line() int64 { return r.line }

// Progress returns how many bytes of the file (compressed bytes for gzip)
// have been read, and the file size. It is safe to call from another
// goroutine while rows are read.
func (r *Reader) Progress() (read, size int64) { return r.in.progress() }

// Close closes the file.
func (r *Reader) Close() error { return r.in.close() }

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
