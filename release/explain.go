package release

import (
	"context"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/sqlext/explain"
)

// Explainer is a plan node (or expression) that makes private releases and
// can describe them, and what they would be charged, without reading data
// or charging (DP_EXPLAIN).
type Explainer interface {
	Explain(ctx *sql.Context) (facts []explain.Fact, reqs []Request, err error)
}

// explainKey marks a context as the planning of a statement that is only
// explained.
type explainKey struct{}

// WithExplain returns a context for planning a statement that will only be
// explained: the planner then does not refuse a release for lack of
// budget (Explaining), since the explanation says so itself.
func WithExplain(ctx *sql.Context) *sql.Context {
	return ctx.WithContext(context.WithValue(ctx.Context, explainKey{}, true))
}

// Explaining reports whether ctx comes from WithExplain.
func Explaining(ctx *sql.Context) bool {
	v, _ := ctx.Value(explainKey{}).(bool)
	return v
}
