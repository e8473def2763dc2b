package planner

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/explain"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Release is the plan node of a private release over one protected table:
// what the analyst rules make of SELECT DISTINCT, GROUP BY and DP_SET_UNION
// queries. It is a leaf (the table is held inside its release.Scan,
// invisible to the rules that run after the rewrite) and an
// sql.ExecSourceRel: at execution it charges the release to the analyst's
// budget, runs the sealed scan, and returns only released keys.
//
// The released rows are a function of the released keys alone: a key's
// columns are decoded from its MySQL text (the form the mechanism
// released), never taken from a protected row.
type Release struct {
	mode releaseMode
	db   string
	name string // table name
	scan *release.Scan
	// Distinct rows: per output column, the index of its key.
	out  []int
	opts setunion.Options
	// DP_SET_UNION: the bound calls, one per item key of the scan.
	calls []*functions.SetUnion
	// GROUP BY with DP aggregates: the first groupKeys scan keys are the
	// group keys; aggValue gives, per aggregate, the scan key of its value
	// (-1: none). Output columns with out[i] ≥ groupKeys are aggregates.
	groupKeys int
	aggOpts   dpagg.Options
	aggPlan   *dpagg.Plan
	aggValue  []int
	// intervals marks, per output column, DP_INTERVAL_LOW (−1) or
	// DP_INTERVAL_HIGH (+1) of its aggregate; nil or 0: the value itself.
	intervals []int8
	// selection is the key selection's calibration of the release made,
	// with the privately chosen Δ0 (nil before, or for a reused release).
	selection *setunion.Calibration

	schema  sql.Schema
	outputs []sql.Expression // one column reference per output column, with its id
	gov     release.Governor
	rnd     func() *rand.Rand
	indexes *release.Indexes // nil: always scan
	push    *pushPlan        // a push-down release (pushdown.go); nil: scan

	// publics are the public sides of the release's lookups (public.go),
	// read before anything is charged.
	publics []*release.Public
	// pubKeys is the public key set of a GROUP BY over public keys
	// (publickeys.go), or nil.
	pubKeys *publicKeys
	// labels name the output columns after the SELECT list they appear in
	// (explain.go), or nil.
	labels [][]outputLabel

	// origins say where the options came from (defaults.go), for DP_EXPLAIN.
	origins []explain.Fact

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
	distinctRows  releaseMode = iota // SELECT DISTINCT / GROUP BY: one row per released key
	setUnions                        // DP_SET_UNION calls: one row of JSON arrays
	aggregateRows                    // GROUP BY with aggregates: one row per released key, with noisy aggregates
)

var (
	_ sql.Node          = (*Release)(nil)
	_ sql.ExecSourceRel = (*Release)(nil)
	_ sql.Projector     = (*Release)(nil)
)

// ProjectedExprs implements sql.Projector: the release's output columns,
// with the column ids of the expressions they replaced. Being a projector
// also makes go-mysql-server prepend the outer scope's row to its rows in a
// subquery, as it does for tables.
func (r *Release) ProjectedExprs() []sql.Expression { return r.outputs }

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
	switch r.mode {
	case setUnions:
		what = "DP_SET_UNION"
	case aggregateRows:
		fn, mech := r.aggregateNames()
		return fmt.Sprintf("PrivateRelease(%s over %s.%s: selection %s, ε=%g δ=%g)",
			fn, r.db, r.name, mech, r.aggOpts.Epsilon, r.aggOpts.Delta)
	}
	var mechs []string
	for _, o := range r.options() {
		mechs = append(mechs, fmt.Sprintf("%s ε=%g δ=%g", o.Mechanism, o.Epsilon, o.Delta))
	}
	return fmt.Sprintf("PrivateRelease(%s over %s.%s: %s)", what, r.db, r.name, strings.Join(mechs, "; "))
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

// requests describes the node's releases for the ledger; they share the
// node's reuse key.
func (r *Release) requests(ctx *sql.Context) []release.Request {
	key := release.ReuseKey{Spec: r.reuseSpec(), Fresh: !dpvars.SessionReuse(ctx)}
	fn := "SELECT DISTINCT"
	switch r.mode {
	case setUnions:
		fn = strings.ToUpper(functions.SetUnionName)
	case aggregateRows:
		cost, _ := accounting.Aggregates(r.aggPlan)
		fn, mech := r.aggregateNames()
		return []release.Request{{
			Function: fn, Database: r.db, Table: r.name,
			Epsilon: r.aggOpts.Epsilon, Delta: r.aggOpts.Delta, Mechanism: mech,
			Query: ctx.Query(), Cost: cost, Reuse: key,
		}}
	}
	var out []release.Request
	for _, o := range r.options() {
		// Options were validated; a cost that cannot be computed falls
		// back to basic composition (Request.LedgerCost).
		cost, _ := accounting.SetUnionOptions(o)
		out = append(out, release.Request{
			Function: fn, Database: r.db, Table: r.name,
			Epsilon: o.Epsilon, Delta: o.Delta, Mechanism: string(o.Mechanism), Query: ctx.Query(),
			Cost: cost, Reuse: key,
		})
	}
	return out
}

// reuseSpec is the node's release specification for reuse: the mode, the
// scan's Spec (table, filter, keys, evaluation settings) and the
// mechanism's options in full; not the output mapping nor anything above
// the node (ORDER BY, LIMIT, projections), which only post-process the
// released set. "" (never reused) when a part cannot be described.
func (r *Release) reuseSpec() string {
	if r.scan == nil || r.scan.Spec() == "" {
		return ""
	}
	var opts any
	switch r.mode {
	case aggregateRows:
		opts = struct {
			Options   dpagg.Options
			GroupKeys int
			Values    []int
		}{r.aggOpts, r.groupKeys, r.aggValue}
	default:
		opts = canonicalSetUnion(r.options()) // reusecanon.go
	}
	o, err := json.Marshal(opts)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("release mode=%d %s options=%s", r.mode, r.scan.Spec(), o)
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

// fromIndexes replaces the builders by builders holding the grouped pairs
// of the release index when every key of the release can be read from
// one, and reports whether it did; otherwise the builders are left empty
// for the scan.
func (r *Release) fromIndexes(ctx *sql.Context, opts []setunion.Options, builders []*setunion.Builder) bool {
	if r.indexes == nil || len(r.publics) > 0 || (r.mode == distinctRows && r.scan.Keys() != 1) {
		return false // public lookups take part in the filter and keys: scan
	}
	view := release.DistinctView
	if r.mode == setUnions {
		view = release.ValueView
	}
	prepared := make([]*setunion.Prepared, len(builders))
	for i := range builders {
		p, ok := r.scan.IndexedPairs(ctx, r.indexes, i, view)
		if !ok {
			return false
		}
		prepared[i] = p
	}
	made := make([]*setunion.Builder, len(prepared))
	for i, p := range prepared {
		b, err := setunion.NewPreparedBuilder(opts[i], p)
		if err != nil {
			return false // the options passed NewBuilder: a malformed index, which scanning avoids
		}
		made[i] = b
	}
	copy(builders, made)
	return true
}

// unitCache remembers the builder's id of the last privacy unit added:
// consecutive rows mostly share their unit (a user's rows are stored
// together), and comparing the bytes costs less than interning them again.
// The builder sees the same pairs in the same order either way.
type unitCache struct {
	last  []byte
	uid   uint32
	valid bool
}

// id returns b's id of unit (never empty: the scan skips empty units).
func (c *unitCache) id(b *setunion.Builder, unit []byte) uint32 {
	if c.valid && bytes.Equal(unit, c.last) {
		return c.uid
	}
	c.uid, c.valid = b.UserID(unit)
	c.last = append(c.last[:0], unit...)
	return c.uid
}

// aggregateRows builds one row per released key: the key decoded from its
// text, the aggregates converted to the columns' types.
func (r *Release) aggregateRows(ctx *sql.Context, released []release.ReleasedRow) ([]sql.Row, error) {
	rows := make([]sql.Row, 0, len(released))
	keys := make(sql.Row, r.groupKeys)
	for _, rr := range released {
		if err := decodeKey(ctx, r.scan, r.groupKeys, rr.Key, keys); err != nil {
			return nil, err
		}
		row := make(sql.Row, len(r.out))
		for i, ki := range r.out {
			if ki < 0 {
				continue // a hidden column, NULL
			}
			if ki < r.groupKeys {
				row[i] = keys[ki]
				continue
			}
			if r.isInterval(i) {
				row[i] = r.intervalValue(i, ki-r.groupKeys, rr.Values) // interval.go
				continue
			}
			if k := r.aggOpts.Aggregates[ki-r.groupKeys].Kind; k == dpagg.Avg || k.NeedsBounds() && k != dpagg.Sum {
				row[i] = rr.Values[ki-r.groupKeys] // a mean or a spread is a DOUBLE, whatever its argument's type
				continue
			}
			row[i] = aggregateValue(ctx, r.schema[i].Type, rr.Values[ki-r.groupKeys])
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// aggregateValue converts a released aggregate to its column's type (a
// count to an integer, a sum to the sum's decimal or float type).
func aggregateValue(ctx *sql.Context, t sql.Type, x float64) any {
	if types.IsInteger(t) {
		return int64(math.Round(x))
	}
	if v, _, err := t.Convert(ctx, x); err == nil {
		return v
	}
	return x
}

// keyEncoder encodes key tuples injectively: a single text value as it is
// (unless it starts with a byte ≤ 0x01); otherwise, per value, 0x00 for NULL
// or 0x01, the length and the MySQL text of the value. Values of one column
// share a type, so their texts are unique within the column.
type keyEncoder struct{ n int }

// encode appends the encoding of the row's keys to dst; ok is false when a
// key failed to evaluate (the row is skipped).
func (e keyEncoder) encode(dst []byte, row *release.Row) (_ []byte, ok bool) {
	// The first e.n keys of the row are the ones encoded.
	if e.n == 1 {
		if v, ok := row.Key(0); !ok {
			return dst, false
		} else if s, isStr := v.(string); isStr && (len(s) == 0 || s[0] > 1) {
			return append(dst, s...), true
		}
	}
	for i := range e.n {
		v, ok := row.Key(i)
		if !ok {
			return dst, false
		}
		if v == nil {
			dst = append(dst, 0)
			continue
		}
		t, _ := row.KeyText(i)
		dst = append(dst, 1)
		dst = binary.AppendUvarint(dst, uint64(len(t)))
		dst = append(dst, t...)
	}
	return dst, true
}

// decodeKey fills keys with the values of the encoded key k: each key's
// MySQL text converted back to the key's type (NULL for 0x00). The values
// depend on the released key only.
func decodeKey(ctx *sql.Context, scan *release.Scan, n int, k string, keys sql.Row) error {
	if n == 1 && (len(k) == 0 || k[0] > 1) {
		keys[0] = fromText(ctx, scan.KeyType(0), k)
		return nil
	}
	for i := range n {
		if len(k) == 0 {
			return fmt.Errorf("private release: malformed key")
		}
		if k[0] == 0 {
			keys[i] = nil
			k = k[1:]
			continue
		}
		l, w := binary.Uvarint([]byte(k[1:]))
		if w <= 0 || uint64(len(k)-1-w) < l {
			return fmt.Errorf("private release: malformed key")
		}
		keys[i] = fromText(ctx, scan.KeyType(i), k[1+w:1+w+int(l)])
		k = k[1+w+int(l):]
	}
	return nil
}

// fromText converts a key's MySQL text back to a value of its type (the
// text itself when the type does not take it back).
func fromText(ctx *sql.Context, t sql.Type, s string) any {
	if types.IsText(t) {
		return s
	}
	if v, _, err := t.Convert(ctx, s); err == nil {
		return v
	}
	return s
}
