package tabfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Source is a stream of rows read from a data file of any supported format
// (TSV, CSV, JSON lines, Parquet). Open one with OpenSource.
type Source interface {
	// Next returns the fields of the next row in the order of the selected
	// columns, or io.EOF after the last row. A nil field is NULL; the empty
	// string is a non-nil empty slice. The slices are valid until the next
	// call.
	Next() ([][]byte, error)
	// Line returns the position of the row Next returned last, for error
	// messages: the 1-based line number for TSV, CSV and JSON lines, the
	// 1-based row number for Parquet.
	Line() int64
	// Progress returns how far reading has come and the total, in bytes of
	// the file (compressed bytes for gzip; for Parquet, the file size scaled
	// by the fraction of rows read). It is safe to call from another
	// goroutine while rows are read.
	Progress() (read, size int64)
	// Close closes the file.
	Close() error
}

// The existing Reader is a Source over all fields of each row.
var _ Source = (*Reader)(nil)

// Column selects one column of a file.
type Column struct {
	// Name is the header name (TSV/CSV with Options.Header), the object key
	// (JSON lines) or the column path with dots for nested groups (Parquet).
	Name string
	// Position is the 1-based field number (TSV/CSV only), used instead of
	// Name.
	Position int
}

func (c Column) String() string {
	if c.Name != "" {
		return strconv.Quote(c.Name)
	}
	return "#" + strconv.Itoa(c.Position)
}

// Options configures OpenSource.
type Options struct {
	// Format is the file format; "" guesses it from the file name (FormatOf).
	Format Format
	// Columns selects the fields Next returns, in that order. Empty means
	// every field of each row for TSV/CSV and every column of a Parquet
	// file (in schema order); JSON lines need explicit columns.
	Columns []Column
	// Header reports that the first non-empty row of a TSV/CSV file names
	// the columns; it is not returned by Next, and Columns may then select
	// fields by Name.
	Header bool
	// Null, when non-nil, is the TSV/CSV field text that stands for NULL
	// (for example `\N`, as mysqldump and MySQL's SELECT … INTO OUTFILE
	// write). Without it TSV/CSV fields are never NULL.
	Null *string
}

// OpenSource opens path in the format and with the columns of o. Gzip
// compression (detected by its magic number) is read transparently for
// TSV, CSV and JSON lines.
func OpenSource(path string, o Options) (Source, error) {
	format := o.Format
	if format == "" {
		format = FormatOf(path)
	}
	switch format {
	case TSV, CSV:
		return openDelimited(path, format, o)
	case JSONL:
		return openJSONL(path, o)
	case Parquet:
		return openParquet(path, o)
	}
	return nil, fmt.Errorf("unknown format %q: use %s", format, formatNames)
}

// delimited selects and converts the fields of a TSV/CSV Reader.
type delimited struct {
	*Reader
	path string
	idx  []int // 0-based field per output column; nil: all fields
	need int   // fields a row must have
	cols []Column
	null *string
	out  [][]byte
}

func openDelimited(path string, format Format, o Options) (Source, error) {
	r, err := Open(path, format)
	if err != nil {
		return nil, err
	}
	d := &delimited{Reader: r, path: path, null: o.Null, cols: o.Columns}
	var header map[string]int
	if o.Header {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			r.Close()
			return nil, fmt.Errorf("%s: the file is empty but a header row was expected", path)
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: line %d: %w", path, r.Line(), err)
		}
		header = make(map[string]int, len(f))
		for i, name := range f {
			n := strings.TrimSpace(string(name))
			if i == 0 {
				n = strings.TrimPrefix(n, "\uFEFF") // a UTF-8 byte order mark
			}
			if _, dup := header[n]; dup {
				header[n] = -1 // ambiguous
			} else {
				header[n] = i
			}
		}
	}
	for _, c := range o.Columns {
		var i int
		switch {
		case c.Name != "" && c.Position != 0:
			r.Close()
			return nil, fmt.Errorf("%s: column %q: give a name or a position, not both", path, c.Name)
		case c.Position > 0:
			i = c.Position - 1
		case c.Name != "" && header == nil:
			r.Close()
			return nil, fmt.Errorf("%s: column %q is selected by name but the file has no header row; select it by position or declare the header", path, c.Name)
		case c.Name != "":
			var ok bool
			i, ok = header[c.Name]
			if !ok {
				r.Close()
				return nil, fmt.Errorf("%s: no column %q in the header (it has %s)", path, c.Name, headerList(header))
			}
			if i < 0 {
				r.Close()
				return nil, fmt.Errorf("%s: the header names column %q more than once; select it by position", path, c.Name)
			}
		default:
			r.Close()
			return nil, fmt.Errorf("%s: a column needs a name or a position ≥ 1", path)
		}
		d.idx = append(d.idx, i)
		d.need = max(d.need, i+1)
	}
	return d, nil
}

func headerList(h map[string]int) string {
	names := make([]string, len(h))
	for n, i := range h {
		if i >= 0 && i < len(names) {
			names[i] = strconv.Quote(n)
		}
	}
	var out []string
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

func (d *delimited) Next() ([][]byte, error) {
	f, err := d.Reader.Next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("%s: line %d: %w", d.path, d.Reader.Line(), err)
	}
	if d.idx == nil {
		d.out = append(d.out[:0], f...)
	} else {
		if len(f) < d.need {
			for k, i := range d.idx {
				if i >= len(f) {
					return nil, fmt.Errorf("%s: line %d has %d field(s) but column %s is field %d; check the format (tsv or csv) and the column positions", d.path, d.Reader.Line(), len(f), d.cols[k], i+1)
				}
			}
		}
		d.out = d.out[:0]
		for _, i := range d.idx {
			d.out = append(d.out, f[i])
		}
	}
	for k, v := range d.out {
		if v == nil {
			d.out[k] = []byte{}
		} else if d.null != nil && string(v) == *d.null {
			d.out[k] = nil
		}
	}
	return d.out, nil
}

// input is the byte stream of a text file: the file, counted for Progress,
// through a gzip reader when the file starts with the gzip magic number.
type input struct {
	f       *os.File
	counter *countingReader
	size    int64
	gz      *gzip.Reader
	src     io.Reader
}

func openInput(path string) (*input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	in, err := newInput(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	in.f = f
	return in, nil
}

// newInput counts the bytes read from raw and decompresses them when they
// start with the gzip magic number.
func newInput(raw io.Reader, size int64) (*input, error) {
	in := &input{size: size}
	in.counter = &countingReader{r: raw}
	br := bufio.NewReaderSize(in.counter, 1<<16)
	in.src = br
	if peek, _ := br.Peek(2); len(peek) == 2 && peek[0] == 0x1f && peek[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		in.gz, in.src = gz, gz
	}
	return in, nil
}

func (in *input) progress() (read, size int64) { return in.counter.n.Load(), in.size }

func (in *input) close() error {
	if in.gz != nil {
		in.gz.Close()
	}
	if in.f == nil {
		return nil // not ours to close (NewReader)
	}
	return in.f.Close()
}

// readLine returns the next line of br without its line ending (valid until
// the next call), assembling lines longer than the buffer.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		*long = append((*long)[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = br.ReadSlice('\n')
			*long = append(*long, line...)
		}
		line = *long
	}
	if len(line) == 0 && err != nil {
		return nil, err
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	n := len(line)
	for n > 0 && (line[n-1] == '\n' || line[n-1] == '\r') {
		n--
	}
	return line[:n], nil
}
