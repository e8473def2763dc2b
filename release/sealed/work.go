package sealed

import (
	"context"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
)

// elemWork is the work, in bytes read, that one constant argument of a
// call costs besides its size: comparing a value with one element of an
// IN list takes 0.6–1.3 µs (BenchmarkSealedInList: 5.9 ms for 9,999
// elements), as much as reading about 128 bytes does in the calls the
// work bound was set for (CONVERT of a string: 3–7 ns per byte on the same
// machine).
const elemWork = 128

// listWork completes the work model of unit u beyond the bytes it reads
// from columns and slots: a constant IN list becomes a hashed lookup
// (hashedIn; left is read once per class of comparison); otherwise the
// unit's constant arguments count their size, and a call that compares
// an operand with each of n constants (an IN list that cannot be hashed,
// FIELD(), CASE x WHEN …) counts elemWork per constant and the operand n
// times. These amounts depend on the statement only, so they make no
// row's work depend on another's.
func (c *compiler) listWork(u *unit) {
	if in, ok := u.expr.(*expression.InTuple); ok {
		if h := newHashedIn(c.sealedContext(), in); h != nil {
			u.expr = h
			u.repeat, u.times = operandReads(h.left), len(h.groups)-1
			return
		}
	}
	_, u.fixed = c.constants(u.expr)
	var operand sql.Expression
	n := 0
	switch x := u.expr.(type) {
	case *expression.InTuple:
		if list, ok := x.Right().(expression.Tuple); ok {
			operand, n = x.Left(), len(list)
		}
	case *function.Field:
		if args := x.Children(); len(args) > 1 {
			operand, n = args[0], len(args)-1
		}
	case *expression.Case:
		if x.Expr != nil {
			operand, n = x.Expr, len(x.Branches)
		}
	}
	if operand != nil {
		u.repeat, u.times = operandReads(operand), n-1
		u.fixed += n * elemWork
		c.listCost += n * elemWork
	}
}

// sealedContext is a context in a sealed copy of the analyst's session,
// for evaluations at compile time (made once).
func (c *compiler) sealedContext() *sql.Context {
	if c.sctx == nil {
		c.sctx = sql.NewContext(context.Background(), sql.WithSession(newSession(c.ctx, c.p.lim.MaxValueBytes)))
	}
	return c.sctx
}

// constants returns the number and the total size of the constant
// arguments of a unit's call (in its structural and arithmetic nodes
// too).
func (c *compiler) constants(e sql.Expression) (n, bytes int) {
	var walk func(e sql.Expression)
	walk = func(e sql.Expression) {
		for _, a := range e.Children() {
			switch x := a.(type) {
			case *slot, *expression.GetField:
				continue
			case *expression.Literal:
				n, bytes = n+1, bytes+size(x.Value(), c.p.lim.MaxRowWork+1)
				continue
			case expression.Tuple:
				walk(x) // a list: each element is an argument
				continue
			}
			if isConstant(a) {
				v, _ := safeEval(c.sealedContext(), a, nil)
				n, bytes = n+1, bytes+size(v, c.p.lim.MaxRowWork+1)
				continue
			}
			walk(a)
		}
	}
	walk(e)
	return n, bytes
}

// operandReads returns the scratch indexes an operand reads (its columns
// and slots).
func operandReads(e sql.Expression) []int {
	var out []int
	if s, ok := e.(*slot); ok {
		return []int{s.idx}
	}
	inspect(e, func(e sql.Expression) {
		switch x := e.(type) {
		case *slot:
			out = append(out, x.idx)
		case *expression.GetField:
			out = append(out, x.Index())
		}
	})
	return out
}

// inspect calls f on e and every node below it.
func inspect(e sql.Expression, f func(sql.Expression)) {
	f(e)
	for _, c := range e.Children() {
		inspect(c, f)
	}
}

// work returns the work of unit u on scratch s: the bytes its call reads
// (each column and slot, the operand compared with n constants n times),
// its constants, its matcher's work and a hashed list's slow path; any
// number above limit once it exceeds it.
func (u *unit) work(ctx *sql.Context, s sql.Row, limit int) int {
	w := u.fixed
	if u.match != nil {
		w += u.match.work(s, limit)
	}
	if h, ok := u.expr.(*hashedIn); ok {
		w += h.slowWork(ctx, s, limit)
	}
	for _, i := range u.reads {
		w += size(s[i], limit)
	}
	for _, i := range u.repeat {
		r := size(s[i], limit)
		if u.times > 0 && r > limit/u.times {
			return limit + 1
		}
		w += r * u.times
	}
	return w
}

// checkListWork refuses a program whose lists of constants alone cost
// more than the row work limit: every row would be skipped.
func (c *compiler) checkListWork() error {
	if c.listCost > c.p.lim.MaxRowWork {
		return &NotAllowedError{Expr: fmt.Sprintf("lists of constants costing %d bytes of work per row", c.listCost),
			Why: fmt.Sprintf("a release reads at most %d bytes per row (limits.release_row_work), and a list that is not a plain IN list of constants (FIELD, CASE x WHEN, IN of row constructors) costs %d per element; shorten it", c.p.lim.MaxRowWork, elemWork)}
	}
	return nil
}
