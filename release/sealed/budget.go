package sealed

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
)

// The row's work budget. A row may do at most
//
//	B(r) = min(Limits.MaxRowWork, rowWorkBase + F + rowWorkPerByte·|r|)
//
// bytes of work, where F is the work of the program's constants (the same
// on every row: a function of the statement) and |r| is the number of bytes
// of the values the program reads from the row (its columns, each counted
// once). A row beyond B(r) is skipped, like a row beyond MaxRowWork before.
//
// Why: the work of a row is the sum of the sizes of the values its calls
// read, and an expression can make those sizes depend on the row
// (LPAD(secret, IF(email = 'victim@…', 16000, 1), 'x')): with MaxRowWork
// alone every row of one person could cost 1 MiB and every other row a few
// bytes, a difference the release's response time shows (docs/privacy.md
// §30, residual 3). With B(r), the work of a row is at most a public
// constant plus a public multiple of the row's own size, which the scan
// reads anyway; an expression may still spend its budget on some rows and
// not on others, but the budget is 45 times smaller than MaxRowWork on a
// row of about 100 bytes. Calls whose result can be much larger than their
// arguments (LPAD, RPAD, REPLACE: the guarded ones gmsfix sizes) compare their
// result's size with what is left of B(r) before building it (their growth
// beyond the bytes they read counts as work when no other call reads it),
// so no such value beyond the budget is ever allocated.
//
// Privacy: whether a row is skipped depends on that row alone (its values
// and the statement), so skipping is a row-wise filter, as every failure
// of sealed evaluation is; no error or warning reaches the client.
//
// Legitimate expressions: a call that reads a column reads at most |r|
// bytes of it, and the functions that grow their argument do so by a
// bounded factor (case mapping 3×, HEX 2×, TO_BASE64 4/3×) unless they are
// the sized ones, so a filter or key of a few dozen calls over the row's
// columns stays within 64·|r|; rows of long text keep MaxRowWork's bound.
const (
	rowWorkBase    = 16 << 10
	rowWorkPerByte = 64
)

// budgetInputs records what rowBudget needs: the columns the program reads
// (by its calls, and as plain expressions) and the work of its constants.
func (p *Program) budgetInputs() {
	seen := map[int]bool{}
	add := func(i int) {
		if i >= 0 && i < p.ncols && !seen[i] {
			seen[i] = true
			p.cols = append(p.cols, i)
		}
	}
	for _, u := range p.units {
		p.fixed += u.fixed
		inspect(u.expr, func(e sql.Expression) {
			if gf, ok := e.(*expression.GetField); ok {
				add(gf.Index())
			}
		})
		if u.match != nil {
			add(u.match.text)
			add(u.match.pattern)
		}
	}
	for _, r := range p.roots {
		add(r)
		for i := range p.units {
			if p.units[i].out == r {
				p.units[i].root = true
			}
		}
	}
}

// rowBudget returns B(r) for the row's values in scratch s.
func (p *Program) rowBudget(s sql.Row) int {
	limit := p.lim.MaxRowWork
	b := rowWorkBase + p.fixed
	if b >= limit {
		return limit
	}
	n := 0
	for _, c := range p.cols {
		if n += size(s[c], limit); n >= limit/rowWorkPerByte {
			return limit
		}
	}
	return min(limit, b+rowWorkPerByte*n)
}

// fold returns a constant subexpression as the literal of its value,
// computed once in the sealed session, so that every row reads the same
// value and none computes it: left in its unit, a constant call in a branch
// that only some rows select (IF(email = 'victim@…', LPAD('x', 16000,
// 'x'), ”)) was computed on those rows only, while the work model charged
// its size to every row alike. Arithmetic and structural nodes are left as
// they are (go-mysql-server derives a division's scale from the shape of
// the arithmetic tree; an INTERVAL or a tuple is no value), and so is a
// constant whose evaluation fails (checkConstants refuses the statement).
func (c *compiler) fold(e sql.Expression) sql.Expression {
	if _, ok := e.(*expression.Literal); ok {
		return e
	}
	if r := ruleOf(e); r == nil || r.arith || r.structural {
		return e
	}
	v, err := safeEval(c.sealedContext(), e, nil)
	if err != nil {
		return e
	}
	return expression.NewLiteral(v, e.Type())
}
