package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/dpsql/dpsql/internal/progress"
	_ "github.com/dpsql/dpsql/sqlext/parquetfile" // Parquet files for Load and ColumnNames
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// RowSource yields the rows of a file as text fields; a nil field is NULL.
// tabfile.Source (TSV, CSV, JSON lines, Parquet) implements it; other
// readers plug in by implementing it too, and may also implement
// NamedSource and ProgressSource.
type RowSource interface {
	// Next returns the fields of the next row, or io.EOF after the last.
	// The slices are valid until the next call.
	Next() ([][]byte, error)
	// Line returns the 1-based position (line or record) of the row Next
	// returned last, for error messages.
	Line() int64
}

// NamedSource is a RowSource that names its columns itself (JSON keys, a
// Parquet schema): Load takes the names from it and reads no header row.
type NamedSource interface {
	RowSource
	Columns() []string
}

// ProgressSource is a RowSource that can say how far it has read (bytes
// read so far and the total); Load uses it for progress lines.
type ProgressSource interface {
	RowSource
	Progress() (read, size int64)
}

// Header says whether the first row of a source names the columns.
type Header int

const (
	// HeaderAuto detects a header row (see Load).
	HeaderAuto Header = iota
	// HeaderYes: the first row names the columns.
	HeaderYes
	// HeaderNo: the first row is data.
	HeaderNo
)

// ColumnSpec names a column to load and, if Typed, fixes its type instead of
// inferring it.
type ColumnSpec struct {
	Name  string
	Type  Type
	Typed bool
}

// LoadOptions configure Load.
type LoadOptions struct {
	// Columns names the columns (and may fix their types). Without it the
	// names come from a NamedSource, a header row, or are c1, c2, ….
	Columns []ColumnSpec
	// Header says whether the first row is a header. With Columns and
	// HeaderAuto, the first row is skipped when it equals the column names
	// or when it does not fit the declared types while the second row does.
	Header Header
	// SampleRows is the number of rows types are inferred from (default
	// 10,000).
	SampleRows int
	// Progress receives a status line every second once loading has run
	// for two seconds; nil for none.
	Progress io.Writer
	// Label names the load in progress lines and errors (say, the file).
	Label string
	// Comment is the table comment.
	Comment string
	// Check, when set, is called every CheckRows rows; an error stops the
	// load (the server's memory check, as for LoadDB).
	Check func(rows int64) error
}

// LoadInfo describes a finished load.
type LoadInfo struct {
	Rows     int
	Columns  []Column
	Header   bool // the first row was taken as a header
	Duration time.Duration
}

// Load reads src into a new table called name.
//
// Types: columns without a declared type get the narrowest of BIGINT,
// DOUBLE, DATE, DATETIME and TEXT that every value of the first SampleRows
// rows parses as (numbers with leading zeros, such as 007, stay TEXT). A
// later value that does not parse is an error naming the line, column and
// value; declare that column's type to override the inference.
//
// NULL: \N in any column, and an empty field in a non-TEXT column.
//
// Header detection (HeaderAuto without Columns): the first row is a header
// when some column typed from the other sampled rows is not TEXT and the
// first row's field does not parse as its type, or, when all columns are
// TEXT, when every field of the first row looks like a column name
// (letters, digits, _ or $, starting with a letter or _, distinct).
func Load(name string, src RowSource, opts LoadOptions) (*Table, LoadInfo, error) {
	start := time.Now()
	label := opts.Label
	if label == "" {
		label = name
	}
	fail := func(format string, args ...any) (*Table, LoadInfo, error) {
		return nil, LoadInfo{}, fmt.Errorf("%s: "+format, append([]any{label}, args...)...)
	}
	sampleN := opts.SampleRows
	if sampleN <= 0 {
		sampleN = 10_000
	}

	var loaded atomic.Int64
	prog := progress.Start(opts.Progress, "loading "+label, func() string {
		s := fmt.Sprintf("%d rows", loaded.Load())
		if ps, ok := src.(ProgressSource); ok {
			read, size := ps.Progress()
			if size > 0 {
				s = fmt.Sprintf("%.0f%% of %s, %s", 100*float64(read)/float64(size), progress.Bytes(size), s)
			}
		}
		return s
	})
	defer prog.Stop()

	sample, sampleLines, err := readSample(src, sampleN)
	if err != nil {
		return fail("%v", err)
	}
	specs := opts.Columns
	names, header, err := columnNames(src, sample, specs, opts.Header)
	if err != nil {
		return fail("%v", err)
	}
	data, dataLines := sample, sampleLines
	if header {
		data, dataLines = sample[1:], sampleLines[1:]
	}
	cols := columnTypes(names, specs, data)
	b, err := NewTableBuilder(name, cols)
	if err != nil {
		return fail("%v", err)
	}
	b.SetComment(opts.Comment)
	inferredFrom := len(data)

	appendRow := func(f [][]byte, line int64) error {
		if len(f) != len(cols) {
			return fmt.Errorf("line %d has %d field(s), but the table has %d column(s) (%s)", line, len(f), len(cols), strings.Join(names, ", "))
		}
		if err := b.AppendText(f); err != nil {
			hint := ""
			for _, c := range cols {
				if strings.HasPrefix(err.Error(), "column "+c.Name+":") && !(specTyped(specs, c.Name)) {
					hint = fmt.Sprintf(" (the type was inferred from the first %d rows; declare the column's type to override)", inferredFrom)
				}
			}
			return fmt.Errorf("line %d: %v%s", line, err, hint)
		}
		if n := loaded.Add(1); opts.Check != nil && n%CheckRows == 0 {
			if err := opts.Check(n); err != nil {
				return fmt.Errorf("stopped after %d rows: %w", n, err)
			}
		}
		return nil
	}
	for k, r := range data {
		if err := appendRow(r, dataLines[k]); err != nil {
			return fail("%v", err)
		}
	}
	if len(sample) == sampleN {
		for {
			f, err := src.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fail("line %d: %v", src.Line(), err)
			}
			if err := appendRow(f, src.Line()); err != nil {
				return fail("%v", err)
			}
		}
	}
	t, err := b.Build()
	if err != nil {
		return fail("%v", err)
	}
	return t, LoadInfo{Rows: t.rows, Columns: cols, Header: header, Duration: time.Since(start)}, nil
}

// readSample reads up to n rows of src (copies: the source reuses its
// slices) and their line numbers.
func readSample(src RowSource, n int) ([][][]byte, []int64, error) {
	var sample [][][]byte
	var sampleLines []int64
	for len(sample) < n {
		f, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %v", src.Line(), err)
		}
		row := make([][]byte, len(f))
		for i, x := range f {
			row[i] = bytes.Clone(x)
		}
		sample = append(sample, row)
		sampleLines = append(sampleLines, src.Line())
	}
	return sample, sampleLines, nil
}

// columnNames returns the table's column names — the declared ones, the
// source's, the header row's or c1, c2, … — and whether the sample's first
// row is a header.
func columnNames(src RowSource, sample [][][]byte, specs []ColumnSpec, hdr Header) (names []string, header bool, err error) {
	switch {
	case len(specs) > 0:
		for _, c := range specs {
			names = append(names, c.Name)
		}
		switch hdr {
		case HeaderYes:
			header = len(sample) > 0
		case HeaderAuto:
			header = len(sample) > 0 && (rowEquals(sample[0], names) || typedHeader(sample, specs))
		}
	default:
		if ns, ok := src.(NamedSource); ok {
			names = ns.Columns()
			break
		}
		width := 0
		for _, r := range sample {
			width = max(width, len(r))
		}
		if width == 0 {
			return nil, false, fmt.Errorf("the file has no rows: name its columns to load an empty table")
		}
		switch hdr {
		case HeaderYes:
			header = true
		case HeaderAuto:
			header = detectHeader(sample, width)
		}
		if header {
			for i, f := range sample[0] {
				n := strings.TrimSpace(string(f))
				if n == "" {
					n = fmt.Sprintf("c%d", i+1)
				}
				names = append(names, n)
			}
			for i := len(names); i < width; i++ {
				names = append(names, fmt.Sprintf("c%d", i+1))
			}
		} else {
			for i := range width {
				names = append(names, fmt.Sprintf("c%d", i+1))
			}
		}
	}
	return names, header, nil
}

// columnTypes returns the columns: each declared type, or the type inferred
// from the sampled data rows.
func columnTypes(names []string, specs []ColumnSpec, data [][][]byte) []Column {
	cols := make([]Column, len(names))
	for i, n := range names {
		cols[i].Name = n
		if i < len(specs) && specs[i].Typed {
			cols[i].Type = specs[i].Type
			continue
		}
		var vals [][]byte
		for _, r := range data {
			if i < len(r) {
				vals = append(vals, r[i])
			}
		}
		cols[i].Type = inferType(vals)
	}
	return cols
}

func specTyped(specs []ColumnSpec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return s.Typed
		}
	}
	return false
}

// LoadFile loads a file into a table called name: TSV or CSV (with header
// detection), JSON lines (columns are the keys of the first object unless
// declared) or Parquet (columns are the file's flat columns unless
// declared); TSV, CSV and JSON lines may be gzip-compressed. The format
// follows the file name (tabfile.FormatOf) unless given.
func LoadFile(name, path string, format tabfile.Format, opts LoadOptions) (*Table, LoadInfo, error) {
	if format == "" {
		format = tabfile.FormatOf(path)
	}
	if opts.Label == "" {
		opts.Label = path
	}
	switch format {
	case tabfile.TSV, tabfile.CSV:
		r, err := tabfile.Open(path, format)
		if err != nil {
			return nil, LoadInfo{}, err
		}
		defer r.Close()
		return Load(name, r, opts)
	case tabfile.JSONL, tabfile.Parquet:
		// These formats name their columns: select them by name, and read
		// no header row.
		var names []string
		for _, c := range opts.Columns {
			names = append(names, c.Name)
		}
		var err error
		if len(names) == 0 {
			if names, err = tabfile.ColumnNames(path, format); err != nil {
				return nil, LoadInfo{}, err
			}
		}
		cols := make([]tabfile.Column, len(names))
		for i, n := range names {
			cols[i] = tabfile.Column{Name: n}
		}
		src, err := tabfile.OpenSource(path, tabfile.Options{Format: format, Columns: cols})
		if err != nil {
			return nil, LoadInfo{}, err
		}
		defer src.Close()
		opts.Header = HeaderNo
		if len(opts.Columns) == 0 {
			return Load(name, namedSource{src, names}, opts)
		}
		return Load(name, src, opts)
	}
	return nil, LoadInfo{}, fmt.Errorf("%s: unknown format %q", path, format)
}

// namedSource gives a source the names of its columns.
type namedSource struct {
	tabfile.Source
	names []string
}

func (n namedSource) Columns() []string { return n.names }

// rowEquals reports whether a row's fields are the names, ignoring case
// and surrounding space.
func rowEquals(row [][]byte, names []string) bool {
	if len(row) != len(names) {
		return false
	}
	for i, f := range row {
		if !strings.EqualFold(strings.TrimSpace(string(f)), names[i]) {
			return false
		}
	}
	return true
}

// typedHeader reports whether the first row fails the declared types while
// the second row fits them: a header with other names than the declared
// ones.
func typedHeader(sample [][][]byte, specs []ColumnSpec) bool {
	if len(sample) < 2 {
		return false
	}
	fits := func(row [][]byte) bool {
		for i, c := range specs {
			if c.Typed && i < len(row) && !isNull(c.Type, row[i]) && !parses(c.Type, row[i]) {
				return false
			}
		}
		return true
	}
	return !fits(sample[0]) && fits(sample[1])
}

// detectHeader implements the header rule documented on Load.
func detectHeader(sample [][][]byte, width int) bool {
	first := sample[0]
	if len(sample) > 1 {
		for i := 0; i < width && i < len(first); i++ {
			var vals [][]byte
			for _, r := range sample[1:] {
				if i < len(r) {
					vals = append(vals, r[i])
				}
			}
			if t := inferType(vals); t != Text && !isNull(t, first[i]) && !parses(t, first[i]) {
				return true
			}
		}
	}
	seen := map[string]bool{}
	for _, f := range first {
		n := strings.ToLower(strings.TrimSpace(string(f)))
		if !isIdentifier(n) || seen[n] {
			return false
		}
		seen[n] = true
	}
	// Typed columns whose first field parses are data, not names.
	if len(sample) > 1 {
		for i := 0; i < width && i < len(first); i++ {
			var vals [][]byte
			for _, r := range sample[1:] {
				if i < len(r) {
					vals = append(vals, r[i])
				}
			}
			if inferType(vals) != Text {
				return false
			}
		}
	}
	return len(first) == width
}

// isIdentifier reports whether s looks like a column name: letters,
// digits, _ or $, starting with a letter or _, at most 64 characters.
func isIdentifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) || r == '_':
		case i > 0 && (unicode.IsDigit(r) || r == '$'):
		default:
			return false
		}
	}
	return true
}

// IsIdentifier reports whether s is a plain SQL identifier dpsql accepts
// for database, table and column names given on the command line.
func IsIdentifier(s string) bool { return isIdentifier(s) }

// LoadSpec is a parsed --load argument: [DB.]TABLE[(COL [TYPE], …)]=PATH.
type LoadSpec struct {
	Database string
	Table    string
	Columns  []ColumnSpec
	Path     string
}

// ParseLoadSpec parses [DB.]TABLE[(COL [TYPE], …)]=PATH; the database
// defaults to defaultDB.
func ParseLoadSpec(s, defaultDB string) (LoadSpec, error) {
	bad := func(format string, args ...any) (LoadSpec, error) {
		return LoadSpec{}, fmt.Errorf("--load %q: "+format+"; write [DB.]TABLE[(COLUMN [TYPE], …)]=FILE, e.g. posts=posts.tsv.gz or 'data.posts(user_id BIGINT, body TEXT)=posts.tsv'", append([]any{s}, args...)...)
	}
	var spec LoadSpec
	eq := strings.IndexByte(s, '=')
	open := strings.IndexByte(s, '(')
	target := ""
	if open >= 0 && (eq < 0 || open < eq) {
		cl := strings.IndexByte(s[open:], ')')
		if cl < 0 {
			return bad("missing ')'")
		}
		cl += open
		rest := strings.TrimSpace(s[cl+1:])
		if !strings.HasPrefix(rest, "=") {
			return bad("missing '=' after the column list")
		}
		spec.Path = strings.TrimSpace(rest[1:])
		target = strings.TrimSpace(s[:open])
		for _, c := range strings.Split(s[open+1:cl], ",") {
			fields := strings.Fields(c)
			if len(fields) == 0 {
				return bad("empty column name")
			}
			cs := ColumnSpec{Name: fields[0]}
			if !isIdentifier(strings.ToLower(cs.Name)) {
				return bad("%q is not a plain column name (letters, digits, _)", cs.Name)
			}
			if len(fields) > 1 {
				t, err := ParseType(strings.Join(fields[1:], " "))
				if err != nil {
					return bad("column %s: %v", cs.Name, err)
				}
				cs.Type, cs.Typed = t, true
			}
			spec.Columns = append(spec.Columns, cs)
		}
	} else {
		if eq < 0 {
			return bad("missing '='")
		}
		target = strings.TrimSpace(s[:eq])
		spec.Path = strings.TrimSpace(s[eq+1:])
	}
	if spec.Path == "" {
		return bad("no file")
	}
	db, tbl, ok := strings.Cut(target, ".")
	if !ok {
		db, tbl = defaultDB, target
	}
	if !isIdentifier(strings.ToLower(db)) || !isIdentifier(strings.ToLower(tbl)) {
		return bad("%q is not a plain [DB.]TABLE name (letters, digits, _)", target)
	}
	spec.Database, spec.Table = db, tbl
	return spec, nil
}
