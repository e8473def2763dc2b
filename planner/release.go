package planner

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Release is the plan node of a private release over one protected table:
// what the analyst rules make of SELECT DISTINCT, GROUP BY and DP_SET_UNION
// queries. It is a leaf (the table is held inside it, invisible to the
// rules that run after the rewrite) and an sql.ExecSourceRel: at execution
// it charges the release to the analyst's budget, scans the table, and
// returns only released keys.
//
// The scan evaluates the row filter, the keys and the privacy unit itself,
// so that no error raised by an expression over a protected row reaches the
// client (an error would leak whether some row satisfies a condition): a
// row whose filter, key or privacy unit fails to evaluate is skipped, as if
// filtered out. Every row-wise filter keeps the release differentially
// private, because it is applied to each row independently of the others.
type Release struct {
	mode   releaseMode
	db     string
	table  sql.Table // the underlying table, full schema
	filter sql.Expression
	unit   sql.Expression
	// Distinct rows: the key expressions, and per output column the index
	// of its key.
	keys []sql.Expression
	out  []int
	opts setunion.Options
	// DP_SET_UNION: the bound calls, their items rebound to table rows.
	calls []*functions.SetUnion
	items []sql.Expression

	schema sql.Schema
	gov    functions.Governor
	rnd    func() *rand.Rand

	// done keeps the released rows once computed: a node executed again
	// within its query (the inner side of a nested-loop join, for one)
	// returns the same release instead of making and charging another.
	done *releaseResult
}

type releaseResult struct {
	mu   sync.Mutex
	rows []sql.Row
	ok   bool
}

type releaseMode int

const (
	distinctRows releaseMode = iota // SELECT DISTINCT / GROUP BY: one row per released key
	setUnions                       // DP_SET_UNION calls: one row of JSON arrays
)

var (
	_ sql.Node          = (*Release)(nil)
	_ sql.ExecSourceRel = (*Release)(nil)
)

// Resolved implements sql.Node.
func (r *Release) Resolved() bool { return true }

// IsReadOnly implements sql.Node.
func (r *Release) IsReadOnly() bool { return true }

// Schema implements sql.Node: the schema of the node it replaced.
func (r *Release) Schema() sql.Schema { return r.schema }

// Children implements sql.Node: none; the table is part of the release.
func (r *Release) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (r *Release) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(r, len(children), 0)
	}
	return r, nil
}

// String implements sql.Node (EXPLAIN shows it; it names no data).
func (r *Release) String() string {
	what := "SELECT DISTINCT"
	if r.mode == setUnions {
		what = "DP_SET_UNION"
	}
	var mechs []string
	for _, o := range r.options() {
		mechs = append(mechs, fmt.Sprintf("%s ε=%g δ=%g", o.Mechanism, o.Epsilon, o.Delta))
	}
	return fmt.Sprintf("PrivateRelease(%s over %s.%s: %s)", what, r.db, r.table.Name(), strings.Join(mechs, "; "))
}

// options returns the options of each release the node makes.
func (r *Release) options() []setunion.Options {
	if r.mode == distinctRows {
		return []setunion.Options{r.opts}
	}
	out := make([]setunion.Options, len(r.calls))
	for i, c := range r.calls {
		out[i] = *c.Options()
	}
	return out
}

// releases describes the node's releases for the ledger.
func (r *Release) releases(ctx *sql.Context) []functions.Release {
	fn := "SELECT DISTINCT"
	if r.mode == setUnions {
		fn = strings.ToUpper(functions.SetUnionName)
	}
	var out []functions.Release
	for _, o := range r.options() {
		out = append(out, functions.Release{
			Function: fn, Database: r.db, Table: r.table.Name(),
			Epsilon: o.Epsilon, Delta: o.Delta, Mechanism: string(o.Mechanism), Query: ctx.Query(),
		})
	}
	return out
}

// RowIter implements sql.ExecSourceRel. It charges every release of the
// node before reading a row; a refused charge returns its error and nothing
// else.
func (r *Release) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	r.done.mu.Lock()
	defer r.done.mu.Unlock()
	if !r.done.ok {
		rows, err := r.run(ctx)
		if err != nil {
			return nil, err
		}
		r.done.rows, r.done.ok = rows, true
	}
	out := make([]sql.Row, len(r.done.rows))
	for i, row := range r.done.rows {
		out[i] = row.Copy()
	}
	return sql.RowsToRowIter(out...), nil
}

// run makes the release: charge, scan, release.
func (r *Release) run(ctx *sql.Context) ([]sql.Row, error) {
	for _, rel := range r.releases(ctx) {
		if err := r.gov.Charge(ctx, rel); err != nil {
			return nil, err
		}
	}
	builders := make([]*setunion.Builder, len(r.options()))
	for i, o := range r.options() {
		b, err := setunion.NewBuilder(o)
		if err != nil {
			return nil, err
		}
		builders[i] = b
	}
	// Distinct rows: encoded key → key values, except for a single text key
	// whose encoding is the value itself (the common case, kept out of the
	// map to save a lookup per row).
	first := map[string]sql.Row{}
	unitText := functions.NewTexter(r.unit.Type())
	itemTexts := make([]*functions.Texter, len(r.items))
	for i, e := range r.items {
		itemTexts[i] = functions.NewTexter(e.Type())
	}
	var ubuf, kbuf []byte
	keyVals := make(sql.Row, len(r.keys))
	enc := newKeyEncoder(r.keys)
	err := r.scan(functions.ReleaseContext(ctx), func(row sql.Row) {
		if r.filter != nil {
			ok, err := sql.EvaluateCondition(ctx, r.filter, row)
			if err != nil || !sql.IsTrue(ok) {
				return
			}
		}
		u, err := r.unit.Eval(ctx, row)
		if err != nil || u == nil {
			return
		}
		ubuf = unitText.Append(ctx, ubuf[:0], u)
		if len(ubuf) == 0 {
			return
		}
		if r.mode == setUnions {
			for i, e := range r.items {
				v, err := e.Eval(ctx, row)
				if err != nil || v == nil {
					continue
				}
				kbuf = itemTexts[i].Append(ctx, kbuf[:0], v)
				builders[i].AddBytes(ubuf, kbuf)
			}
			return
		}
		for i, k := range r.keys {
			v, err := k.Eval(ctx, row)
			if err != nil {
				return
			}
			keyVals[i] = v
		}
		var raw bool
		kbuf, raw = enc.encode(ctx, kbuf[:0], keyVals)
		if !raw {
			if _, seen := first[string(kbuf)]; !seen {
				first[string(kbuf)] = append(sql.Row(nil), keyVals...)
			}
		}
		builders[0].AddBytes(ubuf, kbuf)
	})
	if err != nil {
		return nil, err
	}
	rng := r.rnd
	if rng == nil {
		rng = securerand.New
	}
	if r.mode == setUnions {
		row := make(sql.Row, len(builders))
		for i, b := range builders {
			items := b.Release(rng()).Items
			arr := make([]any, len(items))
			for j, s := range items {
				arr[j] = s
			}
			row[i] = types.JSONDocument{Val: arr}
		}
		return []sql.Row{row}, nil
	}
	released := builders[0].Release(rng()).Items // sorted by encoded key
	rows := make([]sql.Row, 0, len(released))
	for _, k := range released {
		vals, ok := first[k]
		if !ok { // a single text key, encoded as itself
			vals = sql.Row{k}
		}
		row := make(sql.Row, len(r.out))
		for i, ki := range r.out {
			row[i] = vals[ki]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// keyEncoder encodes key tuples injectively: a single text value as it is
// (unless it starts with a byte ≤ 0x01); otherwise, per value, 0x00 for NULL
// or 0x01, the length and the MySQL text of the value. Values of one column
// share a type, so their texts are unique within the column.
type keyEncoder struct {
	texts []*functions.Texter
	tmp   []byte
}

func newKeyEncoder(keys []sql.Expression) *keyEncoder {
	e := &keyEncoder{texts: make([]*functions.Texter, len(keys))}
	for i, k := range keys {
		e.texts[i] = functions.NewTexter(k.Type())
	}
	return e
}

// encode appends the encoding of vals to dst; raw reports that it is the
// single text value itself.
func (e *keyEncoder) encode(ctx *sql.Context, dst []byte, vals sql.Row) (_ []byte, raw bool) {
	if len(vals) == 1 {
		if s, ok := vals[0].(string); ok && (len(s) == 0 || s[0] > 1) {
			return append(dst, s...), true
		}
	}
	for i, v := range vals {
		if v == nil {
			dst = append(dst, 0)
			continue
		}
		e.tmp = e.texts[i].Append(ctx, e.tmp[:0], v)
		dst = append(dst, 1)
		dst = binary.AppendUvarint(dst, uint64(len(e.tmp)))
		dst = append(dst, e.tmp...)
	}
	return dst, false
}

// scan calls fn for every row of the table, checking for cancellation.
func (r *Release) scan(ctx *sql.Context, fn func(sql.Row)) error {
	parts, err := r.table.Partitions(ctx)
	if err != nil {
		return err
	}
	defer parts.Close(ctx)
	n := 0
	for {
		p, err := parts.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := r.table.PartitionRows(ctx, p)
		if err != nil {
			return err
		}
		for {
			row, err := rows.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				rows.Close(ctx)
				return err
			}
			fn(row)
			if n++; n&4095 == 0 {
				if err := ctx.Err(); err != nil {
					rows.Close(ctx)
					return err
				}
			}
		}
		if err := rows.Close(ctx); err != nil {
			return err
		}
	}
}
