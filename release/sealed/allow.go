package sealed

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	regex "github.com/dolthub/go-icu-regex"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/expression/function/json"

	"github.com/dpsql/dpsql/gmsfix"
	"github.com/dpsql/dpsql/release/lookup"
)

// Entry documents one line of the allow-list: the SQL spellings it admits,
// its group, and its restrictions.
type Entry struct {
	// Group is the documentation heading (Comparison, String, …).
	Group string
	// Names are the SQL spellings, upper case (`LOWER`, `LCASE`; operators
	// as written: `=`, `LIKE`, `CASE`).
	Names []string
	// Note states a restriction ("the pattern must be a constant"), or is
	// empty.
	Note string
}

// rule is the allow-list's knowledge of one go-mysql-server expression
// type.
type rule struct {
	entry *Entry
	// constArgs are the argument positions that must be constant (regular
	// expression patterns and flags, JSON paths, format strings, units):
	// compiled once, they cannot make the cost of a row depend on its data.
	constArgs []int
	// constFrom, when positive, makes every argument from that position
	// on constant.
	constFrom int
	// arity, when set, is the only accepted number of arguments.
	arity int
	// guarded functions are evaluated inside gmsfix.Guarded, which refuses
	// to build a result beyond the value limit (NULL).
	guarded bool
	// arith marks the arithmetic operators: go-mysql-server derives the
	// scale of a division from the shape of the arithmetic tree under it,
	// so nested arithmetic is evaluated as one unit, not cut into slots.
	arith bool
	// matchCost, for matchers (LIKE, regular expressions), is the work of
	// matching a string against the pattern (the second argument), per
	// byte of the string (the first): their time is the product of the two.
	matchCost func(pattern string) int
	// occurrence, for regular-expression functions that may search more
	// than once, is the position of their occurrence argument and its
	// default; 0 (all matches) costs one search per character of the text
	// in the worst case, k costs k searches.
	occurrence, occurrenceDefault int
	// structural marks nodes that are not values of their own (a tuple of
	// IN, the INTERVAL of DATE_ADD, COLLATE): they stay inside their
	// parent's unit, their arguments are cut.
	structural bool
}

var (
	allowed = map[reflect.Type]*rule{}
	entries []*Entry
)

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// allow registers the types t of one documentation entry.
func allow(e *Entry, r rule, types ...reflect.Type) {
	entries = append(entries, e)
	for _, t := range types {
		if _, dup := allowed[t]; dup {
			panic(fmt.Sprintf("sealed: %v allowed twice", t))
		}
		rr := r
		rr.entry = e
		allowed[t] = &rr
	}
}

// op and noted build allow-list entries.
func op(group string, names ...string) *Entry { return &Entry{Group: group, Names: names} }

func noted(e *Entry, note string) *Entry { e.Note = note; return e }

func init() {
	allowOperators()
	allowStrings()
	allowNumbersDatesPublicJSON()
}

// allowOperators allows the values, comparisons, logic, arithmetic, control flow and conversions.
func allowOperators() {
	// Values.
	allow(op("Values", "column", "literal"), rule{}, typeOf[*expression.GetField](), typeOf[*expression.Literal]())

	// Comparison and logic.
	allow(op("Comparison", "=", "<=>", "<", "<=", ">", ">=", "<>", "!="), rule{},
		typeOf[*expression.Equals](), typeOf[*expression.NullSafeEquals](), typeOf[*expression.LessThan](),
		typeOf[*expression.LessThanOrEqual](), typeOf[*expression.GreaterThan](), typeOf[*expression.GreaterThanOrEqual]())
	allow(op("Comparison", "BETWEEN"), rule{}, typeOf[*expression.Between]())
	allow(op("Comparison", "IN (list)", "NOT IN (list)"), rule{}, typeOf[*expression.InTuple](), typeOf[*expression.HashInTuple]())
	allow(op("Comparison", "(a, b) row constructor"), rule{structural: true}, typeOf[expression.Tuple]())
	allow(op("Comparison", "IS NULL", "IS NOT NULL", "ISNULL"), rule{}, typeOf[*expression.IsNull](), typeOf[*function.IsNull]())
	allow(op("Comparison", "IS TRUE", "IS FALSE"), rule{}, typeOf[*expression.IsTrue]())
	allow(noted(op("Comparison", "LIKE", "NOT LIKE"), "matched in time linear in the string times the pattern"),
		rule{matchCost: gmsfix.LikeCost}, typeOf[*gmsfix.Like]())
	allow(op("Logic", "AND", "OR", "XOR", "NOT"), rule{},
		typeOf[*expression.And](), typeOf[*expression.Or](), typeOf[*expression.Xor](), typeOf[*expression.Not]())

	// Arithmetic.
	allow(op("Arithmetic", "+", "-", "*", "/", "DIV", "%", "MOD", "unary -", "&", "|", "^", "<<", ">>"), rule{arith: true},
		typeOf[*expression.Arithmetic](), typeOf[*expression.Div](), typeOf[*expression.IntDiv](),
		typeOf[*expression.Mod](), typeOf[*expression.UnaryMinus](), typeOf[*expression.BitOp]())

	// Control flow.
	allow(op("Control flow", "CASE"), rule{}, typeOf[*expression.Case]())
	allow(op("Control flow", "IF", "IFNULL", "NULLIF", "COALESCE", "GREATEST", "LEAST"), rule{},
		typeOf[*function.If](), typeOf[*function.IfNull](), typeOf[*function.NullIf](), typeOf[*function.Coalesce](),
		typeOf[*function.Greatest](), typeOf[*function.Least]())

	// Types and character sets.
	allow(op("Casts", "CAST", "CONVERT"), rule{}, typeOf[*expression.Convert]())
	allow(op("Casts", "CONVERT(… USING …)"), rule{}, typeOf[*expression.ConvertUsing]())
	allow(op("Casts", "COLLATE"), rule{structural: true}, typeOf[*expression.CollatedExpression]())
	allow(op("Casts", "BINARY"), rule{}, typeOf[*expression.Binary]())
	allow(op("Casts", "ENUM to text"), rule{}, typeOf[*expression.EnumToString]())
}

// allowStrings allows the string functions.
func allowStrings() {
	// Strings.
	allow(op("String", "LOWER", "LCASE", "UPPER", "UCASE", "LENGTH", "OCTET_LENGTH", "CHAR_LENGTH", "CHARACTER_LENGTH", "BIT_LENGTH"), rule{},
		typeOf[*function.Lower](), typeOf[*function.Upper](), typeOf[*function.Length](), typeOf[*function.Bitlength]())
	allow(op("String", "SUBSTRING", "SUBSTR", "MID", "LEFT", "RIGHT", "SUBSTRING_INDEX", "TRIM", "LTRIM", "RTRIM", "REVERSE"), rule{},
		typeOf[*function.Substring](), typeOf[function.Left](), typeOf[function.Right](), typeOf[*function.SubstringIndex](),
		typeOf[*function.Trim](), typeOf[*function.LeftTrim](), typeOf[*function.RightTrim](), typeOf[*function.Reverse]())
	allow(op("String", "CONCAT", "CONCAT_WS"), rule{}, typeOf[*function.Concat](), typeOf[*function.ConcatWithSeparator]())
	allow(noted(op("String", "REPLACE", "LPAD", "RPAD"), "NULL when the result would exceed the value limit"), rule{guarded: true},
		typeOf[*function.Replace](), typeOf[*function.Pad]())
	allow(op("String", "LOCATE", "INSTR", "STRCMP", "FIELD", "FIND_IN_SET", "ELT", "ASCII", "ORD", "CHAR", "SOUNDEX"), rule{},
		typeOf[*function.Locate](), typeOf[function.Instr](), typeOf[*function.StrCmp](), typeOf[*function.Field](),
		typeOf[*function.FindInSet](), typeOf[*function.Elt](), typeOf[*function.Ascii](), typeOf[*function.Ord](),
		typeOf[*function.Char](), typeOf[*function.Soundex]())
	allow(op("String", "HEX", "UNHEX", "TO_BASE64", "FROM_BASE64", "BIN", "CONV"), rule{},
		typeOf[*function.Hex](), typeOf[*function.Unhex](), typeOf[*function.ToBase64](), typeOf[*function.FromBase64](),
		typeOf[*function.Bin](), typeOf[*function.Conv]())
	allow(op("String", "MD5", "SHA", "SHA1", "SHA2", "CRC32"), rule{},
		typeOf[*function.MD5](), typeOf[*function.SHA1](), typeOf[*function.SHA2](), typeOf[*function.Crc32]())
	allow(op("String", "INET_ATON", "INET_NTOA", "INET6_ATON", "INET6_NTOA", "IS_IPV4", "IS_IPV6", "IS_IPV4_COMPAT", "IS_IPV4_MAPPED", "IS_UUID"), rule{},
		typeOf[*function.InetAton](), typeOf[*function.InetNtoa](), typeOf[*function.Inet6Aton](), typeOf[*function.Inet6Ntoa](),
		typeOf[*function.IsIPv4](), typeOf[*function.IsIPv6](), typeOf[*function.IsIPv4Compat](), typeOf[*function.IsIPv4Mapped](),
		typeOf[*function.IsUUID]())
	allow(noted(op("String", "REGEXP", "RLIKE", "REGEXP_LIKE"),
		"the pattern and the match type must be constants; RE2 syntax, matched in linear time"),
		rule{constFrom: 1, matchCost: regexpCost}, typeOf[*function.RegexpLike]())
	allow(noted(op("String", "REGEXP_INSTR", "REGEXP_SUBSTR"), "the pattern and every later argument must be constants; occurrence k costs k searches"),
		rule{constFrom: 1, matchCost: regexpCost, occurrence: 3, occurrenceDefault: 1},
		typeOf[*function.RegexpInstr](), typeOf[*function.RegexpSubstr]())
	allow(noted(op("String", "REGEXP_REPLACE"), "the pattern and every later argument must be constants; replacing every match (occurrence 0, the default) costs up to one search per character"),
		rule{constFrom: 1, matchCost: regexpCost, occurrence: 4, occurrenceDefault: 0},
		typeOf[*function.RegexpReplace]())
}

// allowNumbersDatesPublicJSON allows the numeric, date and time, public-data and JSON functions.
func allowNumbersDatesPublicJSON() {
	// Numbers.
	allow(op("Numeric", "ABS", "SIGN", "CEIL", "CEILING", "FLOOR", "ROUND", "POW", "POWER", "SQRT", "EXP", "LN", "LOG", "LOG2", "LOG10",
		"PI", "DEGREES", "RADIANS", "SIN", "COS", "TAN", "COT", "ASIN", "ACOS", "ATAN", "ATAN2", "BIT_COUNT"), rule{},
		typeOf[*function.AbsVal](), typeOf[*function.Sign](), typeOf[*function.Ceil](), typeOf[*function.Floor](),
		typeOf[*function.Round](), typeOf[*function.Power](), typeOf[*function.Sqrt](), typeOf[*function.Exp](),
		typeOf[*function.LogBase](), typeOf[*function.Log](), typeOf[*function.Pi](), typeOf[*function.Degrees](),
		typeOf[*function.Radians](), typeOf[*function.Sin](), typeOf[*function.Cos](), typeOf[*function.Tan](),
		typeOf[*function.Cot](), typeOf[*function.Asin](), typeOf[*function.Acos](), typeOf[*function.Atan](),
		typeOf[*function.BitCount]())
	allow(noted(op("Numeric", "FORMAT"), "the number of decimals and the locale must be constants"),
		rule{constArgs: []int{1, 2}}, typeOf[*function.Format]())

	// Dates and times.
	allow(op("Date and time", "YEAR", "QUARTER", "MONTH", "DAY", "DAYOFMONTH", "HOUR", "MINUTE", "SECOND", "MICROSECOND",
		"DAYOFWEEK", "WEEKDAY", "DAYOFYEAR", "WEEK", "WEEKOFYEAR", "YEARWEEK", "MONTHNAME", "DAYNAME", "LAST_DAY"), rule{},
		typeOf[*function.Year](), typeOf[*function.Quarter](), typeOf[*function.Month](), typeOf[*function.Day](),
		typeOf[*function.Hour](), typeOf[*function.Minute](), typeOf[*function.Second](), typeOf[*function.Microsecond](),
		typeOf[*function.DayOfWeek](), typeOf[*function.Weekday](), typeOf[*function.DayOfYear](), typeOf[*function.Week](),
		typeOf[*function.WeekOfYear](), typeOf[*function.YearWeek](), typeOf[*function.MonthName](), typeOf[*function.DayName](),
		typeOf[*function.LastDay]())
	allow(op("Date and time", "DATE", "TIME", "TIMESTAMP", "DATETIME", "TO_DAYS", "FROM_DAYS", "FROM_UNIXTIME", "TIME_TO_SEC",
		"DATEDIFF", "TIMEDIFF"), rule{},
		typeOf[*function.Date](), typeOf[*function.Time](), typeOf[*function.DatetimeConversion](), typeOf[*function.ToDays](),
		typeOf[*function.FromDays](), typeOf[*function.FromUnixtime](), typeOf[*function.TimeToSec](),
		typeOf[*function.DateDiff](), typeOf[*function.TimeDiff]())
	allow(noted(op("Date and time", "UNIX_TIMESTAMP(date)"), "with its argument only (without, it is the current time)"),
		rule{arity: 1}, typeOf[*function.UnixTimestamp]())
	allow(noted(op("Date and time", "DATE_ADD", "DATE_SUB", "ADDDATE", "SUBDATE", "+ INTERVAL", "- INTERVAL"), ""),
		rule{}, typeOf[*function.DateAdd](), typeOf[*function.DateSub]())
	allow(op("Date and time", "INTERVAL"), rule{structural: true}, typeOf[*expression.Interval]())
	allow(noted(op("Date and time", "EXTRACT", "TIMESTAMPDIFF"), "the unit must be a constant"),
		rule{constArgs: []int{0}}, typeOf[*function.Extract](), typeOf[*function.TimestampDiff]())
	allow(noted(op("Date and time", "DATE_FORMAT", "TIME_FORMAT", "STR_TO_DATE"), "the format must be a constant"),
		rule{constArgs: []int{1}}, typeOf[*function.DateFormat](), typeOf[*function.TimeFormat](), typeOf[*function.StrToDate]())

	// Public data (the planner makes these of subqueries over tables the
	// configuration declares public).
	allow(noted(op("Public data", "IN (SELECT … FROM public)", "EXISTS (SELECT … FROM public …)"),
		"over tables the configuration declares public; read before the protected table, bounded; one hash lookup per row"),
		rule{}, typeOf[*lookup.In]())
	allow(noted(op("Public data", "JOIN public ON public.c = …"),
		"the public table's join column must be unique among the rows it reads; one hash lookup per row"),
		rule{}, typeOf[*lookup.Get]())

	// JSON.
	allow(noted(op("JSON", "JSON_EXTRACT", "->", "JSON_UNQUOTE", "->>", "JSON_VALID", "JSON_TYPE", "JSON_LENGTH", "JSON_QUOTE"),
		"JSON paths must be constants"),
		rule{constFrom: 1}, typeOf[*json.JSONExtract](), typeOf[*json.JSONUnquote](), typeOf[*json.JSONValid](),
		typeOf[*json.JSONType](), typeOf[*json.JsonLength](), typeOf[*json.JSONQuote]())
}

// regexpCost is the work per byte of one search for a regular expression
// (gmsfix/regex, RE2): linear in the text times the instructions of the
// compiled program, which regex.Cost counts (the pattern's length does not
// bound them: [ab]{1000}c is 11 bytes and 1,003 instructions). A pattern
// that does not compile costs nothing: the function fails on every row.
func regexpCost(pattern string) int {
	n, err := regex.Cost(pattern, 0)
	if err != nil {
		return 1
	}
	ci, err := regex.Cost(pattern, regex.RegexFlags_Case_Insensitive)
	if err == nil && ci > n {
		n = ci
	}
	return n + 1
}

// Allowed returns the allow-list as documentation entries, in order.
func Allowed() []Entry {
	out := make([]Entry, len(entries))
	for i, e := range entries {
		out[i] = *e
		out[i].Names = slices.Clone(e.Names)
	}
	return out
}

// ListDoc is where the allow-list is documented for users.
const ListDoc = "docs/deployment.md, section \"Expressions inside a release\""

// NotAllowedError is the refusal of an expression a release may not
// evaluate. Expr is the SQL text of the refused part (a function name, an
// operator); Why says what class it belongs to.
type NotAllowedError struct {
	Expr string
	Why  string
}

func (e *NotAllowedError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("%s is not allowed inside a private release (%s); the functions and operators a release may use are listed in %s", e.Expr, e.Why, ListDoc)
	}
	return fmt.Sprintf("%s is not allowed inside a private release; the functions and operators a release may use are listed in %s", e.Expr, ListDoc)
}

// describe names an expression for an error: its function name in upper
// case, or its SQL text for operators.
func describe(e sql.Expression) string {
	if f, ok := e.(sql.FunctionExpression); ok && f.FunctionName() != "" {
		return strings.ToUpper(f.FunctionName()) + "()"
	}
	s := e.String()
	if len(s) > 80 {
		s = s[:77] + "…"
	}
	return s
}

// Markdown returns the allow-list as docs/deployment.md's table: one row per group, the
// SQL spellings, and the restrictions.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| group | functions and operators | restrictions |\n|---|---|---|\n")
	type row struct {
		names []string
		notes []string
	}
	var order []string
	rows := map[string]*row{}
	for _, e := range entries {
		if e.Group == "test" {
			continue
		}
		r, ok := rows[e.Group]
		if !ok {
			r = &row{}
			rows[e.Group] = r
			order = append(order, e.Group)
		}
		r.names = append(r.names, e.Names...)
		if e.Note != "" {
			r.notes = append(r.notes, strings.Join(e.Names[:min(len(e.Names), 2)], "/")+": "+e.Note)
		}
	}
	for _, g := range order {
		r := rows[g]
		names := make([]string, len(r.names))
		for i, n := range r.names {
			names[i] = "`" + strings.ReplaceAll(n, "|", `\|`) + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", g, strings.Join(names, ", "), strings.ReplaceAll(strings.Join(r.notes, "; "), "|", `\|`))
	}
	return b.String()
}
