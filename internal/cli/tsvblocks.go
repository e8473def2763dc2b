package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dpsql/dpsql/internal/progress"
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// Reading a TSV file on several cores.
//
// The reading goroutine only decompresses: it reads the file's bytes into
// blocks of about blockBytes that end at a line end (a line longer than
// that makes a longer block) and hands them to the workers, which split
// the lines into rows as tabfile.Reader does (a line without its trailing
// '\r's, split on '\t'; empty lines skipped but counted) and keep the two
// columns' fields in place, without copying them. The merge goroutine, which
// sees the blocks in input order, numbers the lines, so errors name the
// line Rows names.

// tsvJob is a block of whole lines of the file and the state a worker
// fills from its rows.
type tsvJob[S any] struct {
	block RowBlock
	state S
	done  chan struct{}
	// header is set on the block that holds the first non-empty line,
	// which the header rule looks at.
	header bool
	lines  int64 // lines in the block
	rows   int64 // rows handed to work
	bad    *shortRow
}

// shortRow is a row with too few fields: its line within its block and its
// number of fields.
type shortRow struct {
	line   int64
	fields int
}

func rowsParallelTSV[S any](in *InputFlags, progressW io.Writer, workers int, newState func() S, work func(*RowBlock, S), merge func(S)) (int64, error) {
	src, err := tabfile.OpenStream(in.Input)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	var rowsRead atomic.Int64
	p := progress.Start(progressW, "reading "+in.Input, func() string {
		read, size := src.Progress()
		return fmt.Sprintf("%.0f%% of %s, %d rows", 100*float64(read)/float64(max(size, 1)), progress.Bytes(size), rowsRead.Load())
	})
	defer p.Stop()

	jobs := make([]*tsvJob[S], workers+jobsAhead)
	free := make(chan *tsvJob[S], len(jobs))
	for i := range jobs {
		jobs[i] = &tsvJob[S]{state: newState(), done: make(chan struct{}, 1)}
		free <- jobs[i]
	}
	todo := make(chan *tsvJob[S], len(jobs))
	ordered := make(chan *tsvJob[S], len(jobs))
	var (
		readErr error
		stop    atomic.Bool // set by the merger after a short row
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ordered)
		defer close(todo)
		readErr = readTSVBlocks(src, &stop, free, func(j *tsvJob[S]) {
			todo <- j
			ordered <- j
		})
	}()
	col := in.ItemColumn
	if in.TextColumn > 0 {
		col = in.TextColumn
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range todo {
				var header func([][]byte) bool
				if j.header {
					header = func(f [][]byte) bool { return in.header.skip(in.Input, f, in.SkipHeader) }
				}
				j.lines, j.rows, j.bad = j.block.splitTSV(in.UserColumn, col, header)
				rowsRead.Add(j.rows)
				work(&j.block, j.state)
				j.done <- struct{}{}
			}
		}()
	}
	var rows, lines int64
	var rowErr error
	for j := range ordered {
		<-j.done
		if rowErr == nil {
			merge(j.state)
			rows += j.rows
			if j.bad != nil {
				rowErr = fmt.Errorf("%s: line %d has %d column(s) but column %d is needed; check --user-column/--item-column/--text-column and --format",
					in.Input, lines+j.bad.line, j.bad.fields, max(in.UserColumn, col))
				stop.Store(true)
			}
			lines += j.lines
		}
		free <- j
	}
	wg.Wait()
	switch {
	case rowErr != nil:
		return rows, rowErr
	case readErr != nil:
		return rows, fmt.Errorf("%s: line %d: %w", in.Input, lines, readErr)
	}
	return rows, nil
}

// readTSVBlocks reads src into the blocks of jobs taken from free, each
// ending at a line end (the last at the end of the file), and sends them
// until the end of the file, a read error (the lines before the broken one
// are sent) or stop. It marks the block that holds the first non-empty line.
func readTSVBlocks[S any](src io.Reader, stop *atomic.Bool, free chan *tsvJob[S], send func(*tsvJob[S])) error {
	var pending []byte // the start of a line the previous block did not end
	headerPending := true
	for !stop.Load() {
		j := <-free // the merger returns every job it takes
		if j.block.data == nil {
			j.block.data = make([]byte, 0, blockBytes+blockBytes/8)
		}
		buf := append(j.block.data[:0], pending...)
		buf, err := fill(src, buf, blockBytes)
		k := -1
		if err == nil {
			k = bytes.LastIndexByte(buf, '\n')
			for k < 0 && err == nil { // a line longer than the block
				from := len(buf)
				buf, err = fill(src, buf, len(buf)+blockBytes)
				if k = bytes.LastIndexByte(buf[from:], '\n'); k >= 0 {
					k += from
				}
			}
		}
		var cut int
		switch {
		case errors.Is(err, io.EOF):
			cut = len(buf)
		case err != nil:
			cut = bytes.LastIndexByte(buf, '\n') + 1 // drop the broken line
		default:
			cut = k + 1
		}
		pending = append(pending[:0], buf[cut:]...)
		j.block.data = buf[:cut]
		j.header = false
		if headerPending && slices.ContainsFunc(j.block.data, func(c byte) bool { return c != '\n' && c != '\r' }) {
			j.header, headerPending = true, false
		}
		send(j)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fill reads from src into buf until it holds at least n bytes, growing it
// when full, or src returns an error (io.EOF at the end).
func fill(src io.Reader, buf []byte, n int) ([]byte, error) {
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		k, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// splitTSV makes b's rows from the lines of b.data as tabfile.Reader reads
// them: each line without its trailing '\r's, empty lines skipped, fields
// separated by '\t'; a row's user is field userCol and its value field
// valueCol (1-based). When header is not nil, it is called with every
// field of the first non-empty line, which is skipped if it returns true.
// A line with too few fields ends the block: the rows before it are kept,
// and bad gives its line number in the block and its number of fields.
func (b *RowBlock) splitTSV(userCol, valueCol int, header func([][]byte) bool) (lines, rows int64, bad *shortRow) {
	b.spans = b.spans[:0]
	need := max(userCol, valueCol)
	data := b.data
	for pos := 0; pos < len(data); {
		end, next := len(data), len(data)
		if k := bytes.IndexByte(data[pos:], '\n'); k >= 0 {
			end, next = pos+k, pos+k+1
		}
		lines++
		for end > pos && data[end-1] == '\r' {
			end--
		}
		line := data[pos:end]
		start := pos
		pos = next
		if len(line) == 0 {
			continue
		}
		if header != nil {
			skip := header(bytes.Split(line, []byte{'\t'}))
			header = nil
			if skip {
				continue
			}
		}
		var u0, u1, v0, v1 int
		f, off := 1, 0
		for {
			fe := len(line)
			if k := bytes.IndexByte(line[off:], '\t'); k >= 0 {
				fe = off + k
			}
			if f == userCol {
				u0, u1 = start+off, start+fe
			}
			if f == valueCol {
				v0, v1 = start+off, start+fe
			}
			if f == need {
				break
			}
			if fe == len(line) {
				return lines, rows, &shortRow{line: lines, fields: f}
			}
			f, off = f+1, fe+1
		}
		b.spans = append(b.spans, u0, u1, v0, v1)
		rows++
	}
	return lines, rows, nil
}
