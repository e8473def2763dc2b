package planner

// Push-down releases: a release over a table whose rows stay in its
// database (mode: pushdown) asks the database for its grouped
// contributions — per privacy unit, the distinct keys (and aggregated
// values) of the rows that pass the filter, with how many rows hold each —
// and feeds them to the same mechanism, in the same order of first
// occurrence, as a scan of the same rows in that order would: the
// builder's and the pipeline's state, hence the release for a given random
// source, are the same (setunion.Builder.AddIDCount and
// dpagg.Pipeline.AddRows add a group's rows at once, exactly as its rows
// one by one). docs/privacy.md (push-down section) argues the privacy.
//
// Only plain columns and comparisons of plain columns with literals are
// supported: what the database computes is then exactly what dpsql's
// sealed evaluation would (the storage compares text byte for byte, as
// dpsql's binary collation does, and reads values as a load does). The
// planner refuses everything else (release.ErrPushdown) before anything
// is read or charged. The SQL is written by the storage from column names
// of the configured schema, with the literals bound as parameters: no text
// of the analyst reaches the database.
//
// Order of the charge (release.Run with Steps.ReadFirst). A push-down
// release first looks for a stored release to reuse (release.ReuseOrDefer,
// which charges nothing), then reads the source completely, then charges,
// then runs the mechanism. A
// source that fails charges nothing and gives the analyst a generic error
// (the source's message, which could quote a value, goes to the log). A
// read stopped by the analyst's own limits (max_execution_time, KILL, a
// client that left, the memory guard) is charged, as a release that scans
// is (it is charged before its scan): that charge must not depend on how
// long the source took, which depends on the data.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/pushdown"
	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// WithLog sets where the planner logs for the operator (a push-down
// source's errors, which never reach an analyst). Without it they are
// dropped.
func WithLog(logf func(format string, args ...any)) PolicyOption {
	return func(p *policy) { p.logf = logf }
}

// pushPlan is a push-down release's queries and the types of what they
// return.
type pushPlan struct {
	src pushdown.Source
	// qs has one query per builder (DISTINCT: one; DP_SET_UNION: one per
	// call) or, for aggregates, the one query.
	qs       []pushdown.Query
	unitType sql.Type
	// groupTypes[q][i] is the type of column i of query q's groups.
	groupTypes [][]sql.Type
	logf       func(format string, args ...any)
}

// planPushdown checks that r, a release over a push-down table, is of a
// supported shape and builds its queries; otherwise it returns
// release.ErrPushdown. It is called once r is complete (its aggregates
// set), before anything is read or charged.
func (r *Release) planPushdown(src pushdown.Source, logf func(string, ...any)) error {
	refuse := func(what string) error { return release.ErrPushdown(r.db, r.name, what) }
	if len(r.publics) > 0 {
		return refuse("a lookup of or join with a public table")
	}
	schema, unit, filter, keys := r.scan.PushdownParts()
	ui := schema.IndexOfColName(unit)
	if ui < 0 {
		return refuse("a table without its privacy-unit column")
	}
	pp := &pushPlan{src: src, unitType: schema[ui].Type, logf: logf}
	cols := make([]string, len(keys))
	for i, k := range keys {
		gf, ok := k.(*expression.GetField)
		if !ok || gf.Index() < 0 || gf.Index() >= len(schema) {
			return refuse(fmt.Sprintf("the expression %s (only plain columns are grouped)", k))
		}
		cols[i] = schema[gf.Index()].Name
	}
	var pred *pushdown.Pred
	if filter != nil {
		var err error
		if pred, err = toPred(schema, filter); err != nil {
			return refuse(fmt.Sprintf("the filter %s (%v)", filter, err))
		}
	}
	colType := func(name string) sql.Type { return schema[schema.IndexOfColName(name)].Type }
	add := func(group []string) {
		ts := make([]sql.Type, len(group))
		for i, c := range group {
			ts[i] = colType(c)
		}
		pp.qs = append(pp.qs, pushdown.Query{Unit: unit, Group: group, Filter: pred})
		pp.groupTypes = append(pp.groupTypes, ts)
	}
	switch r.mode {
	case setUnions:
		for _, c := range cols {
			add([]string{c})
		}
	default:
		add(cols)
	}
	for _, q := range pp.qs {
		if err := src.Check(q); err != nil {
			return refuse(err.Error())
		}
	}
	r.push = pp
	return nil
}

// toPred converts an analysed filter into a pushdown.Pred, or says why it
// cannot.
func toPred(schema sql.Schema, e sql.Expression) (*pushdown.Pred, error) {
	switch x := e.(type) {
	case *expression.And, *expression.Or:
		op := pushdown.And
		if _, ok := x.(*expression.Or); ok {
			op = pushdown.Or
		}
		p := &pushdown.Pred{Op: op}
		for _, c := range x.Children() {
			a, err := toPred(schema, c)
			if err != nil {
				return nil, err
			}
			p.Args = append(p.Args, a)
		}
		return p, nil
	case *expression.Not:
		a, err := toPred(schema, x.Child)
		if err != nil {
			return nil, err
		}
		return &pushdown.Pred{Op: pushdown.Not, Args: []*pushdown.Pred{a}}, nil
	case *expression.IsNull:
		c, _, err := plainColumn(schema, x.Child)
		if err != nil {
			return nil, err
		}
		return &pushdown.Pred{Op: pushdown.IsNull, Column: c}, nil
	case *expression.Between:
		lo, err := comparison(schema, ">=", x.Val, x.Lower)
		if err != nil {
			return nil, err
		}
		hi, err := comparison(schema, "<=", x.Val, x.Upper)
		if err != nil {
			return nil, err
		}
		return &pushdown.Pred{Op: pushdown.And, Args: []*pushdown.Pred{lo, hi}}, nil
	case *expression.InTuple:
		c, t, err := plainColumn(schema, x.Left())
		if err != nil {
			return nil, err
		}
		tup, ok := x.Right().(expression.Tuple)
		if !ok {
			return nil, errors.New("IN takes a list of literals")
		}
		p := &pushdown.Pred{Op: pushdown.In, Column: c}
		for _, item := range tup {
			v, err := literal(t, item)
			if err != nil {
				return nil, err
			}
			p.Values = append(p.Values, v)
		}
		return p, nil
	case *expression.Equals:
		return comparison(schema, "=", x.Left(), x.Right())
	case *expression.LessThan:
		return comparison(schema, "<", x.Left(), x.Right())
	case *expression.LessThanOrEqual:
		return comparison(schema, "<=", x.Left(), x.Right())
	case *expression.GreaterThan:
		return comparison(schema, ">", x.Left(), x.Right())
	case *expression.GreaterThanOrEqual:
		return comparison(schema, ">=", x.Left(), x.Right())
	}
	return nil, fmt.Errorf("%s is not a comparison of a column with literals", e)
}

// flipped is the comparison with its operands swapped.
var flipped = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// comparison converts l op r, one side a plain column and the other a
// literal of its kind.
func comparison(schema sql.Schema, op string, l, r sql.Expression) (*pushdown.Pred, error) {
	if _, ok := l.(*expression.GetField); !ok {
		l, r, op = r, l, flipped[op]
	}
	c, t, err := plainColumn(schema, l)
	if err != nil {
		return nil, err
	}
	v, err := literal(t, r)
	if err != nil {
		return nil, err
	}
	return &pushdown.Pred{Op: pushdown.Cmp, Column: c, Comparison: op, Values: []any{v}}, nil
}

// plainColumn returns the column e reads when e is a plain column.
func plainColumn(schema sql.Schema, e sql.Expression) (string, sql.Type, error) {
	gf, ok := e.(*expression.GetField)
	if !ok || gf.Index() < 0 || gf.Index() >= len(schema) {
		return "", nil, fmt.Errorf("%s is not a plain column", e)
	}
	c := schema[gf.Index()]
	return c.Name, c.Type, nil
}

// literal returns e's value as a parameter compared with a column of type
// t: a string for a text column, an int64 for an integer one, a float64
// for a floating one. Other pairs (and NULL) are refused: their
// comparison in the database could differ from dpsql's.
func literal(t sql.Type, e sql.Expression) (any, error) {
	neg := false
	if m, ok := e.(*expression.UnaryMinus); ok {
		neg, e = true, m.Child
	}
	lit, ok := e.(*expression.Literal)
	if !ok {
		return nil, fmt.Errorf("%s is not a literal", e)
	}
	v := lit.Value()
	switch {
	case types.IsText(t):
		if s, ok := v.(string); ok && !neg {
			return s, nil
		}
		return nil, fmt.Errorf("a text column is compared with a string literal, not %s", e)
	case types.IsInteger(t), types.IsFloat(t):
		var f float64
		var i int64
		isInt := true
		switch x := v.(type) {
		case int8:
			i = int64(x)
		case int16:
			i = int64(x)
		case int32:
			i = int64(x)
		case int64:
			i = x
		case uint8:
			i = int64(x)
		case uint16:
			i = int64(x)
		case uint32:
			i = int64(x)
		case uint64:
			if x > 1<<63-1 {
				return nil, fmt.Errorf("%d is out of range", x)
			}
			i = int64(x)
		case float64:
			f, isInt = x, false
		case float32:
			f, isInt = float64(x), false
		case fmt.Stringer: // a DECIMAL literal (decimal.Decimal): 2.5, 1e3
			var err error
			if i, err = strconv.ParseInt(x.String(), 10, 64); err != nil {
				if f, err = strconv.ParseFloat(x.String(), 64); err != nil {
					return nil, fmt.Errorf("%s is not a number", e)
				}
				isInt = false
			}
		default:
			return nil, fmt.Errorf("a number column is compared with a number literal, not %s", e)
		}
		if neg {
			i, f = -i, -f
		}
		switch {
		case types.IsFloat(t) && isInt:
			return float64(i), nil
		case types.IsFloat(t):
			return f, nil
		case isInt:
			return i, nil
		}
		return nil, fmt.Errorf("an integer column is compared with an integer literal, not %s", e)
	}
	return nil, fmt.Errorf("columns of type %s cannot be compared in push-down mode", t)
}

// pushTexts turns a push-down row's values into the texts a scan gives:
// the unit's MySQL text and the keys' (release.Texter), with a context of
// their own so that no conversion's warning reaches the analyst.
type pushTexts struct {
	ctx   *sql.Context
	unit  *release.Texter
	keys  []*release.Texter
	ubuf  []byte
	kbufs [][]byte
}

func newPushTexts(unitType sql.Type, keyTypes []sql.Type) *pushTexts {
	t := &pushTexts{ctx: sql.NewEmptyContext(), unit: release.NewTexter(unitType), kbufs: make([][]byte, len(keyTypes))}
	for _, kt := range keyTypes {
		t.keys = append(t.keys, release.NewTexter(kt))
	}
	return t
}

// unitText returns the unit's text; empty (the row is skipped) for NULL
// or empty, as Scan.Run skips them.
func (t *pushTexts) unitText(v any) []byte {
	if v == nil {
		return nil
	}
	t.ubuf = t.unit.Append(t.ctx, t.ubuf[:0], v)
	return t.ubuf
}

// keyText returns key i's text (v not nil), as Row.KeyText.
func (t *pushTexts) keyText(i int, v any) []byte {
	t.kbufs[i] = t.keys[i].Append(t.ctx, t.kbufs[i][:0], v)
	return t.kbufs[i]
}

// encode appends the encoding of the first n group values to dst, as
// keyEncoder.encode does for a scanned row's keys.
func (t *pushTexts) encode(dst []byte, vals []any, n int) []byte {
	if n == 1 {
		if s, isStr := vals[0].(string); isStr && (len(s) == 0 || s[0] > 1) {
			return append(dst, s...)
		}
	}
	for i := range n {
		if vals[i] == nil {
			dst = append(dst, 0)
			continue
		}
		txt := t.keyText(i, vals[i])
		dst = append(dst, 1)
		dst = binary.AppendUvarint(dst, uint64(len(txt)))
		dst = append(dst, txt...)
	}
	return dst
}

// pushFailed is an error of the mechanism met while the source is read (a
// callback's): returned as it is, not as the source's.
type pushFailed struct{ err error }

func (e pushFailed) Error() string { return e.err.Error() }

// pushSourceFailed is what the analyst is told when the source failed (not
// stopped by the analyst's limits; release.Steps.ReadFailed): a
// callback's error (pushFailed) as it is, otherwise a generic error, the
// source's own message going to the operator's log. Nothing is charged.
func (r *Release) pushSourceFailed(err error) error {
	if failed := (pushFailed{}); errors.As(err, &failed) {
		return failed.err // the mechanism's own error, not the source's
	}
	if r.push.logf != nil {
		r.push.logf("ERROR push-down release on %s.%s failed, nothing charged: %v", r.db, r.name, err)
	}
	return release.ErrPushdownSource(r.db, r.name)
}

// pushSetsRead is readSets for a push-down release: the source's groups
// added to the builders with their row counts.
func (r *Release) pushSetsRead(builders []*setunion.Builder) func(*sql.Context) error {
	texts := make([]*pushTexts, len(builders))
	for i := range builders {
		texts[i] = newPushTexts(r.push.unitType, r.push.groupTypes[i])
	}
	var kbuf []byte
	add := func(qi int, row *pushdown.Row) error {
		t, b := texts[qi], builders[qi]
		unit := t.unitText(row.Unit)
		if len(unit) == 0 {
			return nil
		}
		var item []byte
		if r.mode == setUnions {
			if row.Group[0] == nil {
				return nil // a NULL item adds nothing
			}
			item = t.keyText(0, row.Group[0])
		} else {
			kbuf = t.encode(kbuf[:0], row.Group, len(row.Group))
			item = kbuf
		}
		uid, _ := b.UserID(unit)
		b.AddIDCount(uid, item, row.Count)
		return nil
	}
	return func(ctx *sql.Context) error { return r.push.src.Read(ctx, r.push.qs, add) }
}

// pushAggregateSteps are aggregateSteps' read and mechanism for a
// push-down release: the same passes as readAggregates (a first one when
// the clamping bounds are chosen privately), read from one snapshot of the
// source, and the same release.
func (r *Release) pushAggregateSteps(pipe *dpagg.Pipeline) (read func(*sql.Context) error, mechanism func(*sql.Context) (release.Released, error)) {
	rand := r.newRand()
	q := r.push.qs[0]
	qs := []pushdown.Query{q}
	twoPass := pipe.NeedsValuePass()
	if twoPass {
		qs = append(qs, q)
	}
	chosen := !twoPass
	choose := func() error {
		chosen = true
		if err := pipe.ChooseValueBounds(rand); err != nil {
			return pushFailed{err}
		}
		return nil
	}
	add := r.pushAggregateRow(pipe, twoPass)
	read = func(ctx *sql.Context) error {
		return r.push.src.Read(ctx, qs, func(qi int, row *pushdown.Row) error {
			if qi == 1 && !chosen {
				if err := choose(); err != nil {
					return err
				}
			}
			add(qi, row)
			return nil
		})
	}
	mechanism = func(ctx *sql.Context) (release.Released, error) {
		if !chosen {
			if err := choose(); err != nil {
				return release.Released{}, err
			}
		}
		// With the intervals, as the scan keeps them (interval.go).
		return r.releasePipe(ctx, pipe, rand, withIntervals)
	}
	return read, mechanism
}

// pushAggregateRow returns the function that adds one of the source's
// groups to pipe: to the value pass (query 0 of two) or to the release.
func (r *Release) pushAggregateRow(pipe *dpagg.Pipeline, twoPass bool) func(qi int, row *pushdown.Row) {
	t := newPushTexts(r.push.unitType, r.push.groupTypes[0])
	vals := make([]dpagg.Value, len(r.aggValue))
	var kbuf []byte
	return func(qi int, row *pushdown.Row) {
		unit := t.unitText(row.Unit)
		if len(unit) == 0 {
			return
		}
		for i, k := range r.aggValue {
			vals[i] = dpagg.Null
			if k < 0 || row.Group[k] == nil {
				continue
			}
			if r.aggOpts.Aggregates[i].Kind == dpagg.CountValues {
				vals[i] = dpagg.Float(0)
				continue
			}
			f, _, err := types.Float64.Convert(t.ctx, row.Group[k])
			if err != nil {
				return // the value failed: the row is skipped, as a scan skips it
			}
			if x, ok := f.(float64); ok {
				vals[i] = dpagg.Float(x)
			}
		}
		if twoPass && qi == 0 {
			_ = pipe.AddValuesRows(unit, vals, row.Count)
			return
		}
		kbuf = t.encode(kbuf[:0], row.Group, r.groupKeys)
		_ = pipe.AddRows(unit, kbuf, vals, row.Count)
	}
}
