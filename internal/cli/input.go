package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/dpsql/dpsql/internal/progress"
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// InputFlags name an input file and its columns.
type InputFlags struct {
	Input      string
	Format     string
	UserColumn int
	ItemColumn int
	TextColumn int
	// SkipHeader is set by --skip-header (or --skip-header=true): the
	// first row is a header. Without the flag the first row is skipped
	// when it looks like one (see header.go).
	SkipHeader bool

	textOnly bool
	header   headerChoice
}

// Register adds --input, --format, --user-column, --item-column (unless
// textOnly) and --text-column, --skip-header to fs.
func (in *InputFlags) Register(fs *flag.FlagSet, textOnly bool) {
	in.textOnly = textOnly
	fs.StringVar(&in.Input, "input", "", "input file, TSV or CSV, optionally gzip-compressed (required)")
	fs.StringVar(&in.Format, "format", "", "input format: tsv or csv (default: from the file name, tsv unless it ends in .csv or .csv.gz)")
	fs.IntVar(&in.UserColumn, "user-column", 0, "1-based column holding the privacy unit (required)")
	if !textOnly {
		fs.IntVar(&in.ItemColumn, "item-column", 0, "1-based column holding the item (one of --item-column, --text-column)")
	}
	fs.IntVar(&in.TextColumn, "text-column", 0, "1-based column holding text; every token of a row becomes an item of its user")
	in.header.register(fs, &in.SkipHeader)
}

// Validate checks the flags.
func (in *InputFlags) Validate() error {
	if in.Input == "" {
		return fmt.Errorf("--input FILE is required")
	}
	if in.UserColumn < 1 {
		return fmt.Errorf("--user-column N is required (columns are numbered from 1)")
	}
	if in.textOnly {
		if in.TextColumn < 1 {
			return fmt.Errorf("--text-column N is required (columns are numbered from 1)")
		}
	} else if (in.ItemColumn > 0) == (in.TextColumn > 0) {
		return fmt.Errorf("give exactly one of --item-column N and --text-column N (columns are numbered from 1)")
	}
	if in.ItemColumn < 0 || in.TextColumn < 0 {
		return fmt.Errorf("column numbers start at 1")
	}
	if in.Format != "" {
		if _, err := tabfile.ParseFormat(in.Format); err != nil {
			return err
		}
	}
	return nil
}

// Text reports whether the value column is text to tokenise.
func (in *InputFlags) Text() bool { return in.TextColumn > 0 }

// Rows reads the input and calls fn with each row's privacy unit and value
// (the item or the text); the slices are valid only during the call. While it
// runs longer than two seconds it reports progress to progress (if non-nil).
func (in *InputFlags) Rows(progressW io.Writer, fn func(user, value []byte)) (int64, error) {
	format := tabfile.FormatOf(in.Input)
	if in.Format != "" {
		format, _ = tabfile.ParseFormat(in.Format)
	}
	r, err := tabfile.Open(in.Input, format)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	col := in.ItemColumn
	if in.TextColumn > 0 {
		col = in.TextColumn
	}
	need := max(in.UserColumn, col)
	var rows atomic.Int64
	p := progress.Start(progressW, "reading "+in.Input, func() string {
		read, size := r.Progress()
		return fmt.Sprintf("%.0f%% of %s, %d rows", 100*float64(read)/float64(max(size, 1)), progress.Bytes(size), rows.Load())
	})
	defer p.Stop()
	first := true
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return rows.Load(), nil
		}
		if err != nil {
			return rows.Load(), fmt.Errorf("%s: line %d: %w", in.Input, r.Line(), err)
		}
		if first {
			first = false
			if in.header.skip(in.Input, f, in.SkipHeader) {
				continue
			}
		}
		if len(f) < need {
			return rows.Load(), fmt.Errorf("%s: line %d has %d column(s) but column %d is needed; check --user-column/--item-column/--text-column and --format", in.Input, r.Line(), len(f), need)
		}
		rows.Add(1)
		fn(f[in.UserColumn-1], f[col-1])
	}
}
