package dpvars

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// VarPrivacyUnit is BigQuery's privacy_unit_column as a variable: when
// set (by SET_VAR, the rewrite of WITH DIFFERENTIAL_PRIVACY OPTIONS, or
// SET), a release over a table whose configured privacy unit is another
// column is refused. It chooses nothing: the unit of a protected table is
// the administrator's, fixed in the configuration; this only makes a
// query written for another unit fail instead of silently protecting a
// different one.
const VarPrivacyUnit = "dp_privacy_unit_column"

// unitVariables are the definitions of the privacy-unit variable.
func unitVariables() []sql.SystemVariable {
	return []sql.SystemVariable{&sql.MysqlSystemVariable{
		Name: VarPrivacyUnit, Scope: sql.GetMysqlScope(sql.SystemVariableScope_Both), Dynamic: true, SetVarHintApplies: true,
		Type: types.NewSystemStringType(VarPrivacyUnit), Default: "",
	}}
}

// CheckPrivacyUnit refuses, with a message saying what to write, a
// release over db.table (privacy unit unit) whose statement or session
// names another privacy_unit_column.
func CheckPrivacyUnit(ctx *sql.Context, db, table, unit string) error {
	get, err := sessionVars(ctx)
	if get == nil || err != nil {
		return err
	}
	v, ok := get(VarPrivacyUnit)
	if !ok {
		return nil
	}
	want := strings.TrimSpace(fmt.Sprint(v))
	if want == "" || strings.EqualFold(want, unit) {
		return nil
	}
	return fmt.Errorf("privacy_unit_column %s is not the privacy unit of %s.%s, which the server's configuration fixes as %s: write privacy_unit_column = %s, or leave the option out", want, db, table, unit, unit)
}
