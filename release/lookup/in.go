package lookup

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// In is `left IN (SELECT c FROM public …)`, or, with Exists,
// `EXISTS (SELECT … FROM public WHERE c = left …)`, over a Set filled
// before the protected scan. Its only child is left, an expression over the
// protected row; the set is not a child: no rule or compiler walks into it.
//
// With SQL's three values, as MySQL: IN is NULL when left is NULL (FALSE
// over an empty set), TRUE when left is in the set, otherwise NULL when the
// set holds NULL and FALSE when it does not. EXISTS is TRUE or FALSE: a
// NULL never matches.
type In struct {
	Left   sql.Expression
	Set    *Set
	Exists bool
	// Desc is the public side's SQL, for String.
	Desc string
}

var _ sql.Expression = (*In)(nil)

// NewIn returns In over s.
func NewIn(left sql.Expression, s *Set, exists bool, desc string) *In {
	return &In{Left: left, Set: s, Exists: exists, Desc: desc}
}

// Resolved implements sql.Expression.
func (in *In) Resolved() bool { return in.Left.Resolved() }

// String implements sql.Expression.
func (in *In) String() string {
	if in.Exists {
		return fmt.Sprintf("EXISTS(public lookup of %s in %s)", in.Left, in.Desc)
	}
	return fmt.Sprintf("(%s IN (public lookup %s))", in.Left, in.Desc)
}

// Type implements sql.Expression.
func (in *In) Type() sql.Type { return types.Boolean }

// IsNullable implements sql.Expression.
func (in *In) IsNullable() bool { return !in.Exists }

// Children implements sql.Expression.
func (in *In) Children() []sql.Expression { return []sql.Expression{in.Left} }

// WithChildren implements sql.Expression; the set is shared.
func (in *In) WithChildren(ch ...sql.Expression) (sql.Expression, error) {
	if len(ch) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(in, len(ch), 1)
	}
	out := *in
	out.Left = ch[0]
	return &out, nil
}

// Eval implements sql.Expression: one conversion of left's value and one
// hash lookup.
func (in *In) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := in.Left.Eval(ctx, row)
	if err != nil {
		return nil, err
	}
	found, hasNull, empty, err := in.Set.probe(ctx, v)
	if err != nil {
		return nil, err
	}
	switch {
	case in.Exists:
		return v != nil && found, nil
	case empty:
		return false, nil
	case v == nil:
		return nil, nil
	case found:
		return true, nil
	case hasNull:
		return nil, nil
	}
	return false, nil
}

// Get is the value of column Col of the public row a join matches with
// left's value (its Set filled by AddRow): NULL when none matches. It is
// how a release reads a public column of `T JOIN P ON P.c = left`: P.c is
// unique, so a protected row has at most one public row.
type Get struct {
	Left sql.Expression
	Set  *Set
	Col  int
	Typ  sql.Type
	// Name is the public column's name, for String.
	Name string
}

var _ sql.Expression = (*Get)(nil)

// NewGet returns Get over s.
func NewGet(left sql.Expression, s *Set, col int, typ sql.Type, name string) *Get {
	return &Get{Left: left, Set: s, Col: col, Typ: typ, Name: name}
}

// Resolved implements sql.Expression.
func (g *Get) Resolved() bool { return g.Left.Resolved() }

// String implements sql.Expression.
func (g *Get) String() string { return fmt.Sprintf("%s(public row of %s)", g.Name, g.Left) }

// Type implements sql.Expression.
func (g *Get) Type() sql.Type { return g.Typ }

// IsNullable implements sql.Expression.
func (g *Get) IsNullable() bool { return true }

// Children implements sql.Expression.
func (g *Get) Children() []sql.Expression { return []sql.Expression{g.Left} }

// WithChildren implements sql.Expression; the set is shared.
func (g *Get) WithChildren(ch ...sql.Expression) (sql.Expression, error) {
	if len(ch) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(g, len(ch), 1)
	}
	out := *g
	out.Left = ch[0]
	return &out, nil
}

// Eval implements sql.Expression: one conversion of left's value and one
// hash lookup.
func (g *Get) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := g.Left.Eval(ctx, row)
	if err != nil {
		return nil, err
	}
	r, err := g.Set.row(ctx, v)
	if err != nil || r == nil {
		return nil, err
	}
	return r[g.Col], nil
}
