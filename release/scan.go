package release

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/dpsql/dpsql/release/sealed"
)

// Expr is one of the analyst's expressions of a release, with the part of
// the statement it comes from (for errors: "WHERE clause", "selected
// columns", "DP_SET_UNION item").
type Expr struct {
	E     sql.Expression
	Where string
}

// Scan is a release's compiled scan of one protected table: the privacy
// unit column, an optional row filter and the keys (or items) of the
// release, all evaluated sealed.
type Scan struct {
	db, name string
	table    sql.Table
	prog     *sealed.Program // the privacy unit and the keys
	unit     int             // program index of the privacy unit
	// fprog is the filter, compiled as a program of its own (nil without
	// one): its row work is bounded apart from the keys' (see Run).
	fprog  *sealed.Program
	filter int // index of the filter among the scan's expressions (Spec); -1 without one
	keys   []int
	spec   string
	// For the release index (Indexed): the table as the provider served
	// it, the privacy-unit column, and per key the column it reads when
	// it is a plain column of an indexable type ("" otherwise); plain is
	// nil when the unit's type is not indexable.
	src     sql.Table
	unitCol string
	plain   []string
	// exprKey is, per key that is not a plain column, the canonical key
	// of the expression (indexExprKey) when its value has an indexable type
	// ("" otherwise), with keyExprs and lim to evaluate it again: the
	// release index of an expression (Indexed).
	exprKey  []string
	keyExprs []sql.Expression
	lim      sealed.Limits
	// unitFilter is the filter compiled alone over the table's full rows,
	// when it reads the privacy unit only (unitAt in those rows): the
	// release index evaluates it once per user (Indexed).
	unitFilter *sealed.Program
	unitAt     int
	// unitCmp, when not nil, is the unit filter as one comparison of a
	// BIGINT unit with a constant, which keepUsers evaluates natively
	// (unitcmp.go).
	unitCmp *unitCompare
	// pushFilter and pushKeys are the filter (nil without one) and the
	// keys as analysed (variables resolved, literals retyped), over the
	// table's full schema: a push-down release reads them (pushdown.go).
	pushFilter sql.Expression
	pushKeys   []sql.Expression
}

// NewScan compiles a scan of db.name (table, the table as its provider
// serves it) for a release. unitCol is the privacy-unit column; filter (may
// have a nil E) and keys are the analyst's expressions, whose column
// references index the table's full schema. Expressions the allow-list
// refuses, and constants that fail, are errors (MySQL 1142) returned before
// anything is charged.
func NewScan(ctx *sql.Context, db, name string, table sql.Table, unitCol string, filter Expr, keys []Expr, lim sealed.Limits) (*Scan, error) {
	// Variables become their values first: the specification, the keys of
	// expressions' indexes and their builds (in a sealed copy of the
	// session, without user variables) all see the constants this session
	// evaluates.
	var err error
	if filter.E, err = sealed.Resolve(ctx, filter.E); err != nil {
		return nil, ErrNotAllowed(db, name, filter.Where, err)
	}
	keys = slices.Clone(keys)
	for i := range keys {
		if keys[i].E, err = sealed.Resolve(ctx, keys[i].E); err != nil {
			return nil, ErrNotAllowed(db, name, keys[i].Where, err)
		}
	}
	// String literals compared with text columns take the column's type
	// (canonRewrite): MySQL's comparison, and one key for every
	// connection collation.
	if filter.E, err = canonRewrite(filter.E); err != nil {
		return nil, ErrNotAllowed(db, name, filter.Where, err)
	}
	for i := range keys {
		if keys[i].E, err = canonRewrite(keys[i].E); err != nil {
			return nil, ErrNotAllowed(db, name, keys[i].Where, err)
		}
	}
	sch := table.Schema()
	ui := sch.IndexOfColName(unitCol)
	if ui < 0 {
		return nil, fmt.Errorf("protected table %s.%s has no privacy-unit column %q", db, name, unitCol)
	}
	uc := sch[ui]
	all := []Expr{{E: expression.NewGetFieldWithTable(ui, 0, uc.Type, db, name, uc.Name, uc.Nullable), Where: "privacy unit"}}
	s := &Scan{db: db, name: name, unit: 0, filter: -1, src: table, unitCol: uc.Name, pushFilter: filter.E}
	for _, k := range keys {
		s.pushKeys = append(s.pushKeys, k.E)
	}
	if indexable(uc.Type) {
		s.plain = make([]string, len(keys))
		s.exprKey = make([]string, len(keys))
		s.keyExprs = make([]sql.Expression, len(keys))
		s.lim = lim
		for i, k := range keys {
			s.keyExprs[i] = k.E
			if gf, ok := k.E.(*expression.GetField); ok && gf.Index() >= 0 && gf.Index() < len(sch) && indexable(sch[gf.Index()].Type) {
				s.plain[i] = sch[gf.Index()].Name
			} else if key, ok := indexExprKey(ctx, k.E, lim); ok && indexable(k.E.Type()) && deterministic(k.E) {
				s.exprKey[i] = key
			}
		}
	}
	if filter.E != nil {
		s.filter = len(all)
		all = append(all, filter)
		if s.plain != nil && unitValueType(uc.Type) && readsOnly(filter.E, ui) {
			if p, err := sealed.Compile(ctx, []sql.Expression{filter.E}, len(sch), lim); err == nil {
				s.unitFilter, s.unitAt = p, ui
				probe := make(sql.Row, len(sch))
				probe[ui] = int64(0) // every BIGINT unit has this row's work
				if c, ok := compileUnitCompare(filter.E, ui, uc.Type); ok && p.ScalarWorkFits(probe) {
					s.unitCmp = c
				}
			}
		}
	}
	for _, k := range keys {
		s.keys = append(s.keys, len(all))
		all = append(all, k)
	}
	// Each expression alone first, so that an error names its place.
	for _, e := range all {
		if _, err := sealed.Compile(ctx, []sql.Expression{e.E}, len(sch), lim); err != nil {
			return nil, ErrNotAllowed(db, name, e.Where, err)
		}
	}
	s.spec = scanSpec(ctx, db, name, all, s.filter, lim)
	table, exprs, ncols, err := project(table, all)
	if err != nil {
		return nil, err
	}
	s.table = table
	// The operators of all expressions together stay within
	// Limits.MaxNodes, as when they were one program.
	if _, err := sealed.Compile(ctx, exprs, ncols, lim); err != nil {
		return nil, ErrNotAllowed(db, name, "release", err)
	}
	if s.filter >= 0 {
		// The filter is a program of its own, bounded on its own: the
		// keys' program is the same with or without it, so an index of
		// the keys built without a filter holds exactly the pairs the
		// filtered scan keeps of the users it keeps (Indexed).
		if s.fprog, err = sealed.Compile(ctx, exprs[s.filter:s.filter+1], ncols, lim); err != nil {
			return nil, ErrNotAllowed(db, name, filter.Where, err)
		}
		exprs = slices.Delete(slices.Clone(exprs), s.filter, s.filter+1)
		for i := range s.keys {
			s.keys[i]--
		}
	}
	s.prog, err = sealed.Compile(ctx, exprs, ncols, lim)
	if err != nil {
		return nil, ErrNotAllowed(db, name, "release", err)
	}
	return s, nil
}

// project narrows the table to the columns the expressions read, when its
// provider can, and rebinds the column references to the narrowed rows.
func project(table sql.Table, all []Expr) (sql.Table, []sql.Expression, int, error) {
	sch := table.Schema()
	exprs := make([]sql.Expression, len(all))
	for i, e := range all {
		exprs[i] = e.E
	}
	pt, ok := table.(sql.ProjectedTable)
	if !ok {
		return table, exprs, len(sch), nil
	}
	used := map[int]bool{}
	for _, e := range exprs {
		transform.InspectExpr(e, func(e sql.Expression) bool {
			if gf, ok := e.(*expression.GetField); ok {
				used[gf.Index()] = true
			}
			return false
		})
	}
	var cols []int
	for i := range used {
		cols = append(cols, i)
	}
	slices.Sort(cols)
	names := make([]string, len(cols))
	newIdx := map[int]int{}
	for j, i := range cols {
		names[j] = sch[i].Name
		newIdx[i] = j
	}
	narrowed := pt.WithProjections(names)
	// The provider must return the columns in the order asked.
	nsch := narrowed.Schema()
	if len(nsch) != len(names) {
		return table, exprs, len(sch), nil
	}
	for j, n := range names {
		if !strings.EqualFold(nsch[j].Name, n) {
			return table, exprs, len(sch), nil
		}
	}
	for k, e := range exprs {
		ne, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
			gf, ok := e.(*expression.GetField)
			if !ok {
				return e, transform.SameTree, nil
			}
			return gf.WithIndex(newIdx[gf.Index()]), transform.NewTree, nil
		})
		if err != nil {
			return nil, nil, 0, err
		}
		exprs[k] = ne
	}
	return narrowed, exprs, len(names), nil
}

// Spec returns the canonical description of what the scan reads and how
// (see "Canonical keys"): the table, the privacy unit, the filter and the
// keys (their canonical encodings, which include the public tables they
// read through lookups and those tables' versions), the evaluation limits,
// and the values of the session variables and the date their evaluation
// reads. Two scans with the same Spec read the same rows into the same
// (unit, keys) pairs, as long as the table's data is the same (the
// governor adds its version). It is empty when an expression cannot be
// encoded (the release is then never reused).
func (s *Scan) Spec() string { return s.spec }

func scanSpec(ctx *sql.Context, db, name string, all []Expr, filter int, lim sealed.Limits) string {
	b := canonParts([]byte("scan 2"), []byte(strings.ToLower(db)), []byte(strings.ToLower(name)),
		[]byte(fmt.Sprintf("limits=%+v filter=%d", lim, filter)))
	var deps canonDeps
	for _, e := range all {
		k, d, err := exprKey(ctx, e.E)
		if err != nil {
			return ""
		}
		b = canonParts(b, k)
		deps = deps.or(d)
	}
	return string(canonParts(b, depsKey(nil, ctx, deps)))
}

// indexExprKey is the key of an expression's release index (see
// "Canonical keys"): its canonical encoding, the limits it is evaluated
// under, and the values of the session variables and the date its
// evaluation reads.
func indexExprKey(ctx *sql.Context, e sql.Expression, lim sealed.Limits) (string, bool) {
	k, d, err := exprKey(ctx, e)
	if err != nil {
		return "", false
	}
	return string(canonParts(nil, k, []byte(fmt.Sprintf("limits=%+v", lim)), depsKey(nil, ctx, d))), true
}

// Keys returns the number of keys of the scan.
func (s *Scan) Keys() int { return len(s.keys) }

// KeyType returns the type of key i.
func (s *Scan) KeyType(i int) sql.Type { return s.prog.Type(s.keys[i]) }

// Row is the sealed view of one row that passed the filter: its privacy
// unit's text and its keys. It is valid during the sink call only.
type Row struct {
	ev      *sealed.Evaluator
	s       *Scan
	unit    []byte
	texters []*Texter
}

// Unit returns the MySQL text of the row's privacy unit (never empty).
func (r *Row) Unit() []byte { return r.unit }

// Key returns the value of key i; ok is false when its evaluation failed
// (a NULL key is ok with a nil value).
func (r *Row) Key(i int) (v any, ok bool) { return r.ev.Value(r.s.keys[i]) }

// KeyText returns the MySQL text of key i (valid until the next call for
// the same key), or ok = false when it is NULL or failed.
func (r *Row) KeyText(i int) (b []byte, ok bool) {
	v, ok := r.Key(i)
	if !ok || v == nil {
		return nil, false
	}
	s, b := r.texters[i].Text(r.ev.Context(), v)
	if b == nil {
		b = []byte(s)
	}
	return b, true
}

// Context returns the sealed context of the scan, for conversions of the
// row's values.
func (r *Row) Context() *sql.Context { return r.ev.Context() }

// Run reads every row of the table under a release context, evaluates the
// programs sealed, and calls sink with every row that passes the filter and
// whose privacy unit is neither NULL nor empty. Rows whose evaluation fails
// or panics are skipped. It checks ctx for cancellation every few hundred
// rows; errors are those of the table's iterator and of cancellation, never
// of the evaluation.
//
// The filter and the keys are two programs, each evaluated on every row
// (eagerly: a filtered-out row costs the keys' work too) and each within
// Limits.MaxRowWork: a row is kept when the filter's program stays within
// the bound and gives true, and the keys' program stays within the bound.
// So whether a row's keys are kept does not depend on the filter's work,
// nor whether its filter passes on the keys' work.
func (s *Scan) Run(ctx *sql.Context, sink func(*Row)) error {
	var fev *sealed.Evaluator
	if s.fprog != nil {
		fev = s.fprog.NewEvaluator(ctx)
	}
	return scanTable(Context(ctx), s.table, s.visitor(ctx, fev, sink))
}

// visitor returns the function Run and readParts call on each table row:
// it evaluates the filter's program fev (nil: no filter) and the keys'
// program, both on every row, and calls sink with the rows kept, a Row
// reused from call to call.
func (s *Scan) visitor(ctx *sql.Context, fev *sealed.Evaluator, sink func(*Row)) func(sql.Row) {
	ev := s.prog.NewEvaluator(ctx)
	sctx := ev.Context()
	r := &Row{ev: ev, s: s, texters: make([]*Texter, len(s.keys))}
	for i, k := range s.keys {
		r.texters[i] = NewTexter(s.prog.Type(k))
	}
	unitText := NewTexter(s.prog.Type(s.unit))
	var ubuf []byte
	return func(row sql.Row) {
		defer func() { _ = recover() }() // a panic skips the row
		pass := fev == nil || fev.Row(row)
		if !ev.Row(row) || !pass {
			return
		}
		if fev != nil {
			v, ok := fev.Value(0)
			if !ok || v == nil {
				return
			}
			b, err := sql.ConvertToBool(fev.Context(), v)
			if err != nil || !b {
				return
			}
		}
		u, ok := ev.Value(s.unit)
		if !ok || u == nil {
			return
		}
		ubuf = unitText.Append(sctx, ubuf[:0], u)
		if len(ubuf) == 0 {
			return
		}
		r.unit = ubuf
		sink(r)
	}
}

// checkRows is how many rows (or users, or values) a release evaluates
// between two looks at its context. Each evaluation may do up to
// limits.release_row_work of work per program (1 MiB by default), so a
// cancelled release (KILL, max_execution_time, a client that left) stops
// within checkRows rows' work: with 256, the load test's abandoned slow
// release (about 800 KB of work a row) ran on for about 10 s at load
// average 20 before its next look. A look costs a few nanoseconds.
const checkRows = 16

// scanTable calls fn for every row of table, checking ctx for cancellation
// every checkRows rows.
func scanTable(ctx *sql.Context, table sql.Table, fn func(sql.Row)) error {
	parts, err := table.Partitions(ctx)
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
		if err := scanPartition(ctx, table, p, &n, fn); err != nil {
			return err
		}
	}
}

// scanPartition calls fn for every row of partition p of table, checking
// ctx for cancellation every checkRows rows counted in *n across
// partitions.
func scanPartition(ctx *sql.Context, table sql.Table, p sql.Partition, n *int, fn func(sql.Row)) error {
	rows, err := table.PartitionRows(ctx, p)
	if err != nil {
		return err
	}
	for {
		if *n++; *n%checkRows == 0 {
			if err := ctx.Err(); err != nil {
				rows.Close(ctx)
				return err
			}
		}
		row, err := rows.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			rows.Close(ctx)
			return err
		}
		fn(row)
	}
	return rows.Close(ctx)
}
