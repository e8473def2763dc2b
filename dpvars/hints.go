package dpvars

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
)

var (
	setVarHint = regexp.MustCompile(`(?i)\bSET_VAR\s*\(\s*(?:@@)?(?:session\.)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|[^\s)]+)\s*\)`)
)

// dpHints returns the values of the dp_* variables set by the SET_VAR
// optimizer hints of the statement ctx runs (MySQL's per-statement form:
// SELECT /*+ SET_VAR(dp_epsilon = 0.5) */ DISTINCT …), converted by the
// variables' types. go-mysql-server v0.20.0 ignores SET_VAR; dpsql applies
// it to its own variables (other variables keep being ignored, with a
// warning) and reports a dp_* hint it cannot apply as an error, so that a
// release never silently runs with options other than those written: so
// is a second hint of one variable with another value (the hints are the
// statement's, wherever written, so with "last wins" the first SELECT of
// a UNION with its own OPTIONS would be released with the second's).
func dpHints(ctx *sql.Context) (map[string]any, error) {
	q := ctx.Query()
	if !strings.Contains(q, "/*+") {
		return nil, nil
	}
	out := map[string]any{}
	for _, body := range hintBodies(q) { // hintscan.go: not inside a string literal
		for _, m := range setVarHint.FindAllStringSubmatch(body, -1) {
			name, raw := strings.ToLower(m[1]), m[2]
			if !strings.HasPrefix(name, "dp_") {
				ctx.Warn(1064, "Optimizer hint SET_VAR(%s = …) is ignored: dpsql applies SET_VAR to its dp_* variables only", m[1])
				continue
			}
			sv, _, ok := sql.SystemVariables.GetGlobal(name)
			if !ok {
				return nil, fmt.Errorf("SET_VAR(%s = %s): unknown dpsql variable %s; SHOW VARIABLES LIKE 'dp_%%' lists them", m[1], raw, m[1])
			}
			val := any(raw)
			if len(raw) >= 2 && (raw[0] == '\'' || raw[0] == '"') {
				val = strings.ReplaceAll(raw[1:len(raw)-1], string(raw[0])+string(raw[0]), string(raw[0]))
			}
			v, _, err := sv.GetType().Convert(ctx, val)
			if err != nil {
				return nil, fmt.Errorf("SET_VAR(%s = %s): %v", m[1], raw, err)
			}
			svv, err := sv.SetValue(ctx, v, false)
			if err != nil {
				return nil, fmt.Errorf("SET_VAR(%s = %s): %v", m[1], raw, err)
			}
			if prev, ok := out[name]; ok && !reflect.DeepEqual(prev, svv.Val) {
				return nil, fmt.Errorf("SET_VAR(%s = %s): the statement already sets %s to %v; its hints (and the OPTIONS of each WITH DIFFERENTIAL_PRIVACY) apply to every release of the statement, so give one value per statement and run releases with other options as statements of their own", m[1], raw, name, prev)
			}
			out[name] = svv.Val
		}
	}
	return out, nil
}
