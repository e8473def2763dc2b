// Package sealed evaluates an analyst's SQL expressions over protected rows
// so that nothing but the value of the expression leaves the evaluation.
//
// A private release (package release) evaluates the analyst's row filter,
// keys and items on every row of a protected table. In go-mysql-server those
// expressions run in the analyst's session: a function may add a warning
// (and the warning count of the OK packet), set LAST_INSERT_ID or a
// variable, panic and drop the connection, take time or memory that depends
// on one row. Each of these is an output of the release that the
// differential-privacy mechanism does not control, so each carried protected
// values out in our audits. This package closes the classes rather than
// individual functions:
//
//   - Allow-list. Compile accepts only the operators and functions listed in
//     Allowed: pure, deterministic, of cost linear in the size of their
//     arguments and with an output whose size is bounded by the arguments'
//     (or by the cap below). Anything else — session functions,
//     non-deterministic ones, locks, files, subqueries, variables written,
//     aggregates — is refused before the release is charged, with an error
//     that names it (NotAllowedError).
//   - A sealed session. Expressions are evaluated with a context of their
//     own (NewEvaluator): a session that copies the analyst's system
//     variables, drops every warning, and ignores or refuses every write
//     (LAST_INSERT_ID, ROW_COUNT, FOUND_ROWS, user and system variables,
//     status variables, locks). Nothing the evaluation does is visible in the
//     analyst's session afterwards.
//   - No error, no panic. An error or a panic while evaluating a row makes
//     Eval report ok = false: the caller skips the row, exactly as a row the
//     filter rejects. Skipping depends on that row alone, so it is a row-wise
//     filter and keeps the release differentially private; no error text
//     ever reaches the client.
//   - Eager, bounded evaluation. The expression is cut into units, one per
//     operator or function call, evaluated bottom-up on every row: every
//     argument of every call is computed whether or not the call will use it
//     (IF, CASE, COALESCE, AND, OR, IN do not short-circuit the work), so a
//     branch that only some rows select costs the same on every row. A unit
//     receives its arguments already computed, through slots; a slot holding
//     an error returns it only when the call reads it, so that SQL's lazy
//     semantics (IF(x = 0, NULL, 1/x)) are kept. Every value a unit produces
//     is limited to Limits.MaxValueBytes, and the bytes all units of a row
//     read to the row's budget: min(Limits.MaxRowWork, 16 KiB + the work of
//     the program's constants + 64 bytes per byte of the values the program
//     reads from the row), a row-wise function (budget.go); a row beyond
//     either is skipped. LPAD, RPAD and REPLACE size their result before
//     building it and skip the row rather than build beyond the budget.
//     Constant calls are computed once, at compile time.
//   - Lists of constants count. `x IN (c1, …, cn)` over constants is a
//     hashed lookup (one conversion and key of x per class of comparison,
//     with exactly go-mysql-server's InTuple result: hashedIn); a list
//     compared one by one (FIELD, CASE x WHEN, IN of row constructors)
//     counts each element and re-reads its operand once per element; a
//     list beyond the row work alone is refused (work.go).
//
// What remains data dependent, and is documented as such: the release's
// running time and memory grow with the number and the size of the rows
// (a row's work is at most its budget); an expression can make the sizes
// of its intermediate values, hence the time of a row, depend on the row's
// values, within that budget.
package sealed
