// Package mysqlerr names the MySQL error numbers dpsql sends that vitess's
// mysql package does not name (vitess names the others: mysql.ERParseError,
// mysql.ERUserLimitReached, …). Every package of dpsql that sends one of
// these numbers uses the constant from here, so that each number is
// written once; the texts stay with the errors that send them.
package mysqlerr

const (
	// TableAccessDenied is ER_TABLEACCESS_DENIED_ERROR (SQLSTATE 42000):
	// every refusal to read protected rows, and an administrator-only
	// statement or function run by an analyst.
	TableAccessDenied = 1142
	// ColumnAccessDenied is ER_COLUMNACCESS_DENIED_ERROR (SQLSTATE 42000).
	ColumnAccessDenied = 1143
	// WarnAllowedPacketOverflowed is the warning ER_WARN_ALLOWED_PACKET_OVERFLOWED:
	// a string function's result beyond the limit on strings is NULL.
	WarnAllowedPacketOverflowed = 1301
	// TooHighLevelOfNestingForSelect is ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT:
	// a statement nested too deeply or with too many operators.
	TooHighLevelOfNestingForSelect = 1473
	// WrongParamCountToNativeFct is ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT
	// (SQLSTATE 42000): a function called with the wrong number of
	// arguments.
	WrongParamCountToNativeFct = 1582
)
