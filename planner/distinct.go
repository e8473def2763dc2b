package planner

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"

	"github.com/dpsql/dpsql/release"
)

// outputOrder is one ORDER BY field of a private SELECT DISTINCT: the
// output column it sorts by.
type outputOrder struct {
	out   int
	order sql.SortOrder
	nulls sql.NullOrdering
}

// distinct rewrites Distinct(Project(exprs, source)), and
// Distinct(Project(exprs, Sort(fields, [Project(columns and aliases,)]
// source))), which the planbuilder makes of SELECT DISTINCT … ORDER BY an
// alias or a column written differently from the select list: the sort is
// returned as orders over the output columns, to be applied to the
// released rows (each field must be one of the selected expressions, as
// MySQL requires with DISTINCT).
func (p *policy) distinct(ctx *sql.Context, d *plan.Distinct) (*Release, []outputOrder, error) {
	proj, ok := d.Child.(*plan.Project)
	if !ok {
		return nil, nil, nil
	}
	child := proj.Child
	sort, sorted := child.(*plan.Sort)
	aliases := map[string]sql.Expression{}
	if sorted {
		child = sort.Child
		if inner, ok := child.(*plan.Project); ok {
			for _, e := range inner.Projections {
				switch e := e.(type) {
				case *expression.Alias:
					aliases[strings.ToLower(e.Name())] = e.Child
				case *expression.GetField:
				default:
					return nil, nil, nil
				}
			}
			child = inner.Child
		}
	}
	src, ok := p.protectedSource(child)
	if !ok {
		return nil, nil, nil
	}
	keys := make([]sql.Expression, len(proj.Projections))
	out := make([]int, len(keys))
	for i, e := range proj.Projections {
		keys[i] = unalias(e)
		out[i] = i
	}
	var order []outputOrder
	if sorted {
		for _, f := range sort.SortFields {
			i := selectedIndex(proj.Projections, aliases, f.Column)
			if i < 0 {
				return nil, nil, release.ErrAccess(src.db, src.name, fmt.Sprintf("the ORDER BY of a private SELECT DISTINCT may only use the selected columns, not %s: add it to the SELECT list (it then becomes part of the released key) or order by a selected column", f.Column))
			}
			order = append(order, outputOrder{out: i, order: f.Order, nulls: f.NullOrdering})
		}
	}
	r, err := p.newRelease(ctx, src, distinctRows, keys, out, nil, proj.Schema(), proj.Projections)
	return r, order, err
}

// selectedIndex returns the index of the select-list expression an ORDER
// BY expression names (by alias or as the same expression), or -1.
func selectedIndex(selected []sql.Expression, aliases map[string]sql.Expression, e sql.Expression) int {
	if gf, ok := e.(*expression.GetField); ok && gf.Table() == "" {
		for i, s := range selected {
			if a, ok := s.(*expression.Alias); ok && strings.EqualFold(a.Name(), gf.Name()) {
				return i
			}
		}
		if a, ok := aliases[strings.ToLower(gf.Name())]; ok {
			e = a
		}
	}
	e = unalias(e)
	for i, s := range selected {
		if sameExpr(unalias(s), e) {
			return i
		}
	}
	return -1
}

// sortOverRelease rebinds the fields of a Sort over a rewritten SELECT
// DISTINCT (a Project over a Release) that repeat an aliased select-list
// expression, as ORDER BY 1 does, to the released output column: the
// expression's own columns are not there any more.
func sortOverRelease(s *plan.Sort) sql.Node {
	proj, ok := s.Child.(*plan.Project)
	if !ok {
		return s
	}
	if _, ok := proj.Child.(*Release); !ok {
		return s
	}
	fields := make(sql.SortFields, len(s.SortFields))
	changed := false
	for k, f := range s.SortFields {
		fields[k] = f
		a, ok := f.Column.(*expression.Alias)
		if !ok {
			continue
		}
		for _, ref := range proj.Projections {
			if gf, ok := ref.(*expression.GetField); ok && strings.EqualFold(gf.Name(), a.Name()) {
				fields[k] = sql.SortField{Column: gf, Order: f.Order, NullOrdering: f.NullOrdering}
				changed = true
				break
			}
		}
	}
	if !changed {
		return s
	}
	return plan.NewSort(fields, s.Child)
}
