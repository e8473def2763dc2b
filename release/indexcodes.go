package release

import (
	"errors"
	"math"
	"runtime"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// # Building a column's index from codes
//
// The index of a plain key column records, for every row whose unit is
// neither NULL nor of empty text, the unit's text and the key's item
// (keyItem of its value and text): the sealed evaluation of a column
// reference reads the stored value as it is, with no work, size limit or
// failure (see "The release index"). Both are functions of the row's two
// values. A table that stores its columns dictionary-encoded
// (storage.Table.ColumnCodes: text columns, and BIGINT columns coded on
// the call) hands the build, per row, the codes of the two values and,
// per code, the value a scan would give; the build then computes each
// unit's text and each key's item once per code, with the same Texter and
// keyItem as the scan's rows, instead of once per row, and interns them
// in order of first row, as rowGrouper does. A row's unit and item ids
// are then two array look-ups, and the grouping is the one rowGrouper
// gives from the same rows (TestCodedGroupingAsRows): users and items in
// order of first row, each unit's distinct items ascending with their row
// counts and first rows, counted among the recorded rows.
//
// What it costs: two passes over the codes (one numbers units and items
// and counts each unit's rows, one lays the rows out by unit), then
// groupWords; besides the index, 12 bytes per row for the time of the
// build (and 4 per row for each BIGINT column, coded on the call), and
// nothing per pair but the index's own entries.

// codedTable is a table that gives a column of every row as codes
// (storage.Table.ColumnCodes): codes[r] is row r's code, codeNull for
// NULL, and values[c] the value a scan gives for code c. ok is false when
// it cannot.
type codedTable interface {
	ColumnCodes(ctx *sql.Context, col string) (codes []uint32, values []any, ok bool, err error)
}

// codeNull is the code of NULL in codedTable (storage.NullCode).
const codeNull = math.MaxUint32

// skipUnit marks, in groupCoded's ids, a unit whose text is empty: its
// rows are not recorded, as Scan.Run skips them.
const skipUnit = math.MaxUint32

// groupCoded groups the rows of a scan without a filter whose one key is
// a plain column, from the codes of the unit's and the key's columns (see
// "Building a column's index from codes"). ok is false, and nothing is
// read, when the scan has another shape or the table does not give codes
// of both columns: the build then reads the rows (groupRows). err is the
// table's refusal (its scan guard) or ctx's end.
func (s *Scan) groupCoded(ctx *sql.Context) (g *grouping, ok bool, err error) {
	ct, isCoded := s.src.(codedTable)
	if !isCoded || s.fprog != nil || len(s.plain) != 1 || s.plain[0] == "" {
		return nil, false, nil
	}
	rctx := Context(ctx)
	ucodes, uvals, ok, err := ct.ColumnCodes(rctx, s.unitCol)
	if !ok || err != nil {
		return nil, false, err
	}
	kcodes, kvals, ok, err := ct.ColumnCodes(rctx, s.plain[0])
	if !ok || err != nil {
		return nil, false, err
	}
	if len(ucodes) != len(kcodes) || len(ucodes) >= math.MaxUint32-1 {
		return nil, false, errors.New("internal error: a table's columns have different row counts, or too many rows for an index")
	}
	c := &coder{sctx: s.prog.NewEvaluator(ctx).Context(), uvals: uvals, kvals: kvals,
		uid: make([]uint32, len(uvals)), iid: make([]uint32, len(kvals)+1),
		unitText: NewTexter(s.prog.Type(s.unit)), keyText: NewTexter(s.prog.Type(s.keys[0]))}
	chunks := 1
	if len(ucodes) >= 1<<16 {
		chunks = runtime.GOMAXPROCS(0)
	}
	if err := c.number(ctx, ucodes, kcodes, chunks); err != nil {
		return nil, false, err
	}
	start, from := c.offsets()
	words := c.layOut(start, from, ucodes, kcodes)
	g = &grouping{users: c.users.Strings(), items: c.items.Strings(), occ: int64(start[len(start)-1]),
		nullOcc: c.nullOcc, nnOrder: c.nnOrder}
	g.offs, g.ents, g.first = groupWords(start, words, len(g.items))
	return g, true, nil
}

// coder numbers the units and items of a coded build.
type coder struct {
	sctx         *sql.Context // the sealed evaluation's context, for texts
	uvals, kvals []any        // per code, the unit's and the key's value
	unitText     *Texter
	keyText      *Texter
	users, items setunion.Interner
	uid          []uint32 // per unit code: 0 (not met yet), skipUnit, or 1 + its user id
	iid          []uint32 // per key code, NULL's last: 0 (not met yet) or 1 + its item id
	buf          []byte
	nullOcc      int64
	nnSeen       []bool
	nnOrder      []uint32
	// counts holds, per chunk of rows (number), each user's recorded rows
	// in it.
	counts   [][]uint32
	recorded []uint64 // per chunk, its recorded rows
}

// number reads the codes in row order, in chunks consecutive ranges of
// rows, numbers units and items in order of first recorded row, and
// counts each unit's recorded rows per chunk. It stops with ctx's error.
func (c *coder) number(ctx *sql.Context, ucodes, kcodes []uint32, chunks int) error {
	c.counts, c.recorded = make([][]uint32, chunks), make([]uint64, chunks)
	for ch := range chunks {
		cnt := c.counts[ch]
		for r := len(ucodes) * ch / chunks; r < len(ucodes)*(ch+1)/chunks; r++ {
			if r&(1<<16-1) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			uc := ucodes[r]
			if uc == codeNull {
				continue
			}
			u := c.uid[uc]
			if u == 0 {
				u = c.newUnit(uc)
			}
			if u == skipUnit {
				continue
			}
			kc := kcodes[r]
			if c.iid[c.keyAt(kc)] == 0 {
				c.newItem(kc)
			}
			for int(u) > len(cnt) {
				cnt = append(cnt, 0)
			}
			cnt[u-1]++
			c.recorded[ch]++
			if kc == codeNull {
				c.nullOcc++
			} else if !c.nnSeen[u-1] {
				c.nnSeen[u-1] = true
				c.nnOrder = append(c.nnOrder, u-1)
			}
		}
		c.counts[ch] = cnt
	}
	return nil
}

// offsets returns start (unit u's rows will be words[start[u]:start[u+1]])
// and, per chunk, from: the chunk's first row's ordinal among the recorded
// rows. It turns counts into each chunk's first position per unit.
func (c *coder) offsets() (start []uint32, from []uint64) {
	nu := int(c.users.Len())
	start = make([]uint32, nu+1)
	for u := range nu {
		n := start[u]
		for _, cnt := range c.counts {
			if u < len(cnt) {
				cnt[u], n = n, n+cnt[u] // the chunk's first position of unit u
			}
		}
		start[u+1] = n
	}
	from = make([]uint64, len(c.counts))
	for ch := 1; ch < len(from); ch++ {
		from[ch] = from[ch-1] + c.recorded[ch-1]
	}
	return start, from
}

// keyAt is the index in iid of key code kc.
func (c *coder) keyAt(kc uint32) int {
	if kc == codeNull {
		return len(c.kvals)
	}
	return int(kc)
}

// newUnit gives unit code uc its id (1 + the user's id, or skipUnit for
// an empty text), as Scan.Run's visitor makes the text of a unit's value.
func (c *coder) newUnit(uc uint32) uint32 {
	c.buf = c.unitText.Append(c.sctx, c.buf[:0], c.uvals[uc])
	if len(c.buf) == 0 {
		c.uid[uc] = skipUnit
		return skipUnit
	}
	id, _ := c.users.ID(c.buf)
	if int(id) == len(c.nnSeen) {
		c.nnSeen = append(c.nnSeen, false)
	}
	c.uid[uc] = id + 1
	return id + 1
}

// newItem gives key code kc its id, from its item as the scan's rows make
// it (groupRows: keyItem of the value and its text).
func (c *coder) newItem(kc uint32) {
	var v any
	if kc != codeNull {
		v = c.kvals[kc]
	}
	var text string
	var b []byte
	if v != nil {
		text, b = c.keyText.Text(c.sctx, v)
	}
	if b != nil {
		c.buf = keyItem(c.buf[:0], v, b)
	} else {
		c.buf = keyItem(c.buf[:0], v, text)
	}
	id, _ := c.items.ID(c.buf)
	c.iid[c.keyAt(kc)] = id + 1
}

// layOut returns the recorded rows laid out by unit (words[start[u]:
// start[u+1]] are unit u's, in row order), each as item<<32 | its ordinal
// among the recorded rows, for groupWords: each chunk of number on a core
// of its own, from its first positions per unit (offsets).
func (c *coder) layOut(start []uint32, from []uint64, ucodes, kcodes []uint32) []uint64 {
	words := make([]uint64, start[len(start)-1])
	chunks := len(c.counts)
	var wg sync.WaitGroup
	for ch, pos := range c.counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := from[ch]
			for r := len(ucodes) * ch / chunks; r < len(ucodes)*(ch+1)/chunks; r++ {
				uc := ucodes[r]
				if uc == codeNull {
					continue
				}
				u := c.uid[uc]
				if u == skipUnit {
					continue
				}
				words[pos[u-1]] = uint64(c.iid[c.keyAt(kcodes[r])]-1)<<32 | k
				pos[u-1]++
				k++
			}
		}()
	}
	wg.Wait()
	c.counts = nil
	return words
}
