package release

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"
	"unsafe"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/gmsfix"
	"github.com/dpsql/dpsql/release/lookup"
)

// # Canonical keys
//
// The reuse key of a release (Scan.Spec, Release's reuseSpec) and the key
// of an expression's release index are derived from the analysed
// expression trees by one encoder, canonExpr, never from their printed
// text (go-mysql-server's printers drop fields: LIKE's ESCAPE, a cast's
// length, a literal's type and collation).
//
// The encoding. Every node is encoded reflectively, field by field: its Go
// type's full name, its number of fields, and per field its name and value;
// a value by kind: integers, floats (IEEE bits) and booleans as such,
// strings length-prefixed, slices and arrays with their length, maps as
// their encoded (key, value) pairs sorted by encoding, pointers and
// interfaces by what they point to (an interface with its concrete type's
// name). Every token starts with a tag byte and is either of fixed size or
// length-prefixed, so the encoding is a prefix code: a concatenation of
// tokens has one parse, and two trees with the same encoding have the same
// types, the same fields and the same values everywhere — the encoding is
// injective on the trees it accepts. Three kinds of field are not encoded
// (canonSkip, reviewed one by one): caches computed from the other fields
// (a LIKE's compiled matcher, a GetField's Type2, a Literal's second form
// of its value), names that do not change evaluation (a column's name and
// table alias: a column is its index in the table's full schema, its type
// and nullability; lookup.In's printed subquery), and synchronisation.
// Anything the encoder cannot encode faithfully — a function value, a
// channel, an unsafe pointer, a cycle — makes the tree unencodable: its
// release is then never reused nor indexed (a missed reuse costs budget,
// never privacy). Special values: a column (GetField) is its index, type
// and nullability; a time.Time is its instant and location name; a
// lookup.Set is its class, collation, limits and Source (the public
// table, its version and the public side's canonical expressions), never
// its contents.
//
// What else a key holds (canonDeps). A system variable is part of a key
// only if the expression's evaluation can read it; go-mysql-server
// v0.20.0's allowed nodes read, during evaluation:
//
//   - time_zone: UNIX_TIMESTAMP(date) and FROM_UNIXTIME only
//     (function.SessionTimeZone);
//   - collation_connection and character_set_connection: only through a
//     node's CollationCoercibility (MD5, HEX, DATE_FORMAT, CAST(… AS CHAR),
//     JSON functions…, whose results take the connection's collation); a
//     tree depends on them when some node's coercibility differs between
//     two probe sessions with different connection collations and
//     character sets (canonDeps);
//   - none of sql_mode (read at parse time only: its effects, such as
//     PIPES_AS_CONCAT or ANSI_QUOTES, are in the tree),
//     div_precision_increment (a constant 4 in go-mysql-server),
//     default_week_format, lc_time_names, regexp_time_limit and
//     regexp_stack_limit (never read; releases match with RE2).
//
// The clock is read only when a TIME value is converted to a date or a
// DATETIME (it takes today's date, types.datetimeType.Convert); a tree
// reads it when a node has a temporal type, a literal holds a time value,
// or a node is a date and time function (dateFuncs): then the day (the
// server's local date, sql.Now) is part of the key.
//
// Normalisation (what two different trees share a key, and why they are
// the same release):
//
//   - A string literal compared (=, <, <=, >, >=) with an expression of
//     type DATE, DATETIME or TIMESTAMP is encoded as the DATETIME(6) value
//     it converts to, when it converts. go-mysql-server compares such a
//     pair by converting both sides to DATETIME(6) (comparison.Compare:
//     the types differ, and castLeftAndRight converts when either side is
//     a date type), so only the converted value matters: '2020-01-01',
//     '2020-1-1 0:0:0' (a server-side prepared DATE parameter) and
//     '2020-01-01 00:00:00' are one value.
//   - The pattern of a LIKE whose left operand is a text column is
//     encoded with the column's type, and its escape as LONGTEXT: the
//     pattern's collation is read only to resolve the match's collation,
//     where the column's wins (likeNormal).
//   - canonRewrite gives a string literal compared (=, <, <=, >, >=) with
//     a LONGTEXT column of the same character set the column's type,
//     before anything is evaluated; the key is of the rewritten tree. See
//     canonRewrite for why this is MySQL's semantics.
type canonEnc struct {
	b     []byte
	path  map[uintptr]bool
	depth int
	err   error
}

var errCanon = errors.New("release: expression cannot be encoded canonically")

// canonSkip lists the fields not encoded, per type: caches of the other
// fields, names that do not change evaluation, synchronisation. Reviewed
// against go-mysql-server v0.20.0; a field of a kind the encoder refuses
// (func, chan, unsafe pointer) and not listed here makes the tree
// unencodable (TestCanonAllowList finds them).
var canonSkip = map[reflect.Type]map[string]bool{
	// A column is its index in the table's full schema, its type and its
	// nullability (encoded by canonColumn); names, ids and the printer's
	// quoting do not change what it reads.
	reflect.TypeFor[expression.GetField](): {"db": true, "table": true, "exprId": true, "tableId": true, "name": true,
		"fieldType2": true, "schemaFormatter": true, "quoteName": true},
	// val2 is Val converted (sql.ConvertToValue), a cache.
	reflect.TypeFor[expression.Literal](): {"val2": true},
	// The matcher of a constant pattern, built once from Right and Escape
	// (sync.Once's state changes with the first evaluation).
	reflect.TypeFor[gmsfix.Like]():     {"once": true, "cached": true, "cerr": true},
	reflect.TypeFor[expression.Like](): {"pool": true, "once": true},
	// The DECIMAL type of typeLength and typeScale, made by the first Type().
	reflect.TypeFor[expression.Convert](): {"cachedDecimalType": true},
	// The compiled pattern and, for constant arguments, the value: caches
	// of Pattern, Flags and Text, filled at the first evaluation.
	reflect.TypeFor[function.RegexpLike]():   regexpCaches,
	reflect.TypeFor[function.RegexpInstr]():  regexpCaches,
	reflect.TypeFor[function.RegexpSubstr](): regexpCaches,
	// Desc is the printed subquery; the set's Source describes it.
	reflect.TypeFor[lookup.In](): {"Desc": true},
	// Name is the public column's name, for String.
	reflect.TypeFor[lookup.Get](): {"Name": true},
}

var regexpCaches = map[string]bool{"cachedVal": true, "re": true, "compileOnce": true, "compileErr": true}

// canonExpr appends the canonical encoding of e (nil included) to dst.
func canonExpr(dst []byte, e sql.Expression) (_ []byte, err error) {
	c := &canonEnc{b: dst, path: map[uintptr]bool{}}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errCanon, r)
		}
	}()
	if e == nil {
		c.tag('0')
		return c.b, nil
	}
	c.value(reflect.ValueOf(&e).Elem())
	if c.err != nil {
		return nil, c.err
	}
	return c.b, nil
}

func (c *canonEnc) tag(t byte) { c.b = append(c.b, t) }
func (c *canonEnc) uint(n uint64) {
	c.b = binary.AppendUvarint(c.b, n)
}
func (c *canonEnc) int(n int64) { c.b = binary.AppendVarint(c.b, n) }
func (c *canonEnc) str(s string) {
	c.uint(uint64(len(s)))
	c.b = append(c.b, s...)
}
func (c *canonEnc) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: %s", errCanon, fmt.Sprintf(format, args...))
	}
}

// typeName is a type's full name: package path and name, or its literal
// form for unnamed types.
func typeName(t reflect.Type) string {
	switch {
	case t.Name() != "" && t.PkgPath() != "":
		return t.PkgPath() + "." + t.Name()
	case t.Kind() == reflect.Pointer:
		return "*" + typeName(t.Elem())
	case t.Kind() == reflect.Slice:
		return "[]" + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map[" + typeName(t.Key()) + "]" + typeName(t.Elem())
	}
	return t.String()
}

// exported returns v without the read-only mark of unexported fields, so
// that special values can be read through their methods. Only pointers
// and addressable values are re-derived (reflect.NewAt): nothing is
// written through them.
func exported(v reflect.Value) reflect.Value {
	if v.CanInterface() {
		return v
	}
	if v.CanAddr() {
		return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	return v
}

func (c *canonEnc) value(v reflect.Value) {
	if c.err != nil {
		return
	}
	if c.depth++; c.depth > 10000 {
		c.fail("too deep")
		return
	}
	defer func() { c.depth-- }()
	if !v.IsValid() {
		c.tag('z')
		return
	}
	v = exported(v)
	if c.special(v) {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		c.tag('b')
		if v.Bool() {
			c.tag(1)
		} else {
			c.tag(0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.tag('i')
		c.int(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		c.tag('u')
		c.uint(v.Uint())
	case reflect.Float32, reflect.Float64:
		c.tag('f')
		c.b = binary.BigEndian.AppendUint64(c.b, math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		c.tag('c')
		x := v.Complex()
		c.b = binary.BigEndian.AppendUint64(c.b, math.Float64bits(real(x)))
		c.b = binary.BigEndian.AppendUint64(c.b, math.Float64bits(imag(x)))
	case reflect.String:
		c.tag('s')
		c.str(v.String())
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			c.tag('N')
			return
		}
		c.tag('l')
		c.uint(uint64(v.Len()))
		for i := range v.Len() {
			c.value(v.Index(i))
		}
	case reflect.Map:
		c.mapValue(v)
	case reflect.Pointer:
		if v.IsNil() {
			c.tag('N')
			return
		}
		up := v.UnsafePointer()
		p := uintptr(up)
		if c.path[p] {
			c.fail("cycle through %s", v.Type())
			return
		}
		c.path[p] = true
		c.tag('p')
		c.value(reflect.NewAt(v.Type().Elem(), up).Elem())
		delete(c.path, p)
	case reflect.Interface:
		if v.IsNil() {
			c.tag('N')
			return
		}
		e := v.Elem()
		c.tag('I')
		c.str(typeName(e.Type()))
		if e.Kind() == reflect.Struct && !e.CanAddr() {
			cp := reflect.New(e.Type()).Elem()
			cp.Set(e)
			e = cp
		}
		c.value(e)
	case reflect.Struct:
		c.structValue(v)
	default: // func, chan, unsafe pointer
		c.fail("a %s value", v.Type())
	}
}

func (c *canonEnc) structValue(v reflect.Value) {
	if p := v.Type().PkgPath(); p == "sync" || p == "sync/atomic" {
		// State that changes as the node is used (a sync.Once's done):
		// a field holding it must be reviewed and skipped (canonSkip).
		c.fail("a %s field", v.Type())
		return
	}
	if !v.CanAddr() {
		cp := reflect.New(v.Type()).Elem()
		cp.Set(v)
		v = cp
	}
	t := v.Type()
	skip := canonSkip[t]
	c.tag('S')
	c.str(typeName(t))
	n := 0
	for i := range t.NumField() {
		if !skip[t.Field(i).Name] {
			n++
		}
	}
	c.uint(uint64(n))
	for i := range t.NumField() {
		f := t.Field(i)
		if skip[f.Name] {
			continue
		}
		c.str(f.Name)
		c.value(v.Field(i))
	}
}

func (c *canonEnc) mapValue(v reflect.Value) {
	if v.IsNil() {
		c.tag('N')
		return
	}
	type pair struct{ k, v []byte }
	var pairs []pair
	iter := v.MapRange()
	for iter.Next() {
		k := &canonEnc{path: c.path, depth: c.depth}
		k.value(iter.Key())
		val := &canonEnc{path: c.path, depth: c.depth}
		val.value(iter.Value())
		if k.err != nil || val.err != nil {
			c.fail("map %s: %v %v", v.Type(), k.err, val.err)
			return
		}
		pairs = append(pairs, pair{k.b, val.b})
	}
	slices.SortFunc(pairs, func(a, b pair) int { return bytes.Compare(a.k, b.k) })
	c.tag('m')
	c.uint(uint64(len(pairs)))
	for _, p := range pairs {
		c.b = append(c.b, p.k...)
		c.b = append(c.b, p.v...)
	}
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	locationType = reflect.TypeFor[time.Location]()
	getFieldType = reflect.TypeFor[expression.GetField]()
	setType      = reflect.TypeFor[lookup.Set]()
)

// special encodes the values the field-by-field walk would not encode
// faithfully, and reports whether v was one.
func (c *canonEnc) special(v reflect.Value) bool {
	switch v.Type() {
	case timeType:
		// wall and ext mix the monotonic clock in; loc holds caches.
		t := v.Interface().(time.Time)
		c.tag('T')
		c.int(t.Unix())
		c.int(int64(t.Nanosecond()))
		c.str(t.Location().String())
		return true
	case locationType:
		c.tag('L')
		c.str(v.Addr().Interface().(*time.Location).String())
		return true
	case getFieldType:
		gf := v.Addr().Interface().(*expression.GetField)
		c.tag('F')
		c.int(int64(gf.Index()))
		t := gf.Type()
		c.value(reflect.ValueOf(&t).Elem())
		if gf.IsNullable() {
			c.tag(1)
		} else {
			c.tag(0)
		}
		return true
	case setType:
		s := v.Addr().Interface().(*lookup.Set)
		if s.Source() == "" {
			c.fail("a public lookup without a source")
			return true
		}
		class, coll, lim := s.Describe()
		c.tag('P')
		c.int(int64(class))
		c.uint(uint64(coll))
		c.int(int64(lim.MaxRows))
		c.int(int64(lim.MaxBytes))
		c.str(s.Source())
		return true
	}
	return false
}

// canonDeps is what a tree's evaluation reads besides the row: system
// variables and the clock (see "Canonical keys").
type canonDeps struct {
	timeZone   bool // time_zone
	connection bool // collation_connection, character_set_connection
	clock      bool // today's date
}

func (d canonDeps) or(o canonDeps) canonDeps {
	return canonDeps{d.timeZone || o.timeZone, d.connection || o.connection, d.clock || o.clock}
}

// dateFuncs are the allowed date and time functions: their arguments are
// converted to dates or times, which may read the clock (a TIME taken as
// a date is today's).
var dateFuncs = map[reflect.Type]bool{}

func init() {
	for _, e := range []any{
		(*function.Year)(nil), (*function.Quarter)(nil), (*function.Month)(nil), (*function.Day)(nil),
		(*function.Hour)(nil), (*function.Minute)(nil), (*function.Second)(nil), (*function.Microsecond)(nil),
		(*function.DayOfWeek)(nil), (*function.Weekday)(nil), (*function.DayOfYear)(nil), (*function.Week)(nil),
		(*function.WeekOfYear)(nil), (*function.YearWeek)(nil), (*function.MonthName)(nil), (*function.DayName)(nil),
		(*function.LastDay)(nil), (*function.Date)(nil), (*function.Time)(nil), (*function.DatetimeConversion)(nil),
		(*function.ToDays)(nil), (*function.FromDays)(nil), (*function.FromUnixtime)(nil), (*function.TimeToSec)(nil),
		(*function.DateDiff)(nil), (*function.TimeDiff)(nil), (*function.UnixTimestamp)(nil), (*function.DateAdd)(nil),
		(*function.DateSub)(nil), (*expression.Interval)(nil), (*function.Extract)(nil), (*function.TimestampDiff)(nil),
		(*function.DateFormat)(nil), (*function.TimeFormat)(nil), (*function.StrToDate)(nil), (*expression.Convert)(nil),
	} {
		dateFuncs[reflect.TypeOf(e)] = true
	}
}

// temporal reports whether t is a date, time or year type.
func temporal(t sql.Type) bool {
	return t != nil && (types.IsTime(t) || types.IsTimespan(t) || types.IsDateType(t) || types.IsYear(t))
}

// probeSession answers the connection's collation and character set with
// fixed values, to find the nodes whose collation depends on them.
type probeSession struct {
	sql.Session
	coll sql.CollationID
	cs   sql.CharacterSetID
}

func (p probeSession) GetCollation() sql.CollationID       { return p.coll }
func (p probeSession) GetCharacterSet() sql.CharacterSetID { return p.cs }

// depsOf returns what e's evaluation reads besides the row.
func depsOf(ctx *sql.Context, e sql.Expression) canonDeps {
	var d canonDeps
	if e == nil {
		return d
	}
	// A new base session costs the maps of every system and status
	// variable (about a tenth of a metadata statement's CPU): make one only
	// when ctx has none.
	var base sql.Session
	if ctx != nil && ctx.Session != nil {
		base = ctx.Session
	} else {
		base = sql.NewBaseSession()
	}
	a := sql.NewContext(ctxOf(ctx), sql.WithSession(probeSession{base, sql.Collation_ascii_bin, sql.CharacterSet_ascii}))
	b := sql.NewContext(ctxOf(ctx), sql.WithSession(probeSession{base, sql.Collation_latin1_bin, sql.CharacterSet_latin1}))
	transform.InspectExpr(e, func(n sql.Expression) bool {
		switch x := n.(type) {
		case *function.UnixTimestamp, *function.FromUnixtime:
			d.timeZone = true
		case *expression.Literal:
			switch x.Value().(type) {
			case time.Time, types.Timespan:
				d.clock = true
			}
		}
		if dateFuncs[reflect.TypeOf(n)] || temporal(typeOrNil(n)) {
			d.clock = true
		}
		if !d.connection && coercibilityDiffers(a, b, n) {
			d.connection = true
		}
		return false
	})
	return d
}

func typeOrNil(e sql.Expression) (t sql.Type) {
	defer func() {
		if recover() != nil {
			t = nil
		}
	}()
	return e.Type()
}

// coercibilityDiffers reports whether n's collation or coercibility
// differ between the probe contexts a and b (or cannot be computed).
func coercibilityDiffers(a, b *sql.Context, n sql.Expression) (differs bool) {
	defer func() {
		if recover() != nil {
			differs = true
		}
	}()
	ca, xa := sql.GetCoercibility(a, n)
	cb, xb := sql.GetCoercibility(b, n)
	return ca != cb || xa != xb
}

// canonRewrite returns e with every string literal that is compared (=,
// <, <=, >, >=) with a LONGTEXT column of the same character set typed as
// that column. Why this is the comparison MySQL makes: the column's
// collation decides such a comparison (its coercibility, 2, beats the
// literal's, 4), whatever the connection's collation that typed the
// literal; go-mysql-server compares under the column's type when the
// literal has exactly that type and otherwise converts both sides to
// LONGTEXT and compares under the resolved collation — the column's —
// which is the same comparison except on a stored value that is not valid
// UTF-8, which the conversion turns into NULL. With the rewrite, every
// connection collation compares as MySQL does, and the same statement
// sent by clients with different connection collations (the mysql CLI;
// pandas, which sets utf8mb4_0900_ai_ci) is one release, with one key.
func canonRewrite(e sql.Expression) (sql.Expression, error) {
	if e == nil {
		return nil, nil
	}
	out, _, err := transform.Expr(e, func(n sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		var l, r sql.Expression
		switch x := n.(type) {
		case *expression.Equals:
			l, r = x.Left(), x.Right()
		case *expression.LessThan:
			l, r = x.Left(), x.Right()
		case *expression.LessThanOrEqual:
			l, r = x.Left(), x.Right()
		case *expression.GreaterThan:
			l, r = x.Left(), x.Right()
		case *expression.GreaterThanOrEqual:
			l, r = x.Left(), x.Right()
		default:
			return n, transform.SameTree, nil
		}
		nl, nr := retypeLiteral(l, r), retypeLiteral(r, l)
		if nl == l && nr == r {
			return n, transform.SameTree, nil
		}
		out, err := n.WithChildren(nl, nr)
		return out, transform.NewTree, err
	})
	return out, err
}

// retypeLiteral returns lit typed as col when lit is a string literal
// and col a LONGTEXT column of the same character set; lit otherwise.
func retypeLiteral(lit, col sql.Expression) sql.Expression {
	l, ok := lit.(*expression.Literal)
	if !ok {
		return lit
	}
	gf, ok := col.(*expression.GetField)
	if !ok {
		return lit
	}
	s, ok := l.Value().(string)
	if !ok {
		return lit
	}
	lt, ok1 := l.Type().(sql.StringType)
	ct, ok2 := gf.Type().(sql.StringType)
	if !ok1 || !ok2 || !types.IsTextOnly(lt) || !types.IsTextOnly(ct) ||
		lt.MaxByteLength() != types.LongTextBlobMax || ct.MaxByteLength() != types.LongTextBlobMax ||
		lt.Collation().CharacterSet() != ct.Collation().CharacterSet() || types.TypesEqual(lt, ct) {
		return lit
	}
	return expression.NewLiteral(s, ct)
}

// canonNormal returns the tree the key encodes: e with every string
// literal compared (=, <, <=, >, >=, <=>) with an expression of a date
// type replaced by the DATETIME(6) value it converts to (see "Canonical
// keys": go-mysql-server compares such pairs as those values). Only for
// the key: the release evaluates e.
func canonNormal(ctx *sql.Context, e sql.Expression) (sql.Expression, error) {
	if e == nil {
		return nil, nil
	}
	out, _, err := transform.Expr(e, func(n sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		switch x := n.(type) {
		case *gmsfix.Like:
			return likeNormal(x, x.Left, x.Right, x.Escape, gmsfix.NewLike)
		case *expression.Like:
			return likeNormal(x, x.LeftChild, x.RightChild, x.Escape, func(l, r, e sql.Expression) sql.Expression {
				return expression.NewLike(l, r, e)
			})
		case *expression.Equals, *expression.LessThan, *expression.LessThanOrEqual,
			*expression.GreaterThan, *expression.GreaterThanOrEqual, *expression.NullSafeEquals:
		default:
			return n, transform.SameTree, nil
		}
		ch := n.Children()
		if len(ch) != 2 {
			return n, transform.SameTree, nil
		}
		nl, nr := asDatetime(ctx, ch[0], ch[1]), asDatetime(ctx, ch[1], ch[0])
		if nl == ch[0] && nr == ch[1] {
			return n, transform.SameTree, nil
		}
		out, err := n.WithChildren(nl, nr)
		return out, transform.NewTree, err
	})
	return out, err
}

// likeNormal returns a LIKE (go-mysql-server's, as analysed, or
// gmsfix's, as compiled) with its pattern typed as its left operand when
// that is a text column and the pattern a string literal of the same
// character set, and its escape (a string literal) typed LONGTEXT: the
// pattern's collation is read only through Like.CollationCoercibility,
// where the column's (coercibility 2) beats the literal's (4), and the
// escape's never (gmsfix.Like reads its text). Only for the key.
func likeNormal[L sql.Expression](l sql.Expression, left, right0, esc0 sql.Expression, mk func(l, r, e sql.Expression) L) (sql.Expression, transform.TreeIdentity, error) {
	right, esc := right0, esc0
	if gf, ok := left.(*expression.GetField); ok {
		if lit, ok := right.(*expression.Literal); ok {
			ct, ok1 := gf.Type().(sql.StringType)
			lt, ok2 := lit.Type().(sql.StringType)
			if s, ok3 := lit.Value().(string); ok1 && ok2 && ok3 && types.IsTextOnly(ct) && types.IsTextOnly(lt) &&
				ct.Collation().CharacterSet() == lt.Collation().CharacterSet() {
				right = expression.NewLiteral(s, ct)
			}
		}
	}
	if lit, ok := esc.(*expression.Literal); ok && types.IsTextOnly(lit.Type()) {
		if s, ok := lit.Value().(string); ok {
			esc = expression.NewLiteral(s, types.LongText)
		}
	}
	if right == right0 && esc == esc0 {
		return l, transform.SameTree, nil
	}
	return mk(left, right, esc), transform.NewTree, nil
}

// datetimeKey is the node canonNormal puts in place of a string literal
// compared with a date: the value both sides are compared as. It is never
// evaluated.
type datetimeKey struct {
	expression.Literal
}

// asDatetime returns lit as a datetimeKey when it is a string literal,
// other has a date type and lit converts to DATETIME(6); lit otherwise.
func asDatetime(ctx *sql.Context, lit, other sql.Expression) sql.Expression {
	l, ok := lit.(*expression.Literal)
	if !ok || !types.IsText(l.Type()) || !types.IsTime(typeOrNil(other)) {
		return lit
	}
	s, ok := l.Value().(string)
	if !ok {
		return lit
	}
	v, _, err := types.DatetimeMaxPrecision.Convert(ctx, s)
	if err != nil || v == nil {
		return lit
	}
	return &datetimeKey{Literal: *expression.NewLiteral(v, types.DatetimeMaxPrecision)}
}

// exprKey is the canonical key of one expression: its normalised tree's
// encoding, and what its evaluation reads besides the row.
func exprKey(ctx *sql.Context, e sql.Expression) ([]byte, canonDeps, error) {
	n, err := canonNormal(ctx, e)
	if err != nil {
		return nil, canonDeps{}, err
	}
	b, err := canonExpr(nil, n)
	if err != nil {
		return nil, canonDeps{}, err
	}
	return b, depsOf(ctx, e), nil
}

// depsKey encodes the values of what d says the evaluation reads: the
// session's time_zone, its connection collation and character set, and
// today's date (sql.Now, the clock a TIME's conversion reads).
func depsKey(dst []byte, ctx *sql.Context, d canonDeps) []byte {
	c := &canonEnc{b: dst}
	get := func(name string) string {
		if ctx == nil || ctx.Session == nil {
			return ""
		}
		v, err := ctx.GetSessionVariable(ctx, name)
		if err != nil {
			return "?" + err.Error()
		}
		return fmt.Sprint(v)
	}
	c.tag('D')
	if d.timeZone {
		c.tag('z')
		c.str(get("time_zone"))
	}
	if d.connection {
		c.tag('c')
		c.str(get("collation_connection"))
		c.str(get("character_set_connection"))
		if ctx != nil && ctx.Session != nil {
			c.uint(uint64(ctx.GetCollation()))
			c.uint(uint64(ctx.GetCharacterSet()))
		}
	}
	if d.clock {
		c.tag('d')
		c.str(sql.Now().Format(time.DateOnly))
	}
	c.tag('.')
	return c.b
}

// canonParts encodes parts length-prefixed, for composite keys.
func canonParts(dst []byte, parts ...[]byte) []byte {
	for _, p := range parts {
		dst = binary.AppendUvarint(dst, uint64(len(p)))
		dst = append(dst, p...)
	}
	return dst
}

// ctxOf is ctx's context.Context, or a background one.
func ctxOf(ctx *sql.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx.Context
}
