package release

import (
	"errors"
	"math"
	"slices"

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
// build (16 with a BIGINT column, coded on the call), and nothing per
// pair but the index's own entries.

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
	start, err := c.number(ctx, ucodes, kcodes)
	if err != nil {
		return nil, false, err
	}
	words := c.layOut(start, ucodes, kcodes)
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
	rowsPerUser  []uint32
}

// number reads the codes in row order, numbers units and items in order
// of first recorded row, and returns start: unit u's rows will be
// words[start[u]:start[u+1]] (layOut). It stops with ctx's error.
func (c *coder) number(ctx *sql.Context, ucodes, kcodes []uint32) ([]uint32, error) {
	for r, uc := range ucodes {
		if r&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
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
		c.rowsPerUser[u-1]++
		if kc == codeNull {
			c.nullOcc++
		} else if !c.nnSeen[u-1] {
			c.nnSeen[u-1] = true
			c.nnOrder = append(c.nnOrder, u-1)
		}
	}
	start := make([]uint32, len(c.rowsPerUser)+1)
	for u, n := range c.rowsPerUser {
		start[u+1] = start[u] + n
	}
	c.rowsPerUser = nil
	return start, nil
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
	if int(id) == len(c.rowsPerUser) {
		c.rowsPerUser = append(c.rowsPerUser, 0)
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
// among the recorded rows, for groupWords.
func (c *coder) layOut(start []uint32, ucodes, kcodes []uint32) []uint64 {
	pos := slices.Clone(start[:len(start)-1])
	words := make([]uint64, start[len(start)-1])
	k := uint64(0)
	for r, uc := range ucodes {
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
	return words
}
