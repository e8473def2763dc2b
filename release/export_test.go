package release

import "github.com/dolthub/go-mysql-server/sql"

// CanonKey is exprKey for the external tests: the canonical key of e
// (the tree's encoding and the values of what its evaluation reads).
func CanonKey(ctx *sql.Context, e sql.Expression) (string, error) {
	k, d, err := exprKey(ctx, e)
	if err != nil {
		return "", err
	}
	return string(canonParts(nil, k, depsKey(nil, ctx, d))), nil
}
