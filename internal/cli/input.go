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

// RowBlock holds the (privacy unit, value) fields of consecutive rows,
// copied out of the reader so that another goroutine can work on them.
type RowBlock struct {
	data []byte
	ends []int // row i's user is data[ends[2i−1]:ends[2i]], its value data[ends[2i]:ends[2i+1]]
}

// Len returns the number of rows in the block.
func (b *RowBlock) Len() int { return len(b.ends) / 2 }

// Row returns row i's privacy unit and value.
func (b *RowBlock) Row(i int) (user, value []byte) {
	start := 0
	if i > 0 {
		start = b.ends[2*i-1]
	}
	mid, end := b.ends[2*i], b.ends[2*i+1]
	return b.data[start:mid:mid], b.data[mid:end:end]
}

func (b *RowBlock) add(user, value []byte) {
	b.data = append(b.data, user...)
	b.ends = append(b.ends, len(b.data))
	b.data = append(b.data, value...)
	b.ends = append(b.ends, len(b.data))
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
func RowsParallel[S any](in *InputFlags, progressW io.Writer, workers int, newState func() S, work func(*RowBlock, S), merge func(S)) (int64, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
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
				cur.block.data, cur.block.ends = cur.block.data[:0], cur.block.ends[:0]
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
