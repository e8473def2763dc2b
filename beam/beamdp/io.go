package beamdp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/fileio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dpsql/dpsql/sqlext/tabfile"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

func init() {
	register.DoFn4x1[context.Context, fileio.ReadableFile, func(string, []string), func(string, int64), error](&readRowsFn{})
	register.DoFn3x1[context.Context, fileio.ReadableFile, func(string, float64), error](&readPublicFn{})
	register.DoFn4x1[context.Context, int, func(*[]byte) bool, func(*[]byte) bool, error](&writeSortedFn{})
	register.Emitter2[string, []string]()
	register.Emitter2[string, float64]()
}

// Input describes delimited text files of (privacy unit, item or text) rows.
type Input struct {
	// Glob names the files (any Beam filesystem: a local path, gs://…).
	Glob string
	// Format is tabfile.TSV or tabfile.CSV; empty means from Glob's name
	// (tabfile.FormatOf).
	Format tabfile.Format
	// UserColumn is the 1-based column of the privacy unit.
	UserColumn int
	// ItemColumn is the 1-based column of the item; exactly one of
	// ItemColumn and TextColumn is set.
	ItemColumn int
	// TextColumn is the 1-based column of text whose tokens (sqlext/tokenize)
	// are the row's items.
	TextColumn int
	// SkipHeader drops the first row of every file.
	SkipHeader bool
}

func (in Input) validate() error {
	switch {
	case in.Glob == "":
		return fmt.Errorf("an input glob is required")
	case in.UserColumn < 1:
		return fmt.Errorf("the privacy unit column is required (columns are numbered from 1)")
	case (in.ItemColumn > 0) == (in.TextColumn > 0) || in.ItemColumn < 0 || in.TextColumn < 0:
		return fmt.Errorf("give exactly one of an item column and a text column (columns are numbered from 1)")
	}
	return nil
}

// ReadRows reads the files of in.Glob and returns a PCollection of
// KV<string, []string> rows: the privacy unit and the row's item, or the
// tokens of its text in order (repetitions kept; Union deduplicates). Rows
// without a privacy unit are dropped silently. It also returns the count of
// rows read as a statistics PCollection for WriteStats.
//
// Files are matched and opened through Beam's file IO (fileio.MatchFiles,
// fileio.ReadMatches; any registered filesystem) and parsed by
// sqlext/tabfile, exactly as `dpsql union` parses a file: TSV split on tabs,
// CSV by RFC 4180 (quoted fields may span lines), gzip recognised by its magic
// number. Each file is read by one worker, so split a large input into many
// files, as Beam's sinks and warehouse exports write them. (Beam's text IO
// is not used: in the Go SDK v2.77.0, textio.Read of a .gz file stops after
// as many decompressed bytes as the file has compressed ones, silently
// dropping most rows.)
//
// ReadRows checks at pipeline construction that the glob matches a file, so
// that a typo fails at once.
func ReadRows(ctx context.Context, s beam.Scope, in Input) (rows, stats beam.PCollection, err error) {
	if err := in.validate(); err != nil {
		return rows, stats, err
	}
	if _, err := match(ctx, in.Glob); err != nil {
		return rows, stats, err
	}
	format := in.Format
	if format == "" {
		format = tabfile.FormatOf(in.Glob)
	}
	if f, err := tabfile.ParseFormat(string(format)); err != nil {
		return rows, stats, err
	} else if f != tabfile.TSV && f != tabfile.CSV {
		return rows, stats, fmt.Errorf("format %s is not read by the Beam pipeline: give TSV or CSV files (--format tsv or csv)", f)
	} else {
		format = f
	}
	fn := &readRowsFn{Format: format, User: in.UserColumn, Value: in.ItemColumn, SkipHeader: in.SkipHeader}
	if in.TextColumn > 0 {
		fn.Value, fn.Text = in.TextColumn, true
	}
	s = s.Scope("beamdp.ReadRows")
	rows, stats = beam.ParDo2(s, fn, files(s, in.Glob))
	return rows, stats, nil
}

// files returns the files of glob as fileio.ReadableFile, to be decompressed
// by tabfile.
func files(s beam.Scope, glob string) beam.PCollection {
	return fileio.ReadMatches(s, fileio.MatchFiles(s, glob, fileio.MatchEmptyDisallow()), fileio.ReadUncompressed(), fileio.ReadDirectorySkip())
}

// match lists the files of glob, or says that there are none.
func match(ctx context.Context, glob string) ([]string, error) {
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	files, err := fs.List(ctx, glob)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", glob, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no file matches %s", glob)
	}
	return files, nil
}

// eachRow calls fn with the fields of every row of file, in format. It
// adds the bytes it reads to read, if not nil.
func eachRow(ctx context.Context, file fileio.ReadableFile, format tabfile.Format, read *atomic.Int64, fn func(r *tabfile.Reader, fields [][]byte) error) error {
	rc, err := file.Open(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	var src io.Reader = rc
	if read != nil {
		src = countingReader{rc, read}
	}
	r, err := tabfile.NewReader(src, format)
	if err != nil {
		return fmt.Errorf("%s: %w", file.Metadata.Path, err)
	}
	defer r.Close()
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: line %d: %w", file.Metadata.Path, r.Line(), err)
		}
		if err := fn(r, f); err != nil {
			return err
		}
	}
}

// countingReader adds the bytes read from r to n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// readRowsFn parses one file into (privacy unit, items) rows and counts
// them.
type readRowsFn struct {
	Format     tabfile.Format `json:"format"`
	User       int            `json:"user"`  // 1-based column
	Value      int            `json:"value"` // 1-based column
	Text       bool           `json:"text,omitempty"`
	SkipHeader bool           `json:"skip_header,omitempty"`

	sc tokenize.Scanner
}

func (fn *readRowsFn) ProcessElement(ctx context.Context, file fileio.ReadableFile, emit func(string, []string), stat func(string, int64)) error {
	need := max(fn.User, fn.Value)
	first := true
	var rows int64
	err := eachRow(ctx, file, fn.Format, &live.bytes, func(r *tabfile.Reader, f [][]byte) error {
		if first {
			first = false
			if fn.SkipHeader {
				return nil
			}
		}
		if len(f) < need {
			return fmt.Errorf("%s: line %d has %d column(s) but column %d is needed; check --user-column/--item-column/--text-column and --format", file.Metadata.Path, r.Line(), len(f), need)
		}
		rows++
		live.rows.Add(1)
		user, value := f[fn.User-1], f[fn.Value-1]
		if len(user) == 0 {
			return nil // no privacy unit: dropped silently, as in the core
		}
		if !fn.Text {
			emit(string(user), []string{string(value)})
			return nil
		}
		var toks []string
		fn.sc.Each(value, func(tok []byte) { toks = append(toks, string(tok)) })
		if len(toks) > 0 {
			emit(string(user), toks)
		}
		return nil
	})
	if err != nil {
		return err
	}
	live.files.Add(1)
	emitStat(stat, statRows, &rows)
	return nil
}

// ReadPublic reads a public frequency table for greedy_public: lines
// ITEM[<TAB>COUNT] (count 1 if absent; gzip allowed), as `dpsql union
// --public` reads them, into a PCollection of KV<string, float64>. Repeated
// items add up in Union.
func ReadPublic(ctx context.Context, s beam.Scope, glob string) (beam.PCollection, error) {
	if _, err := match(ctx, glob); err != nil {
		return beam.PCollection{}, err
	}
	s = s.Scope("beamdp.ReadPublic")
	return beam.ParDo(s, &readPublicFn{}, files(s, glob)), nil
}

// readPublicFn parses one file of a public frequency table.
type readPublicFn struct{}

func (fn *readPublicFn) ProcessElement(ctx context.Context, file fileio.ReadableFile, emit func(string, float64)) error {
	return eachRow(ctx, file, tabfile.TSV, nil, func(r *tabfile.Reader, f [][]byte) error {
		c := 1.0
		if len(f) > 1 {
			var err error
			c, err = strconv.ParseFloat(string(bytes.TrimSpace(f[1])), 64)
			if err != nil || !(c >= 0) || math.IsInf(c, 0) {
				return fmt.Errorf("%s:%d: count %q is not a non-negative number", file.Metadata.Path, r.Line(), f[1])
			}
		}
		emit(string(f[0]), c)
		return nil
	})
}

// ShardName is the name of the one file WriteSorted writes under prefix,
// in the sharded-file convention of Beam's file sinks.
func ShardName(prefix string) string { return prefix + "-00000-of-00001" }

// WriteSorted writes the released items, one per line and sorted, to the
// file ShardName(prefix) (any Beam filesystem). The file is written, empty,
// even when nothing is released. Sorting needs the released set on one
// worker; it is much smaller than the input. The items reach the writer
// through a join (gather), not as a side input, so it writes them all.
func WriteSorted(s beam.Scope, prefix string, released beam.PCollection) {
	s = s.Scope("beamdp.WriteSorted")
	filesystem.ValidateScheme(prefix)
	beam.ParDo0(s, &writeSortedFn{Path: ShardName(prefix)}, gather(s, beam.ParDo(s, &itemBlocksFn{}, released)))
}

// writeSortedFn writes the items of the gathered blocks, sorted.
type writeSortedFn struct {
	Path string `json:"path"`
}

func (fn *writeSortedFn) ProcessElement(ctx context.Context, _ int, _ func(*[]byte) bool, blocks func(*[]byte) bool) error {
	var items []string
	err := eachBlock(blocks, func(b []byte) error {
		its, err := decodeItems(b)
		items = append(items, its...)
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(items)
	return writeFile(ctx, fn.Path, func(w *bufio.Writer) error {
		for _, it := range items {
			w.WriteString(it)
			w.WriteByte('\n')
		}
		return nil
	})
}
