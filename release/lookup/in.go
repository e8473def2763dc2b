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
