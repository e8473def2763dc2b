package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"time"
)

// Digest returns a digest of t's schema and rows that does not depend on
// the rows' order: SHA-256 of the schema, followed by the sum, lane by
// lane modulo 2⁶⁴, of the SHA-256 of every row (a multiset hash: a
// database returns rows in no fixed order, and a reload of the same rows in
// another order is the same content). Two tables with equal digests hold
// the same rows with overwhelming probability for content nobody chose to
// collide (the administrator's data).
func Digest(t *Table) string {
	h := sha256.New()
	var lanes [4]uint64
	var buf []byte
	for _, c := range t.cols {
		buf = appendField(buf[:0], c.Name)
		buf = appendField(buf, c.Type.String())
		h.Write(buf)
	}
	const chunk = 4096
	stride := len(t.data)
	vals := make([]any, chunk*stride)
	for from := 0; from < t.rows; from += chunk {
		n := min(chunk, t.rows-from)
		for j, c := range t.data {
			c.fill(vals, stride, j, from, n)
		}
		for r := range n {
			buf = buf[:0]
			for _, v := range vals[r*stride : (r+1)*stride] {
				buf = appendValue(buf, v)
			}
			sum := sha256.Sum256(buf)
			for k := range lanes {
				lanes[k] += binary.BigEndian.Uint64(sum[8*k:])
			}
		}
	}
	for _, l := range lanes {
		h.Write(binary.BigEndian.AppendUint64(nil, l))
	}
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(t.rows)))
	return hex.EncodeToString(h.Sum(nil))
}

// appendField appends s length-prefixed.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendValue appends a type-tagged, unambiguous encoding of a stored value.
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 0)
	case int64:
		return binary.BigEndian.AppendUint64(append(b, 1), uint64(x))
	case float64:
		return binary.BigEndian.AppendUint64(append(b, 2), math.Float64bits(x))
	case time.Time:
		return binary.BigEndian.AppendUint64(append(b, 3), uint64(x.UnixMicro()))
	case string:
		return appendField(append(b, 4), x)
	case []byte:
		return appendField(append(b, 4), string(x))
	}
	return append(b, 5)
}
