package ngrams

import (
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// A Batch tokenises and interns a run of consecutive rows away from the
// extractor, so that several goroutines can share that work while one adds
// the batches, in input order, with Extractor.AddBatch.
//
// Adding batches in order stores exactly what AddRow over the same rows in
// the same order would: the same token and user ids (first occurrence; a
// batch's new tokens and users are interned in the order of their first
// occurrence in it), the same token sequence and row boundaries. So a run,
// seeded or not, has the same output whatever the number of batches or
// goroutines.
//
// A Batch is not safe for concurrent use; the zero value is ready to use.
type Batch struct {
	sc    tokenize.Scanner
	emit  func(tok []byte)
	users setunion.Interner
	toks  setunion.Interner
	// The batch-local tokens of the stored rows, row after row, as in
	// Extractor.
	tokens  []uint32
	rowEnd  []uint32
	rowUser []uint32
	rows    int64
}

// AddRow tokenises one row as Extractor.AddRow does. The slices may be
// reused by the caller after AddRow returns.
func (bt *Batch) AddRow(user, text []byte) {
	if len(user) == 0 {
		return
	}
	if bt.emit == nil {
		bt.emit = func(tok []byte) {
			t, _ := bt.toks.ID(tok)
			bt.tokens = append(bt.tokens, t)
		}
	}
	bt.rows++
	start := len(bt.tokens)
	bt.sc.Each(text, bt.emit)
	if len(bt.tokens) == start {
		return
	}
	u, _ := bt.users.ID(user)
	bt.rowEnd = append(bt.rowEnd, uint32(len(bt.tokens)))
	bt.rowUser = append(bt.rowUser, u)
}

// Reset empties the batch for reuse, keeping its memory.
func (bt *Batch) Reset() {
	bt.users.Reset()
	bt.toks.Reset()
	bt.tokens, bt.rowEnd, bt.rowUser = bt.tokens[:0], bt.rowEnd[:0], bt.rowUser[:0]
	bt.rows = 0
}

// AddBatch adds the rows of bt as AddRow would have added them one by one.
// bt may be reset and reused once AddBatch returns.
func (e *Extractor) AddBatch(bt *Batch) {
	if e.err != nil || e.ran || e.frozen != nil {
		return
	}
	e.rows += bt.rows
	toks := resize(e.batchToks, bt.toks.Len())
	for t := range toks {
		toks[t], _ = e.toks.ID(bt.toks.Bytes(uint32(t)))
	}
	users := resize(e.batchUsers, bt.users.Len())
	for u := range users {
		users[u], _ = e.users.ID(bt.users.Bytes(uint32(u)))
	}
	e.batchToks, e.batchUsers = toks, users
	base := uint32(len(e.tokens))
	for _, t := range bt.tokens {
		e.tokens = append(e.tokens, toks[t])
	}
	if e.tooMany() {
		return
	}
	for r, end := range bt.rowEnd {
		e.rowEnd = append(e.rowEnd, base+end)
		e.rowUser = append(e.rowUser, users[bt.rowUser[r]])
	}
}

func resize(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n)
	}
	return s[:n]
}
