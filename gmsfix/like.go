package gmsfix

import (
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// Like is `left LIKE pattern [ESCAPE escape]` with go-mysql-server's
// semantics (collation-aware comparison of characters, `_` and `%`, the
// escape character, NULL handling, conversion of non-text operands) and a
// matcher that runs in time O(len(left) × len(pattern)).
//
// go-mysql-server v0.20.0's LikeMatcher backtracks over every `%`: a pattern
// with k of them can take time O(n^k) on a string of n characters
// ('%a%a%a%a%a%b' over a long run of a's runs for hours), and the evaluation
// of one value cannot be interrupted. Like matches with the classic
// two-pointer algorithm instead: on a mismatch it returns only to the last
// `%` seen, which is enough for patterns made of literal characters, `_` and
// `%` (a later `%` can absorb anything an earlier one could). An empty
// escape string means no escape character, as in MySQL (go-mysql-server
// panics on it).
type Like struct {
	Left, Right sql.Expression
	// Escape is nil for the default escape character '\'.
	Escape sql.Expression

	once    sync.Once
	cached  *likeMatcher // the matcher of a constant pattern, built once
	cerr    error
	varying bool // the pattern or escape depends on the row
}

var (
	_ sql.Expression         = (*Like)(nil)
	_ sql.CollationCoercible = (*Like)(nil)
)

// NewLike returns `left LIKE right [ESCAPE escape]` (escape may be nil).
func NewLike(left, right, escape sql.Expression) *Like {
	return &Like{Left: left, Right: right, Escape: escape, varying: !isConstant(right) || (escape != nil && !isConstant(escape))}
}

// isConstant reports whether e can be evaluated once for all rows: it
// reads no column and calls nothing non-deterministic.
func isConstant(e sql.Expression) bool {
	constant := true
	transform.InspectExpr(e, func(e sql.Expression) bool {
		switch x := e.(type) {
		case *expression.GetField, *expression.UserVar, *expression.SystemVar, *expression.ProcedureParam, *plan.Subquery:
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

// Type implements sql.Expression.
func (l *Like) Type() sql.Type { return types.Boolean }

// IsNullable implements sql.Expression.
func (l *Like) IsNullable() bool { return true }

// Resolved implements sql.Expression.
func (l *Like) Resolved() bool { return expression.ExpressionsResolved(l.Children()...) }

// Children implements sql.Expression: left, pattern and, when given, the
// escape.
func (l *Like) Children() []sql.Expression {
	if l.Escape == nil {
		return []sql.Expression{l.Left, l.Right}
	}
	return []sql.Expression{l.Left, l.Right, l.Escape}
}

// WithChildren implements sql.Expression.
func (l *Like) WithChildren(children ...sql.Expression) (sql.Expression, error) {
	want := len(l.Children())
	if len(children) != want {
		return nil, sql.ErrInvalidChildrenNumber.New(l, len(children), want)
	}
	var esc sql.Expression
	if want == 3 {
		esc = children[2]
	}
	return NewLike(children[0], children[1], esc), nil
}

// String implements sql.Expression.
func (l *Like) String() string {
	if l.Escape != nil {
		return fmt.Sprintf("%s LIKE %s ESCAPE %s", l.Left, l.Right, l.Escape)
	}
	return fmt.Sprintf("%s LIKE %s", l.Left, l.Right)
}

// CollationCoercibility implements sql.CollationCoercible, as
// go-mysql-server's LIKE: the resolution of the operands'.
func (l *Like) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	lc, lco := sql.GetCoercibility(ctx, l.Left)
	rc, rco := sql.GetCoercibility(ctx, l.Right)
	return sql.ResolveCoercibility(lc, lco, rc, rco)
}

// Eval implements sql.Expression.
func (l *Like) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	left, err := likeText(ctx, l.Left, row)
	if err != nil || left == nil {
		return nil, err
	}
	var m *likeMatcher
	if l.varying {
		pat, esc, null, err := l.pattern(ctx, row)
		if err != nil || null {
			return nil, err
		}
		collation, _ := l.CollationCoercibility(ctx)
		m, err = newLikeMatcher(collation, pat, esc)
		if err != nil {
			return nil, err
		}
	} else {
		var null bool
		l.once.Do(func() {
			pat, esc, isNull, err := l.pattern(ctx, row)
			if err != nil || isNull {
				l.cerr, null = err, isNull
				return
			}
			collation, _ := l.CollationCoercibility(ctx)
			l.cached, l.cerr = newLikeMatcher(collation, pat, esc)
		})
		if l.cerr != nil {
			return nil, l.cerr
		}
		if l.cached == nil || null {
			return nil, nil // a NULL pattern
		}
		m = l.cached
	}
	if m.collation == sql.Collation_Unspecified {
		return false, nil
	}
	return m.match(*left), nil
}

// likeText evaluates e as LIKE's operands are: NULL stays nil, anything but
// a string is converted to text.
func likeText(ctx *sql.Context, e sql.Expression, row sql.Row) (*string, error) {
	v, err := e.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	v, err = sql.UnwrapAny(ctx, v)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(string); !ok {
		v, _, err = types.LongText.Convert(ctx, v)
		if err != nil {
			return nil, err
		}
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("LIKE: operand of type %T", v)
	}
	return &s, nil
}

// pattern evaluates the pattern and the escape character (-1: none).
func (l *Like) pattern(ctx *sql.Context, row sql.Row) (pat string, esc rune, null bool, err error) {
	p, err := likeText(ctx, l.Right, row)
	if err != nil || p == nil {
		return "", 0, true, err
	}
	esc = '\\'
	if l.Escape != nil {
		e, err := likeText(ctx, l.Escape, row)
		if err != nil {
			return "", 0, false, err
		}
		if e != nil {
			switch n := utf8.RuneCountInString(*e); {
			case n > 1:
				return "", 0, false, sql.ErrInvalidArgument.New("ESCAPE")
			case n == 0:
				esc = -1
			default:
				esc, _ = utf8.DecodeRuneInString(*e)
			}
		}
	}
	return *p, esc, false, nil
}

// likeToken is one element of a pattern: a character (by its sort order in
// the collation), any one character, or any sequence.
type likeToken struct {
	kind      byte // tokChar, tokOne, tokAny
	sortOrder int32
}

const (
	tokChar byte = iota
	tokOne
	tokAny
)

type likeMatcher struct {
	toks      []likeToken
	collation sql.CollationID
}

// newLikeMatcher parses a pattern as go-mysql-server's ConstructLikeMatcher
// does (same errors for invalid characters and a trailing escape).
func newLikeMatcher(collation sql.CollationID, pattern string, escape rune) (*likeMatcher, error) {
	enc := collation.CharacterSet().Encoder()
	sorter := collation.Sorter()
	m := &likeMatcher{collation: collation}
	for i := 0; i < len(pattern); {
		r, adv := enc.NextRune(pattern[i:])
		if r == utf8.RuneError {
			return nil, sql.ErrCharSetInvalidString.New(collation.CharacterSet().Name(), pattern)
		}
		i += adv
		switch {
		case r == '_':
			m.toks = append(m.toks, likeToken{kind: tokOne})
		case r == '%':
			if n := len(m.toks); n == 0 || m.toks[n-1].kind != tokAny { // %% is %
				m.toks = append(m.toks, likeToken{kind: tokAny})
			}
		case r == escape:
			r, adv = enc.NextRune(pattern[i:])
			if r == utf8.RuneError {
				return nil, sql.ErrCharSetInvalidString.New(collation.CharacterSet().Name(), pattern)
			}
			i += adv
			m.toks = append(m.toks, likeToken{kind: tokChar, sortOrder: sorter(r)})
		default:
			m.toks = append(m.toks, likeToken{kind: tokChar, sortOrder: sorter(r)})
		}
	}
	return m, nil
}

// match reports whether s matches. A string that is not valid in the
// collation's character set matches nothing, as in go-mysql-server.
func (m *likeMatcher) match(s string) bool {
	enc := m.collation.CharacterSet().Encoder()
	sorter := m.collation.Sorter()
	so := make([]int32, 0, len(s))
	for i := 0; i < len(s); {
		r, adv := enc.NextRune(s[i:])
		if r == utf8.RuneError {
			return false
		}
		so = append(so, sorter(r))
		i += adv
	}
	p := m.toks
	i, j := 0, 0
	starJ, starI := -1, 0
	for i < len(so) {
		if j < len(p) {
			switch t := p[j]; t.kind {
			case tokAny:
				starJ, starI = j, i
				j++
				continue
			case tokOne:
				i++
				j++
				continue
			default:
				if t.sortOrder == so[i] {
					i++
					j++
					continue
				}
			}
		}
		if starJ < 0 {
			return false
		}
		// Let the last % absorb one more character and retry after it.
		starI++
		i, j = starI, starJ+1
	}
	for j < len(p) && p[j].kind == tokAny {
		j++
	}
	return j == len(p)
}

// LikeCost is the work per character of the string of matching it against
// pattern with Like: 1 plus the longest run of pattern characters between
// two %. The two-pointer algorithm only returns to the last % seen, so a
// segment is matched at most once per character of the string.
func LikeCost(pattern string) int {
	longest, run := 0, 0
	for _, r := range pattern {
		if r == '%' {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest + 1
}

// ReplaceLike is the pre-analyzer rule that puts Like in the place of every
// go-mysql-server LIKE of a plan (see Like for why).
func ReplaceLike(_ *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	return transform.NodeExprsWithOpaque(n, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		return ReplaceLikeExpr(e)
	})
}

// ReplaceLikeExpr puts Like in the place of every go-mysql-server LIKE in e.
func ReplaceLikeExpr(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	return transform.Expr(e, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		l, ok := e.(*expression.Like)
		if !ok {
			return e, transform.SameTree, nil
		}
		return NewLike(l.LeftChild, l.RightChild, l.Escape), transform.NewTree, nil
	})
}
