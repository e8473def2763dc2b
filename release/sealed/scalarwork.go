package sealed

import "github.com/dolthub/go-mysql-server/sql"

// ScalarWorkFits reports whether Row would skip no row, for its work or
// a value's size, among the rows whose values are all scalars of 8 bytes:
// the columns the program reads (row gives them; only their sizes count)
// and every call's result (integers, floats, booleans). The row's budget
// (rowBudget) and each call's work (unit.work) count only the sizes of
// the values read, which are then the same for every such row, so the
// answer holds for all of them without evaluating anything, and without
// the sealed session an Evaluator copies. It is false for a program with
// a matcher, a hashed IN list or a call that grows its result, whose work
// depends on more than sizes.
func (p *Program) ScalarWorkFits(row sql.Row) bool {
	if p.lim.MaxValueBytes < 8 {
		return false
	}
	s := make(sql.Row, p.width)
	copy(s, row[:min(len(row), p.ncols)])
	budget := p.rowBudget(s)
	work := 0
	for i := range p.units {
		u := &p.units[i]
		if _, hashed := u.expr.(*hashedIn); hashed || u.match != nil || u.grows {
			return false
		}
		if work += u.work(nil, s, budget+1); work > budget {
			return false
		}
		s[u.out] = int64(0) // the call's scalar result: 8 bytes
	}
	return true
}
