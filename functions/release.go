package functions

import (
	"context"

	"github.com/dolthub/go-mysql-server/sql"
)

// releaseKey marks a context as the scan of a private release.
type releaseKey struct{}

// ReleaseContext returns a context for the table scan of a private release
// (DP_NGRAMS, the planner's rewritten SELECT DISTINCT / DP_SET_UNION).
// Protected tables of a governed server serve rows to an analyst's session
// only under such a context; every other read is refused by the storage
// layer as well as by the planner (defence in depth).
func ReleaseContext(ctx *sql.Context) *sql.Context {
	return ctx.WithContext(context.WithValue(ctx.Context, releaseKey{}, true))
}

// InRelease reports whether ctx comes from ReleaseContext.
func InRelease(ctx *sql.Context) bool {
	v, _ := ctx.Value(releaseKey{}).(bool)
	return v
}

// Texter converts values of one SQL type to their MySQL text form, the form
// DP_SET_UNION releases them in (strings as they are, integers in decimal,
// dates as YYYY-MM-DD, …). It never fails, so that no error can carry a
// protected value. Not safe for concurrent use.
type Texter struct{ t texter }

// NewTexter returns a Texter for values of typ.
func NewTexter(typ sql.Type) *Texter { return &Texter{t: newTexter(typ)} }

// Append appends the text of a non-nil v to dst.
func (t *Texter) Append(ctx *sql.Context, dst []byte, v any) []byte {
	s, b, _ := t.t.text(ctx, v)
	if b != nil {
		return append(dst, b...)
	}
	return append(dst, s...)
}
