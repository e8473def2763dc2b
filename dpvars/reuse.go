package dpvars

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// VarReuse is the session variable that lets a release be answered from a
// stored identical release (ON, the default) or asks for a new, charged
// release (OFF), which is then stored in place of the old one. It only has
// an effect on a governed server whose configuration enables reuse, and it
// is not part of what makes two releases identical.
const VarReuse = "dp_reuse"

func reuseVariables() []sql.SystemVariable {
	return []sql.SystemVariable{
		&sql.MysqlSystemVariable{
			Name: VarReuse, Scope: sql.GetMysqlScope(sql.SystemVariableScope_Both), Dynamic: true, SetVarHintApplies: true,
			Type:    types.NewSystemBoolType(VarReuse),
			Default: int8(1),
		},
	}
}

// SessionReuse reports whether ctx's statement may reuse a stored release:
// dp_reuse of the session, overridden by a SET_VAR hint (true without a
// session).
func SessionReuse(ctx *sql.Context) bool {
	get, _ := sessionVars(ctx)
	if get == nil {
		return true
	}
	v, ok := get(VarReuse)
	if !ok {
		return true
	}
	return asBool(v, true)
}
