package storage

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// Type is the type of a column: the few types loaded data needs.
type Type int

// Column types and their SQL types.
const (
	Text     Type = iota // LONGTEXT (utf8mb4)
	BigInt               // BIGINT
	Double               // DOUBLE
	Date                 // DATE
	Datetime             // DATETIME(6): microseconds kept
)

var typeNames = [...]string{Text: "TEXT", BigInt: "BIGINT", Double: "DOUBLE", Date: "DATE", Datetime: "DATETIME"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// SQLType returns the go-mysql-server type of t.
func (t Type) SQLType() sql.Type {
	switch t {
	case BigInt:
		return types.Int64
	case Double:
		return types.Float64
	case Date:
		return types.Date
	case Datetime:
		return types.DatetimeMaxPrecision
	}
	return types.LongText
}

// ParseType maps a SQL type name to a Type: TEXT (also VARCHAR, CHAR,
// STRING, LONGTEXT), BIGINT (INT, INTEGER), DOUBLE (FLOAT, REAL), DATE,
// DATETIME (TIMESTAMP). Case-insensitive; a length such as VARCHAR(64) is
// accepted and ignored.
func ParseType(s string) (Type, error) {
	name := strings.ToUpper(strings.TrimSpace(s))
	if i := strings.IndexByte(name, '('); i > 0 && strings.HasSuffix(name, ")") {
		name = strings.TrimSpace(name[:i])
	}
	switch name {
	case "TEXT", "VARCHAR", "CHAR", "STRING", "LONGTEXT", "MEDIUMTEXT":
		return Text, nil
	case "BIGINT", "INT", "INTEGER":
		return BigInt, nil
	case "DOUBLE", "FLOAT", "REAL":
		return Double, nil
	case "DATE":
		return Date, nil
	case "DATETIME", "TIMESTAMP":
		return Datetime, nil
	}
	return 0, fmt.Errorf("unknown column type %q: use TEXT, BIGINT, DOUBLE, DATE or DATETIME", s)
}

// Column describes a column of a table.
type Column struct {
	Name    string
	Type    Type
	NotNull bool
}

// isNull reports whether a text field means NULL for a column of type t:
// a nil field (a source's NULL) and MySQL's \N always, and the empty field
// for every type but TEXT.
func isNull(t Type, f []byte) bool {
	if f == nil {
		return true
	}
	if len(f) == 2 && f[0] == '\\' && f[1] == 'N' {
		return true
	}
	return len(f) == 0 && t != Text
}

// parseInt parses a BIGINT field: an optional sign and decimal digits, with
// surrounding space allowed.
func parseInt(f []byte) (int64, bool) {
	f = bytes.TrimSpace(f)
	n, err := strconv.ParseInt(string(f), 10, 64)
	return n, err == nil
}

// parseDouble parses a DOUBLE field; NaN and infinities are refused (MySQL
// has no such DOUBLE values).
func parseDouble(f []byte) (float64, bool) {
	f = bytes.TrimSpace(f)
	x, err := strconv.ParseFloat(string(f), 64)
	return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
}

// Layouts accepted for DATE and DATETIME fields.
var (
	dateLayouts     = []string{"2006-01-02"}
	datetimeLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04"}
)

// parseDate parses YYYY-MM-DD.
func parseDate(f []byte) (time.Time, bool) {
	f = bytes.TrimSpace(f)
	if len(f) != 10 {
		return time.Time{}, false
	}
	t, err := time.Parse(dateLayouts[0], string(f))
	return t, err == nil
}

// parseDatetime parses YYYY-MM-DD[ T]HH:MM[:SS[.fraction]][zone], or a
// date alone (midnight). Times with a zone are converted to UTC; times are
// kept to the microsecond.
func parseDatetime(f []byte) (time.Time, bool) {
	f = bytes.TrimSpace(f)
	if len(f) < 10 {
		return time.Time{}, false
	}
	s := string(f)
	if len(f) == 10 {
		t, ok := parseDate(f)
		return t, ok
	}
	for _, l := range datetimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC().Truncate(time.Microsecond), true
		}
	}
	return time.Time{}, false
}

// parses reports whether field f is a valid value of type t.
func parses(t Type, f []byte) bool {
	switch t {
	case BigInt:
		_, ok := parseInt(f)
		return ok
	case Double:
		_, ok := parseDouble(f)
		return ok
	case Date:
		_, ok := parseDate(f)
		return ok
	case Datetime:
		_, ok := parseDatetime(f)
		return ok
	}
	return true
}

// inferType returns the narrowest type all non-null values parse as:
// BIGINT, DOUBLE, DATE, DATETIME, else TEXT. Integers with a leading zero
// ("007") and digit strings too long for BIGINT are identifiers, so TEXT.
func inferType(values [][]byte) Type {
	isInt, isDouble, isDate, isDatetime := true, true, true, true
	seen := false
	for _, v := range values {
		if isNull(BigInt, v) {
			continue
		}
		seen = true
		v = bytes.TrimSpace(v)
		_, intOK := parseInt(v)
		if isInt && (!intOK || leadingZero(v)) {
			isInt = false
		}
		if isDouble {
			_, ok := parseDouble(v)
			if !ok || leadingZero(v) || (allDigits(v) && !intOK) {
				isDouble = false
			}
		}
		if isDate {
			_, isDate = parseDate(v)
		}
		if isDatetime {
			_, isDatetime = parseDatetime(v)
		}
		if !isInt && !isDouble && !isDate && !isDatetime {
			return Text
		}
	}
	switch {
	case !seen:
		return Text
	case isInt:
		return BigInt
	case isDouble:
		return Double
	case isDate:
		return Date
	case isDatetime:
		return Datetime
	}
	return Text
}

// leadingZero reports a number written with a leading zero, such as 007 or
// -01 (but not 0, 0.5 or -0.5).
func leadingZero(v []byte) bool {
	if len(v) > 0 && (v[0] == '-' || v[0] == '+') {
		v = v[1:]
	}
	return len(v) > 1 && v[0] == '0' && v[1] >= '0' && v[1] <= '9'
}

func allDigits(v []byte) bool {
	if len(v) > 0 && (v[0] == '-' || v[0] == '+') {
		v = v[1:]
	}
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
