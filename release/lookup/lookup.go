// Package lookup provides the public side of a private release's
// enrichment: a Set of values read from a public table before the release
// scans its protected table, and In, the expression that probes it once
// per protected row inside the release's sealed evaluation.
//
// A Set compares values as MySQL compares a column with the public column
// it is matched against, within one class of types (Class): text by the
// public column's collation (two strings are equal when their collation
// weights are), numbers by value (as decimals: 1, 1.0 and 1.00 are equal),
// dates and times as DATETIME(6) instants. Each value has one canonical
// key, so a probe is one conversion, one key and one hash lookup: its cost
// depends on the probed value's size (bounded by the sealed evaluation)
// and not on the public data.
//
// A Set is filled once, before the protected scan, from public data only,
// and is bounded by Limits: filling it fails when the public side has more
// rows or key bytes than allowed, whatever the protected data.
package lookup

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// Class is a class of types whose values a Set compares.
type Class int

// The classes of types a Set compares.
const (
	Text Class = iota + 1
	Number
	Temporal
)

func (c Class) String() string {
	switch c {
	case Text:
		return "text"
	case Number:
		return "number"
	case Temporal:
		return "date/time"
	}
	return "unsupported"
}

// ClassOf returns the class of values of type t, or 0 when a Set does not
// compare them (JSON, spatial, enums and sets, bit strings…).
func ClassOf(t sql.Type) Class {
	switch {
	case types.IsText(t):
		return Text
	case types.IsNumber(t) && !types.IsBit(t):
		return Number
	case types.IsTime(t) || types.IsDateType(t):
		return Temporal
	}
	return 0
}

// Compatible returns the class in which a value of type left is compared
// with a public column of type right, or an error saying which pairs are
// allowed.
func Compatible(left, right sql.Type) (Class, error) {
	l, r := ClassOf(left), ClassOf(right)
	if l == 0 || l != r {
		return 0, fmt.Errorf("it compares %s with %s; a public lookup compares text with text, numbers with numbers, or dates and times with dates and times", typeName(left), typeName(right))
	}
	return l, nil
}

func typeName(t sql.Type) string {
	if c := ClassOf(t); c != 0 {
		return c.String() + " (" + t.String() + ")"
	}
	return t.String()
}

// Limits bound a Set, whatever the protected data.
type Limits struct {
	// MaxRows bounds the public rows read into the set (after the public
	// side's own filter).
	MaxRows int
	// MaxBytes bounds the total size of the set's keys.
	MaxBytes int
}

// DefaultLimits: one million public rows, 64 MiB of keys.
func DefaultLimits() Limits { return Limits{MaxRows: 1 << 20, MaxBytes: 64 << 20} }

func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.MaxRows <= 0 {
		l.MaxRows = d.MaxRows
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	return l
}

// ErrTooLarge is wrapped by the error of Add beyond the limits.
var ErrTooLarge = errors.New("public side larger than the limit of an enrichment")

// ErrNotFilled is the error of a probe of a Set that was never filled.
var ErrNotFilled = errors.New("public lookup probed before it was read")

// Set is a bounded set of values of one class, read from public data.
// Reset and Add fill it; Done makes it ready for probes. It is safe for
// concurrent probes once done.
type Set struct {
	class Class
	coll  sql.CollationID // Text: the public column's collation
	what  string          // the public side, for errors
	lim   Limits
	// source is the canonical description of what fills the set (the
	// public table, its version, the expressions and their evaluation
	// settings: release.NewPublic sets it); "" when unknown.
	source string

	mu      sync.RWMutex
	keys    map[string]struct{}
	rows    map[string][]any // a join's set: the public row of each key
	hasNull bool
	nrows   int
	bytes   int
	done    bool
}

// NewSet returns an empty set comparing in class c; for Text, coll is the
// public column's collation. what names the public side in errors.
func NewSet(c Class, coll sql.CollationID, what string, lim Limits) *Set {
	return &Set{class: c, coll: coll, what: what, lim: lim.orDefault()}
}

// Class returns the set's class.
func (s *Set) Class() Class { return s.class }

// Reset empties the set for a new fill.
func (s *Set) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.rows, s.hasNull, s.nrows, s.bytes, s.done = map[string]struct{}{}, nil, false, 0, 0, false
}

// countRow counts one more public row read, failing beyond the limit.
// Call with s.mu held.
func (s *Set) countRow() error {
	if s.keys == nil {
		s.keys = map[string]struct{}{}
	}
	if s.nrows++; s.nrows > s.lim.MaxRows {
		return fmt.Errorf("%w: %s has more than %d rows (at most %d public rows are read into one lookup: the server's limits.public_lookup_rows)", ErrTooLarge, s.what, s.lim.MaxRows, s.lim.MaxRows)
	}
	return nil
}

// Add adds one public value (nil: NULL). It fails beyond the limits, and
// for a value that cannot be compared in the set's class.
func (s *Set) Add(ctx *sql.Context, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.countRow(); err != nil {
		return err
	}
	if v == nil {
		s.hasNull = true
		return nil
	}
	k, err := s.key(ctx, v)
	if err != nil {
		return fmt.Errorf("%s: %w", s.what, err)
	}
	if _, dup := s.keys[k]; dup {
		return nil
	}
	if s.bytes += len(k); s.bytes > s.lim.MaxBytes {
		return fmt.Errorf("%w: the values of %s take more than %d bytes (at most %d bytes of public values are read into one lookup: the server's limits.public_lookup_bytes)", ErrTooLarge, s.what, s.lim.MaxBytes, s.lim.MaxBytes)
	}
	s.keys[k] = struct{}{}
	return nil
}

// AddRow adds the public row of a join whose key is v: the key must be
// unique (a lookup table); a NULL key matches nothing and is not stored.
// It fails beyond the limits, for a key that cannot be compared in the
// set's class, and for a key already added.
func (s *Set) AddRow(ctx *sql.Context, v any, row []any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.countRow(); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	k, err := s.key(ctx, v)
	if err != nil {
		return fmt.Errorf("%s: %w", s.what, err)
	}
	if _, dup := s.keys[k]; dup {
		return fmt.Errorf("%w: the join key %v appears more than once in %s; a join with a public table needs a key that is unique among the public rows it reads (filter them in ON, or use IN / EXISTS)", ErrNotUnique, v, s.what)
	}
	n := len(k)
	for _, x := range row {
		n += valueSize(x)
	}
	if s.bytes += n; s.bytes > s.lim.MaxBytes {
		return fmt.Errorf("%w: the rows of %s take more than %d bytes (at most %d bytes of public values are read into one lookup: the server's limits.public_lookup_bytes)", ErrTooLarge, s.what, s.lim.MaxBytes, s.lim.MaxBytes)
	}
	if s.rows == nil {
		s.rows = map[string][]any{}
	}
	s.keys[k] = struct{}{}
	s.rows[k] = row
	return nil
}

// ErrNotUnique is wrapped by the error of AddRow for a repeated key.
var ErrNotUnique = errors.New("public join key not unique")

// valueSize is the approximate size of a public value in bytes.
func valueSize(v any) int {
	switch x := v.(type) {
	case string:
		return len(x) + 16
	case []byte:
		return len(x) + 24
	}
	return 16
}

// Done marks the set filled: probes may start.
func (s *Set) Done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]struct{}{}
	}
	s.done = true
}

// Len returns the number of distinct non-NULL values of the set.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.keys)
}

// probe reports whether v (not nil) is in the set, and whether the set
// holds NULL or is empty.
func (s *Set) probe(ctx *sql.Context, v any) (found, hasNull, empty bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.done {
		return false, false, false, ErrNotFilled
	}
	empty = len(s.keys) == 0 && !s.hasNull
	if v == nil {
		return false, s.hasNull, empty, nil
	}
	k, err := s.key(ctx, v)
	if err != nil {
		return false, false, false, err
	}
	_, found = s.keys[k]
	return found, s.hasNull, empty, nil
}

// row returns the public row whose key is v, or nil.
func (s *Set) row(ctx *sql.Context, v any) ([]any, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.done {
		return nil, ErrNotFilled
	}
	if v == nil {
		return nil, nil
	}
	k, err := s.key(ctx, v)
	if err != nil {
		return nil, err
	}
	return s.rows[k], nil
}

// key returns the canonical key of v in the set's class.
func (s *Set) key(ctx *sql.Context, v any) (string, error) {
	switch s.class {
	case Text:
		x, _, err := types.LongText.Convert(ctx, v)
		if err != nil {
			return "", err
		}
		str, ok := x.(string)
		if !ok {
			return "", fmt.Errorf("not a string: %T", x)
		}
		var b bytes.Buffer
		if err := s.coll.WriteWeightString(&b, str); err != nil {
			return "", err
		}
		return b.String(), nil
	case Number:
		switch x := v.(type) {
		case float32:
			return floatKey(float64(x)), nil
		case float64:
			return floatKey(x), nil
		}
		x, _, err := types.InternalDecimalType.Convert(ctx, v)
		if err != nil {
			return "", err
		}
		d, ok := x.(decimal.Decimal)
		if !ok {
			return "", fmt.Errorf("not a number: %T", x)
		}
		return "d" + d.String(), nil
	case Temporal:
		x, _, err := types.DatetimeMaxPrecision.Convert(ctx, v)
		if err != nil {
			return "", err
		}
		t, ok := x.(time.Time)
		if !ok {
			return "", fmt.Errorf("not a date: %T", x)
		}
		return strconv.FormatInt(t.UnixMicro(), 36), nil
	}
	return "", fmt.Errorf("lookup: unsupported class %d", s.class)
}

// floatKey is the key of a float: that of the decimal it prints as when it
// is one (so that 0.5 and DECIMAL 0.5 are equal), its bits otherwise.
func floatKey(f float64) string {
	d, err := decimal.NewFromString(strconv.FormatFloat(f, 'f', -1, 64))
	if err != nil {
		return "f" + strconv.FormatUint(math.Float64bits(f), 36)
	}
	return "d" + d.String()
}
