package sealed

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"

	"github.com/dpsql/dpsql/gmsfix"
)

// Limits bound the evaluation of one row.
type Limits struct {
	// MaxValueBytes bounds every value an operator or function produces (a
	// string, a byte string, a JSON document): a larger one is a failure
	// of that call. It is also the session's max_allowed_packet inside the
	// evaluation, so that REPEAT-like functions return NULL rather than
	// build a larger value.
	MaxValueBytes int
	// MaxRowWork bounds the bytes all calls of a row read (each call's
	// arguments, counted once per call): a row beyond it is skipped.
	MaxRowWork int
	// MaxNodes bounds the operators and functions of all expressions of a
	// program.
	MaxNodes int
}

// DefaultLimits are the limits of a release unless configured: values of
// 64 KiB, 1 MiB of work per row, 256 operators and functions.
func DefaultLimits() Limits {
	return Limits{MaxValueBytes: 64 << 10, MaxRowWork: 1 << 20, MaxNodes: 256}
}

func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.MaxValueBytes <= 0 {
		l.MaxValueBytes = d.MaxValueBytes
	}
	if l.MaxRowWork <= 0 {
		l.MaxRowWork = d.MaxRowWork
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = d.MaxNodes
	}
	return l
}

// Program is a list of expressions over the rows of one table, compiled
// for sealed evaluation: cut into units evaluated bottom-up, one per
// operator or function call.
type Program struct {
	units []unit
	roots []int // per expression, the scratch index of its value
	types []sql.Type
	ncols int
	width int // columns + slots
	lim   Limits
	// cols are the columns the program reads; fixed is the work of its
	// constants, the same on every row (rowBudget).
	cols  []int
	fixed int
}

// unit is one call: a go-mysql-server expression whose arguments are
// columns of the row, constants, or slots holding the values of the units
// before it.
type unit struct {
	expr  sql.Expression
	out   int   // scratch index of its value
	reads []int // scratch indexes of the columns and slots it reads
	match *matchWork
	// fixed is the work of its constant arguments; repeat are the
	// indexes its operand reads, counted times more (work.go).
	fixed  int
	repeat []int
	times  int
	// grows marks a call whose result can be much larger than its
	// arguments (gmsfix.PreSized): its result is sized against the row's
	// budget before it is built, and its growth counts as work.
	grows bool
	// root marks a unit whose value is an expression of the program.
	root bool
}

// matchWork is the work of a matcher unit: the size of its string times
// cost(pattern). Each operand is a scratch index, or a constant (index -1).
type matchWork struct {
	text, pattern       int
	textConst, patConst any
	cost                func(string) int
	constCost           int // cost of a constant pattern
	// searches is the number of searches (≥ 1), or 0 for one per byte
	// of the text (every match of a regular expression).
	searches int
}

// work returns the unit's work on scratch s.
func (m *matchWork) work(s sql.Row, limit int) int {
	text := m.textConst
	if m.text >= 0 {
		text = s[m.text]
	}
	c := m.constCost
	if m.pattern >= 0 {
		p, _ := s[m.pattern].(string)
		c = m.cost(p)
	}
	n := size(text, limit)
	if c > 0 && n > limit/c {
		return limit + 1
	}
	w := n * c
	k := m.searches
	if k == 0 {
		k = n + 1
	}
	if w > 0 && k > limit/w {
		return limit + 1
	}
	return w * k
}

// failure is the scratch value of a call that failed (an error, or a value
// beyond the limit). A slot returns its error only when the calling
// function reads it, which keeps SQL's lazy semantics.
type failure struct{ err error }

var errTooLarge = errors.New("sealed evaluation: value larger than the limit of a private release")

// Compile checks exprs against the allow-list and compiles them for rows of
// ncols columns (column references must already index the table's rows).
// ctx is the analyst's context: user and system variables are read from it
// once, as constants, and constant subexpressions are evaluated once in a
// sealed session to check that they succeed and fit the limits. Errors
// are *NotAllowedError for what the allow-list refuses, or the error of a
// constant subexpression (it does not depend on the data).
func Compile(ctx *sql.Context, exprs []sql.Expression, ncols int, lim Limits) (*Program, error) {
	lim = lim.orDefault()
	p := &Program{ncols: ncols, width: ncols, lim: lim}
	c := &compiler{p: p, ctx: ctx}
	nodes := 0
	for _, e := range exprs {
		e, err := prepare(ctx, e, lim)
		if err != nil {
			return nil, err
		}
		n, err := check(e)
		if err != nil {
			return nil, err
		}
		if nodes += n; nodes > lim.MaxNodes {
			return nil, &NotAllowedError{Expr: fmt.Sprintf("an expression of %d operators and functions", nodes),
				Why: fmt.Sprintf("a release evaluates at most %d", lim.MaxNodes)}
		}
		if err := c.checkConstants(e); err != nil {
			return nil, err
		}
		p.roots = append(p.roots, c.root(e))
		p.types = append(p.types, e.Type())
	}
	if err := c.checkListWork(); err != nil {
		return nil, err
	}
	p.budgetInputs()
	return p, nil
}

// Len returns the number of expressions of p.
func (p *Program) Len() int { return len(p.roots) }

// Type returns the type of expression i.
func (p *Program) Type(i int) sql.Type { return p.types[i] }

// prepare resolves variables to constants, puts linear-time LIKE in the
// place of go-mysql-server's, drops aliases, and bounds the functions whose
// result could exceed the value limit.
func prepare(ctx *sql.Context, e sql.Expression, lim Limits) (sql.Expression, error) {
	e, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if r := allowed[reflect.TypeOf(e)]; r != nil && r.guarded {
			return gmsfix.Guard(e, lim.MaxValueBytes), transform.NewTree, nil
		}
		switch x := e.(type) {
		case *gmsfix.Guarded:
			// Guarded again with the release's own limit.
			if r := allowed[reflect.TypeOf(x.Fn)]; r != nil && r.guarded {
				return gmsfix.Guard(x.Fn, lim.MaxValueBytes), transform.NewTree, nil
			}
			return x.Fn, transform.NewTree, nil
		case *expression.Alias:
			return x.Child, transform.NewTree, nil
		case *expression.HashInTuple:
			// go-mysql-server's hashing of IN lists compares by its own
			// hash of each side's type; the release hashes with InTuple's
			// exact comparison instead (hashedIn).
			if ch := x.Children(); len(ch) == 2 {
				return expression.NewInTuple(ch[0], ch[1]), transform.NewTree, nil
			}
		case *expression.Like:
			return gmsfix.NewLike(x.LeftChild, x.RightChild, x.Escape), transform.NewTree, nil
		case *expression.UserVar, *expression.SystemVar:
			v, err := e.Eval(ctx, nil)
			if err != nil {
				return nil, transform.SameTree, err
			}
			return expression.NewLiteral(v, e.Type()), transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
	return e, err
}

// Resolve returns e with its user and system variables replaced by their
// values in ctx's session (the analyst's), as constants: what Compile
// evaluates. A release resolves its expressions before anything else
// describes them, so that its specification (release reuse) and the key
// of an expression's index name the values, not the variables, and a
// build in a sealed copy of the session (Detached, which has no user
// variables and its own max_allowed_packet) evaluates the same constants.
func Resolve(ctx *sql.Context, e sql.Expression) (sql.Expression, error) {
	if e == nil {
		return nil, nil
	}
	e, _, err := transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		switch e.(type) {
		case *expression.UserVar, *expression.SystemVar:
			v, err := e.Eval(ctx, nil)
			if err != nil {
				return nil, transform.SameTree, err
			}
			return expression.NewLiteral(v, e.Type()), transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
	return e, err
}

// check applies the allow-list to every node of e and returns the number
// of operator and function nodes.
func check(e sql.Expression) (int, error) {
	var err error
	n := 0
	transform.InspectExpr(e, func(e sql.Expression) bool {
		if err != nil {
			return true
		}
		switch x := e.(type) {
		case *plan.Subquery:
			err = &NotAllowedError{Expr: "a subquery", Why: "it would read other rows"}
		case *expression.SetField:
			err = &NotAllowedError{Expr: "an assignment", Why: "it would write a variable"}
		case sql.Aggregation:
			err = &NotAllowedError{Expr: describe(e), Why: "aggregate functions read other rows"}
		case sql.WindowAdaptableExpression:
			err = &NotAllowedError{Expr: describe(e), Why: "window functions read other rows"}
		case *expression.BindVar:
			err = &NotAllowedError{Expr: "an unbound parameter " + x.String()}
		case sql.NonDeterministicExpression:
			if x.IsNonDeterministic() {
				err = &NotAllowedError{Expr: describe(e), Why: "it is not deterministic"}
			}
		}
		if err != nil {
			return true
		}
		r := ruleOf(e)
		if r == nil {
			err = &NotAllowedError{Expr: describe(e)}
			return true
		}
		args := e.Children()
		if r.arity > 0 && len(args) != r.arity {
			err = &NotAllowedError{Expr: fmt.Sprintf("%s with %d arguments", describe(e), len(args)), Why: fmt.Sprintf("only the form with %d is", r.arity)}
			return true
		}
		for i, a := range args {
			mustConst := (r.constFrom > 0 && i >= r.constFrom) || containsInt(r.constArgs, i)
			if mustConst && !isConstant(a) {
				err = &NotAllowedError{Expr: fmt.Sprintf("argument %d of %s (%s)", i+1, describe(e), a),
					Why: "it must be a constant"}
				return true
			}
		}
		switch e.(type) {
		case *expression.GetField, *expression.Literal:
		default:
			n++
		}
		return false
	})
	return n, err
}

// ruleOf returns the allow-list's rule for e (a Guarded call: its
// function's, when that function is evaluated guarded), or nil.
func ruleOf(e sql.Expression) *rule {
	if g, ok := e.(*gmsfix.Guarded); ok {
		if r := allowed[reflect.TypeOf(g.Fn)]; r != nil && r.guarded {
			return r
		}
		return nil
	}
	return allowed[reflect.TypeOf(e)]
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// isConstant reports whether e reads no column and is deterministic (slots
// are neither).
func isConstant(e sql.Expression) bool {
	constant := true
	transform.InspectExpr(e, func(e sql.Expression) bool {
		switch x := e.(type) {
		case *expression.GetField, *slot, *plan.Subquery, *expression.BindVar:
			constant = false
		case sql.NonDeterministicExpression:
			if x.IsNonDeterministic() {
				constant = false
			}
		}
		return !constant
	})
	return constant
}

type compiler struct {
	p    *Program
	ctx  *sql.Context
	sctx *sql.Context // sealedContext
	// listCost is the work of the lists of constants compared one by one
	// (listWork).
	listCost int
}

// checkConstants evaluates, once, each maximal constant subexpression of e
// that is not a literal: its error is returned (it does not depend on the
// data), and a value beyond the limit is refused.
func (c *compiler) checkConstants(e sql.Expression) error {
	var err error
	var sctx *sql.Context // made on the first constant: most expressions have none
	transform.InspectExpr(e, func(e sql.Expression) bool {
		if err != nil {
			return true
		}
		if _, lit := e.(*expression.Literal); lit || !isConstant(e) {
			return false // descend
		}
		if r := ruleOf(e); r != nil && r.structural {
			return false
		}
		if sctx == nil {
			sctx = sql.NewContext(context.Background(), sql.WithSession(newSession(c.ctx, c.p.lim.MaxValueBytes)))
		}
		v, evalErr := safeEval(sctx, e, nil)
		if evalErr != nil {
			err = fmt.Errorf("in the constant %s: %w", e, evalErr)
			return true
		}
		if size(v, c.p.lim.MaxValueBytes+1) > c.p.lim.MaxValueBytes {
			err = &NotAllowedError{Expr: fmt.Sprintf("the constant %s", describe(e)),
				Why: fmt.Sprintf("its value is larger than %d bytes", c.p.lim.MaxValueBytes)}
		}
		return true // a constant's parts are constants
	})
	return err
}

// root compiles e as the value of one expression of the program and returns
// its scratch index.
func (c *compiler) root(e sql.Expression) int {
	if gf, ok := e.(*expression.GetField); ok {
		return gf.Index()
	}
	return c.unit(e)
}

// unit makes e a unit of its own and returns its slot.
func (c *compiler) unit(e sql.Expression) int {
	reads := map[int]bool{}
	ne := c.inner(e, reads, true)
	out := c.p.width
	c.p.width++
	u := unit{expr: ne, out: out, match: c.matchWork(ne)}
	if g, ok := ne.(*gmsfix.Guarded); ok && gmsfix.PreSized(g.Fn) {
		u.grows = true
	}
	c.listWork(&u)
	for i := range reads {
		u.reads = append(u.reads, i)
	}
	c.p.units = append(c.p.units, u)
	return out
}

// matchWork returns the work model of a matcher unit (nil for others).
func (c *compiler) matchWork(e sql.Expression) *matchWork {
	r := ruleOf(e)
	args := e.Children()
	if r == nil || r.matchCost == nil || len(args) < 2 {
		return nil
	}
	m := &matchWork{cost: r.matchCost}
	operand := func(a sql.Expression) (int, any) {
		switch x := a.(type) {
		case *slot:
			return x.idx, nil
		case *expression.GetField:
			return x.Index(), nil
		}
		sctx := sql.NewContext(context.Background(), sql.WithSession(newSession(c.ctx, c.p.lim.MaxValueBytes)))
		v, _ := safeEval(sctx, a, nil)
		if v != nil {
			if s, _, err := types.LongText.Convert(sctx, v); err == nil {
				v = s
			}
		}
		return -1, v
	}
	m.text, m.textConst = operand(args[0])
	m.pattern, m.patConst = operand(args[1])
	m.searches = 1
	if r.occurrence > 0 {
		m.searches = r.occurrenceDefault
		if r.occurrence < len(args) {
			_, v := operand(args[r.occurrence]) // a constant (constFrom)
			if k, err := strconv.Atoi(fmt.Sprint(v)); err == nil && k >= 0 {
				m.searches = k
			}
		}
	}
	if m.pattern < 0 {
		p, _ := m.patConst.(string)
		m.constCost = m.cost(p)
	}
	return m
}

// inner returns e as it appears inside the unit being built: the unit's own
// node (top), a column, a constant, a structural node or nested arithmetic
// kept in the unit, or a slot reading the unit compiled for it.
func (c *compiler) inner(e sql.Expression, reads map[int]bool, top bool) sql.Expression {
	switch x := e.(type) {
	case *expression.GetField:
		reads[x.Index()] = true
		return e
	}
	if isConstant(e) {
		return c.fold(e)
	}
	r := ruleOf(e)
	if !top && !r.structural && !r.arith {
		out := c.unit(e)
		reads[out] = true
		return &slot{idx: out, orig: e}
	}
	args := e.Children()
	if len(args) == 0 {
		return e
	}
	na := make([]sql.Expression, len(args))
	for i, a := range args {
		ar := ruleOf(a)
		switch {
		case ar != nil && ar.arith && r.arith:
			na[i] = c.inner(a, reads, true) // nested arithmetic stays in the unit
		default:
			na[i] = c.inner(a, reads, false)
		}
	}
	ne, err := e.WithChildren(na...)
	if err != nil {
		// The allow-list only holds types whose WithChildren accepts their
		// own number of children; reaching this is a bug in the list.
		panic(fmt.Sprintf("sealed: %T.WithChildren: %v", e, err))
	}
	return ne
}

// slot is an argument computed by an earlier unit. It presents the
// metadata of the expression it replaces and claims to be
// non-deterministic, so that no function caches a result computed from it.
type slot struct {
	idx  int
	orig sql.Expression
}

var (
	_ sql.Expression                 = (*slot)(nil)
	_ sql.CollationCoercible         = (*slot)(nil)
	_ sql.NonDeterministicExpression = (*slot)(nil)
)

func (s *slot) Resolved() bool             { return true }
func (s *slot) String() string             { return s.orig.String() }
func (s *slot) Type() sql.Type             { return s.orig.Type() }
func (s *slot) IsNullable() bool           { return s.orig.IsNullable() }
func (s *slot) Children() []sql.Expression { return nil }
func (s *slot) IsNonDeterministic() bool   { return true }
func (s *slot) DebugString() string {
	return fmt.Sprintf("slot[%d](%s)", s.idx, sql.DebugString(s.orig))
}
func (s *slot) WithChildren(ch ...sql.Expression) (sql.Expression, error) {
	if len(ch) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(s, len(ch), 0)
	}
	return s, nil
}
func (s *slot) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	return sql.GetCoercibility(ctx, s.orig)
}
func (s *slot) Eval(_ *sql.Context, row sql.Row) (any, error) {
	v := row[s.idx]
	if f, ok := v.(failure); ok {
		return nil, f.err
	}
	return v, nil
}

// Evaluator evaluates a program's expressions row by row in a sealed
// session. It is not safe for concurrent use; make one per goroutine.
type Evaluator struct {
	p       *Program
	ctx     *sql.Context
	sess    *session
	scratch sql.Row
	work    int
}

// NewEvaluator returns an evaluator of p whose session copies the system
// variables of parent (the analyst's context; nil for defaults).
func (p *Program) NewEvaluator(parent *sql.Context) *Evaluator {
	s := newSession(parent, p.lim.MaxValueBytes)
	var goctx context.Context = context.Background()
	if parent != nil {
		goctx = parent.Context
	}
	return &Evaluator{p: p, ctx: sql.NewContext(goctx, sql.WithSession(s)), sess: s, scratch: make(sql.Row, p.width)}
}

// Context returns the evaluator's sealed context, for conversions that
// must not reach the analyst's session either (text forms of values).
func (ev *Evaluator) Context() *sql.Context { return ev.ctx }

// Row evaluates every expression of the program on row. It returns false
// when the row must be skipped as a whole: a panic, or more work than the
// row's budget (rowBudget: at most Limits.MaxRowWork). Otherwise Value
// gives each expression's value.
func (ev *Evaluator) Row(row sql.Row) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
		ev.sess.metered = false
	}()
	s := ev.scratch
	copy(s, row[:min(len(row), ev.p.ncols)])
	work := 0
	defer func() { ev.work = work }()
	lim := ev.p.lim
	budget := ev.p.rowBudget(s)
	for i := range ev.p.units {
		u := &ev.p.units[i]
		w := u.work(ev.ctx, s, budget+1)
		if work += w; work > budget {
			return false
		}
		if u.grows {
			// The call may build at most what the budget has left,
			// besides the arguments it was charged for reading; the
			// calls that read its value count it, and a value no call
			// reads (a root) counts its growth here.
			ev.sess.left, ev.sess.metered = budget-work+w, true
		}
		v, err := u.expr.Eval(ev.ctx, s)
		if u.grows {
			ev.sess.metered = false
			if errors.Is(err, gmsfix.ErrRowBudget) {
				work = budget + 1
				return false
			}
			if g := size(v, budget+1) - w; err == nil && g > 0 && u.root {
				if work += g; work > budget {
					return false
				}
			}
		}
		switch {
		case err != nil:
			s[u.out] = failure{err}
		case size(v, lim.MaxValueBytes+1) > lim.MaxValueBytes:
			s[u.out] = failure{errTooLarge}
		default:
			s[u.out] = v
		}
	}
	return true
}

// Work returns the work of the last row Row evaluated: the bytes its
// calls read, as bounded by Limits.MaxRowWork (above it when Row skipped
// the row for its work).
func (ev *Evaluator) Work() int { return ev.work }

// Detached returns a context that no statement's end cancels, whose
// session is a sealed copy of parent's system variables as NewEvaluator
// makes it: to evaluate later, outside the statement, exactly as the
// statement's own evaluation would (the release index builds).
func Detached(parent *sql.Context, lim Limits) *sql.Context {
	return sql.NewContext(context.Background(), sql.WithSession(newSession(parent, lim.orDefault().MaxValueBytes)))
}

// Value returns the value of expression i after Row; ok is false when its
// evaluation failed (the caller skips the row, or the item).
func (ev *Evaluator) Value(i int) (v any, ok bool) {
	v = ev.scratch[ev.p.roots[i]]
	if _, failed := v.(failure); failed {
		return nil, false
	}
	return v, true
}

// safeEval evaluates e, turning a panic into an error.
func safeEval(ctx *sql.Context, e sql.Expression, row sql.Row) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error in %s", describe(e))
		}
	}()
	return e.Eval(ctx, row)
}

// size returns the size in bytes of a value, or any number above limit
// once it is known to exceed it. Scalars count 8.
func size(v any, limit int) int {
	switch x := v.(type) {
	case nil:
		return 0
	case string:
		return len(x)
	case []byte:
		return len(x)
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint, float32, float64, bool:
		return 8
	case decimal.Decimal, decimal.NullDecimal:
		return 16
	case types.JSONDocument:
		return jsonSize(x.Val, limit)
	case sql.JSONWrapper:
		return jsonSize(x, limit)
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.String, reflect.Slice, reflect.Map:
			return rv.Len() * 8
		}
		return 8
	}
}

// jsonSize measures a JSON value (maps, slices, strings, numbers), stopping
// as soon as it exceeds limit.
func jsonSize(v any, limit int) int {
	n := 0
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			n += len(x) + 2
		case map[string]any:
			for k, e := range x {
				n += len(k) + 4
				if n > limit || !walk(e) {
					return false
				}
			}
		case []any:
			for _, e := range x {
				n++
				if n > limit || !walk(e) {
					return false
				}
			}
		case types.JSONDocument:
			return walk(x.Val)
		case sql.JSONWrapper:
			i, err := x.ToInterface()
			if err != nil {
				n += 8
				return true
			}
			return walk(i)
		default:
			n += 8
		}
		return n <= limit
	}
	walk(v)
	return n
}
