// Package parquetfile reads Parquet files for package tabfile: importing it
// (for its side effect, as image/png is imported for image.Decode) makes
// tabfile.OpenSource and tabfile.ColumnNames read Parquet files. It is a
// package of its own so that programs that read only TSV and CSV, such as
// dpsql's batch commands, do not link github.com/parquet-go/parquet-go,
// whose package graph (net/http through its Brotli codec) delays the
// initialisation of the batch commands behind go-mysql-server's
// (cmd/dpsql/internal/batchmain).
package parquetfile

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// parquetFile reads the selected columns of a Parquet file row group by row
// group, each column through its own value reader, so unselected columns
// are never decoded.
//
// Values are rendered as the text MySQL accepts: integers in decimal
// (unsigned logical types as unsigned); FLOAT and DOUBLE in the shortest
// form that round-trips; BOOLEAN "1"/"0"; DECIMAL with its scale
// ("-12.34"); DATE "2006-01-02"; TIME "15:04:05.999999999";
// TIMESTAMP and legacy INT96 timestamps "2006-01-02 15:04:05.999999999"
// (UTC for instants, the wall clock for local timestamps); UUID in its
// canonical hyphenated form; strings, enums, JSON and other byte arrays as
// their bytes. NULL is nil. Repeated (list) columns cannot be read.
type parquetFile struct {
	f      *os.File
	path   string
	pf     *parquet.File
	size   int64
	total  int64
	groups []parquet.RowGroup
	rg     int   // next row group
	left   int64 // rows left in the current row group
	row    atomic.Int64
	cols   []pqColumn
	out    [][]byte
}

type pqColumn struct {
	name   string
	index  int // leaf column index in the row groups
	render func(dst []byte, v parquet.Value) []byte
	vr     parquet.ColumnChunkValueReader
	buf    []parquet.Value
	pos, n int
	out    []byte
}

func init() { tabfile.RegisterParquet(openParquet, parquetColumns) }

func openParquet(path string, o tabfile.Options) (s tabfile.Source, err error) {
	if o.Header {
		return nil, fmt.Errorf("%s: Parquet files have no header row; columns are selected by name", path)
	}
	if o.Null != nil {
		return nil, fmt.Errorf("%s: Parquet files mark NULL themselves; a NULL string applies to tsv and csv only", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil { // parquet-go panics on some malformed schemas
			err = fmt.Errorf("%s: not a readable Parquet file: %v", path, r)
		}
		if err != nil {
			f.Close()
		}
	}()
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	p := &parquetFile{f: f, path: path, pf: pf, size: st.Size(), total: pf.NumRows(), groups: pf.RowGroups()}
	schema := pf.Schema()
	cols := o.Columns
	if len(cols) == 0 {
		for _, c := range schema.Columns() {
			cols = append(cols, tabfile.Column{Name: strings.Join(c, ".")})
		}
	}
	for _, c := range cols {
		if c.Name == "" || c.Position != 0 {
			return nil, fmt.Errorf("%s: Parquet columns are selected by name, not by position", path)
		}
		leaf, ok := schema.Lookup(strings.Split(c.Name, ".")...)
		if !ok {
			return nil, fmt.Errorf("%s: no column %q (the file has %s)", path, c.Name, parquetColumnList(schema))
		}
		if leaf.MaxRepetitionLevel > 0 {
			return nil, fmt.Errorf("%s: column %q is repeated (a list or map); only flat columns can be read", path, c.Name)
		}
		render, err := parquetRenderer(leaf.Node.Type())
		if err != nil {
			return nil, fmt.Errorf("%s: column %q: %w", path, c.Name, err)
		}
		p.cols = append(p.cols, pqColumn{name: c.Name, index: leaf.ColumnIndex, render: render, buf: make([]parquet.Value, 256)})
	}
	p.out = make([][]byte, len(p.cols))
	return p, nil
}

func parquetColumnList(s *parquet.Schema) string {
	var names []string
	for _, c := range s.Columns() {
		names = append(names, strconv.Quote(strings.Join(c, ".")))
	}
	return strings.Join(names, ", ")
}

func (p *parquetFile) Next() (fields [][]byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: row %d: damaged Parquet data: %v", p.path, p.row.Load()+1, r)
		}
	}()
	for p.left == 0 {
		if p.rg >= len(p.groups) {
			return nil, io.EOF
		}
		g := p.groups[p.rg]
		p.rg++
		p.left = g.NumRows()
		chunks := g.ColumnChunks()
		for i := range p.cols {
			c := &p.cols[i]
			if c.vr != nil {
				c.vr.Close()
			}
			c.vr = parquet.NewColumnChunkValueReader(chunks[c.index])
			c.pos, c.n = 0, 0
		}
	}
	p.left--
	row := p.row.Add(1)
	for i := range p.cols {
		c := &p.cols[i]
		if c.pos == c.n {
			n, err := c.vr.ReadValues(c.buf)
			if n == 0 {
				if err == nil || errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return nil, fmt.Errorf("%s: row %d: column %q: %w", p.path, row, c.name, err)
			}
			c.pos, c.n = 0, n
		}
		v := c.buf[c.pos]
		c.pos++
		if v.IsNull() {
			p.out[i] = nil
			continue
		}
		c.out = c.render(c.out[:0], v)
		if c.out == nil {
			c.out = []byte{}
		}
		p.out[i] = c.out
	}
	return p.out, nil
}

func (p *parquetFile) Line() int64 { return p.row.Load() }

func (p *parquetFile) Progress() (read, size int64) {
	if p.total == 0 {
		return 0, p.size
	}
	return int64(float64(p.size) * float64(p.row.Load()) / float64(p.total)), p.size
}

func (p *parquetFile) Close() error {
	for i := range p.cols {
		if p.cols[i].vr != nil {
			p.cols[i].vr.Close()
		}
	}
	return p.f.Close()
}

// parquetRenderer returns the function that renders values of type t as
// text (see parquetFile).
func parquetRenderer(t parquet.Type) (func([]byte, parquet.Value) []byte, error) {
	kind := t.Kind()
	if lt := t.LogicalType(); lt != nil {
		if r := logicalRenderer(kind, lt.Value); r != nil {
			return r, nil
		}
	}
	if r := physicalRenderer(kind); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("unsupported Parquet type %s", t)
}

// renderer appends the text form of a Parquet value to dst.
type renderer = func(dst []byte, v parquet.Value) []byte

// logicalRenderer renders the logical types dpsql knows (dates, times,
// timestamps, decimals, unsigned integers, UUIDs, half floats) stored in
// the physical kind, or returns nil for the physical kind's own rendering.
func logicalRenderer(kind parquet.Kind, logical any) renderer {
	switch l := logical.(type) {
	case *format.DateType:
		if kind == parquet.Int32 {
			return func(dst []byte, v parquet.Value) []byte {
				return time.Date(1970, 1, 1+int(v.Int32()), 0, 0, 0, 0, time.UTC).AppendFormat(dst, "2006-01-02")
			}
		}
	case *format.TimeType:
		unit := unitOf(l.Unit)
		switch kind {
		case parquet.Int32:
			return func(dst []byte, v parquet.Value) []byte { return appendTimeOfDay(dst, int64(v.Int32())*int64(unit)) }
		case parquet.Int64:
			return func(dst []byte, v parquet.Value) []byte { return appendTimeOfDay(dst, v.Int64()*int64(unit)) }
		}
	case *format.TimestampType:
		if kind == parquet.Int64 {
			unit := unitOf(l.Unit)
			return func(dst []byte, v parquet.Value) []byte {
				x := v.Int64()
				var t time.Time
				switch unit {
				case time.Millisecond:
					t = time.UnixMilli(x)
				case time.Microsecond:
					t = time.UnixMicro(x)
				default:
					t = time.Unix(0, x)
				}
				return t.UTC().AppendFormat(dst, timestampLayout)
			}
		}
	case *format.DecimalType:
		scale := int(l.Scale)
		switch kind {
		case parquet.Int32:
			return func(dst []byte, v parquet.Value) []byte {
				return appendDecimal(dst, big.NewInt(int64(v.Int32())), scale)
			}
		case parquet.Int64:
			return func(dst []byte, v parquet.Value) []byte { return appendDecimal(dst, big.NewInt(v.Int64()), scale) }
		case parquet.ByteArray, parquet.FixedLenByteArray:
			return func(dst []byte, v parquet.Value) []byte {
				return appendDecimal(dst, twosComplement(v.ByteArray()), scale)
			}
		}
	case *format.IntType:
		if !l.IsSigned {
			switch kind {
			case parquet.Int32:
				return func(dst []byte, v parquet.Value) []byte {
					return strconv.AppendUint(dst, uint64(uint32(v.Int32())), 10)
				}
			case parquet.Int64:
				return func(dst []byte, v parquet.Value) []byte { return strconv.AppendUint(dst, uint64(v.Int64()), 10) }
			}
		}
	case *format.UUIDType:
		if kind == parquet.FixedLenByteArray {
			return func(dst []byte, v parquet.Value) []byte {
				b := v.ByteArray()
				if len(b) != 16 {
					return hex.AppendEncode(dst, b)
				}
				dst = hex.AppendEncode(dst, b[0:4])
				for _, part := range [][]byte{b[4:6], b[6:8], b[8:10], b[10:16]} {
					dst = hex.AppendEncode(append(dst, '-'), part)
				}
				return dst
			}
		}
	case *format.Float16Type:
		if kind == parquet.FixedLenByteArray {
			return func(dst []byte, v parquet.Value) []byte {
				b := v.ByteArray()
				if len(b) != 2 {
					return dst
				}
				return strconv.AppendFloat(dst, float64(halfToFloat(binary.LittleEndian.Uint16(b))), 'g', -1, 32)
			}
		}
	}
	return nil
}

// physicalRenderer renders a physical kind, or returns nil for an unknown
// one.
func physicalRenderer(kind parquet.Kind) renderer {
	switch kind {
	case parquet.Boolean:
		return func(dst []byte, v parquet.Value) []byte {
			if v.Boolean() {
				return append(dst, '1')
			}
			return append(dst, '0')
		}
	case parquet.Int32:
		return func(dst []byte, v parquet.Value) []byte { return strconv.AppendInt(dst, int64(v.Int32()), 10) }
	case parquet.Int64:
		return func(dst []byte, v parquet.Value) []byte { return strconv.AppendInt(dst, v.Int64(), 10) }
	case parquet.Int96:
		// Legacy timestamps (Impala, Hive, older Spark): 8 bytes of
		// nanoseconds within the day, then the Julian day number.
		return func(dst []byte, v parquet.Value) []byte {
			x := v.Int96()
			nanos := int64(uint64(x[1])<<32 | uint64(x[0]))
			days := int64(x[2]) - 2440588 // Julian day of 1970-01-01
			return time.Unix(days*86400, nanos).UTC().AppendFormat(dst, timestampLayout)
		}
	case parquet.Float:
		return func(dst []byte, v parquet.Value) []byte {
			return strconv.AppendFloat(dst, float64(v.Float()), 'g', -1, 32)
		}
	case parquet.Double:
		return func(dst []byte, v parquet.Value) []byte { return strconv.AppendFloat(dst, v.Double(), 'g', -1, 64) }
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return func(dst []byte, v parquet.Value) []byte { return append(dst, v.ByteArray()...) }
	}
	return nil
}

const timestampLayout = "2006-01-02 15:04:05.999999999"

func unitOf(u format.TimeUnit) time.Duration {
	switch u.Value.(type) {
	case *format.MilliSeconds:
		return time.Millisecond
	case *format.MicroSeconds:
		return time.Microsecond
	}
	return time.Nanosecond
}

// appendTimeOfDay appends nanoseconds since midnight as HH:MM:SS[.fraction].
func appendTimeOfDay(dst []byte, ns int64) []byte {
	return time.Unix(0, ns).UTC().AppendFormat(dst, "15:04:05.999999999")
}

// twosComplement decodes a big-endian two's complement integer.
func twosComplement(b []byte) *big.Int {
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return x
}

// appendDecimal appends unscaled·10^−scale in decimal notation.
func appendDecimal(dst []byte, unscaled *big.Int, scale int) []byte {
	if unscaled.Sign() < 0 {
		dst = append(dst, '-')
		unscaled = new(big.Int).Neg(unscaled)
	}
	digits := unscaled.String()
	if scale <= 0 {
		dst = append(dst, digits...)
		for range -scale {
			dst = append(dst, '0')
		}
		return dst
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	k := len(digits) - scale
	dst = append(dst, digits[:k]...)
	dst = append(dst, '.')
	return append(dst, digits[k:]...)
}

// halfToFloat converts an IEEE 754 binary16 value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch exp {
	case 0:
		f := float32(frac) / 1024 * float32(math.Pow(2, -14))
		if sign != 0 {
			f = -f
		}
		return f
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | frac<<13)
}

// parquetColumns returns the flat (non-repeated) columns of a Parquet file,
// nested names joined with dots.
func parquetColumns(path string) (names []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil { // parquet-go panics on some malformed files
			err = fmt.Errorf("%s: not a readable Parquet file: %v", path, r)
		}
	}()
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file: %w", path, err)
	}
	schema := pf.Schema()
	for _, c := range schema.Columns() {
		if leaf, ok := schema.Lookup(c...); ok && leaf.MaxRepetitionLevel == 0 {
			names = append(names, strings.Join(c, "."))
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no flat columns to load", path)
	}
	return names, nil
}
