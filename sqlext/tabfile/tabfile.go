// Package tabfile reads delimited text files (TSV or CSV, optionally gzip
// compressed) row by row, fast and without SQL. It is shared by the batch
// commands and the data loaders.
//
// TSV is split on tabs with no quoting (the shared corpora are TSV whose text
// has had tabs and newlines replaced by spaces). CSV follows RFC 4180 through
// encoding/csv (quoted fields may contain commas, quotes and newlines).
package tabfile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
)

// Format is a file format.
type Format string

// Formats.
const (
	TSV Format = "tsv"
	CSV Format = "csv"
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case TSV, CSV:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q: use tsv or csv", s)
}

// FormatOf guesses the format from a file name: .csv or .csv.gz is CSV,
// anything else TSV.
func FormatOf(path string) Format {
	p := strings.TrimSuffix(strings.ToLower(path), ".gz")
	if strings.HasSuffix(p, ".csv") {
		return CSV
	}
	return TSV
}

// Reader reads rows of a delimited file.
type Reader struct {
	f       *os.File
	counter *countingReader
	size    int64
	gz      *gzip.Reader
	format  Format
	line    int64

	br     *bufio.Reader
	fields [][]byte
	csv    *csv.Reader
}

// Open opens path (gzip-compressed if its first bytes are the gzip magic
// number, whatever its name) for reading in the given format.
func Open(path string, format Format) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r := &Reader{f: f, size: st.Size(), format: format}
	r.counter = &countingReader{r: f}
	var src io.Reader = bufio.NewReaderSize(r.counter, 1<<16)
	peek, _ := src.(*bufio.Reader).Peek(2)
	if len(peek) == 2 && peek[0] == 0x1f && peek[1] == 0x8b {
		r.gz, err = gzip.NewReader(src)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		src = r.gz
	}
	switch format {
	case TSV:
		r.br = bufio.NewReaderSize(src, 1<<20)
	case CSV:
		r.csv = csv.NewReader(src)
		r.csv.FieldsPerRecord = -1
		r.csv.ReuseRecord = true
	default:
		f.Close()
		return nil, fmt.Errorf("unknown format %q: use tsv or csv", format)
	}
	return r, nil
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
		line, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A very long line: assemble it.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, err
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		r.line++
		line = bytes.TrimRight(line, "\r\n")
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
func (r *Reader) Progress() (read, size int64) { return r.counter.n.Load(), r.size }

// Close closes the file.
func (r *Reader) Close() error {
	if r.gz != nil {
		r.gz.Close()
	}
	return r.f.Close()
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
