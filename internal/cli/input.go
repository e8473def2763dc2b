package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sync"
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

// format returns the input's format: --format, else guessed from the
// file name.
func (in *InputFlags) format() tabfile.Format {
	if in.Format != "" {
		f, _ := tabfile.ParseFormat(in.Format) // Validate checked it
		return f
	}
	return tabfile.FormatOf(in.Input)
}

// Text reports whether the value column is text to tokenise.
func (in *InputFlags) Text() bool { return in.TextColumn > 0 }

// Rows reads the input and calls fn with each row's privacy unit and value
// (the item or the text); the slices are valid only during the call. While it
// runs longer than two seconds it reports progress to progress (if non-nil).
func (in *InputFlags) Rows(progressW io.Writer, fn func(user, value []byte)) (int64, error) {
	r, err := tabfile.Open(in.Input, in.format())
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

// RowBlock holds the (privacy unit, value) fields of consecutive rows, for
// another goroutine to work on: the lines of a TSV file as read, or the
// fields copied out of a CSV reader.
type RowBlock struct {
	data  []byte
	spans []int // row i's user is data[spans[4i]:spans[4i+1]], its value data[spans[4i+2]:spans[4i+3]]
}

// Len returns the number of rows in the block.
func (b *RowBlock) Len() int { return len(b.spans) / 4 }

// Row returns row i's privacy unit and value.
func (b *RowBlock) Row(i int) (user, value []byte) {
	s := b.spans[4*i : 4*i+4 : 4*i+4]
	return b.data[s[0]:s[1]:s[1]], b.data[s[2]:s[3]:s[3]]
}

func (b *RowBlock) add(user, value []byte) {
	u := len(b.data)
	b.data = append(b.data, user...)
	v := len(b.data)
	b.data = append(b.data, value...)
	b.spans = append(b.spans, u, v, v, len(b.data))
}

// blockBytes is the size of the blocks of rows that RowsParallel hands to
// its workers: large enough that a block's distinct values are few compared
// to its pairs, small enough that the blocks in flight cost little memory.
var blockBytes = 1 << 18

// jobsAhead is how many blocks more than workers are in memory at once: one
// being read, one being merged, one waiting.
const jobsAhead = 3

// RowsParallel reads the input as Rows does, in blocks of consecutive rows
// of about 256 KiB, and runs work on up to workers goroutines (≤ 0:
// GOMAXPROCS), each block with a state of its own that work fills, then merge
// on the calling goroutine with the states in input order. So a merge that
// depends only on the sequence of states it sees gives the same result for
// any number of workers. States are recycled: work gets one that an earlier
// merge has returned and must reset it. Reading, working and merging overlap;
// at most workers + 3 blocks and states are in memory at once. After a read
// error, the blocks before it are still merged, then the error is returned.
//
// A TSV file is read as bytes on the calling goroutine's helper and split
// into rows by the workers (tsvblocks.go), so that the reading goroutine
// only decompresses; other formats are split as they are read.
func RowsParallel[S any](in *InputFlags, progressW io.Writer, workers int, newState func() S, work func(*RowBlock, S), merge func(S)) (int64, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if in.format() == tabfile.TSV {
		return rowsParallelTSV(in, progressW, workers, newState, work, merge)
	}
	type job struct {
		block RowBlock
		state S
		done  chan struct{}
	}
	jobs := make([]*job, workers+jobsAhead)
	free := make(chan *job, len(jobs))
	for i := range jobs {
		jobs[i] = &job{state: newState(), done: make(chan struct{}, 1)}
		free <- jobs[i]
	}
	todo := make(chan *job, len(jobs))
	ordered := make(chan *job, len(jobs))
	var (
		rows    int64
		readErr error
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ordered)
		defer close(todo)
		var cur *job
		send := func() {
			todo <- cur
			ordered <- cur
			cur = nil
		}
		rows, readErr = in.Rows(progressW, func(user, value []byte) {
			if cur == nil {
				cur = <-free // the merger returns every job it takes
				if cur.block.data == nil {
					cur.block.data = make([]byte, 0, blockBytes+blockBytes/8)
				}
				cur.block.data, cur.block.spans = cur.block.data[:0], cur.block.spans[:0]
			}
			cur.block.add(user, value)
			if len(cur.block.data) >= blockBytes {
				send()
			}
		})
		if cur != nil {
			send()
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range todo {
				work(&j.block, j.state)
				j.done <- struct{}{}
			}
		}()
	}
	for j := range ordered {
		<-j.done
		merge(j.state)
		free <- j
	}
	wg.Wait()
	return rows, readErr
}
