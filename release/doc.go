// Package release owns the lifecycle of a private release over a protected
// table in dpsql's SQL engine: the budget contract with the governed server
// (Governor, Request), the context that marks a release's own table scan
// (Context, InRelease) and the storage guard that refuses every other read
// of protected rows (ScanGuard, ErrAccess), the canonical MySQL text of a
// value (Texter), and the scan itself (Scan): it reads the table in a
// release context and evaluates the analyst's row filter, keys and privacy
// unit in a sealed evaluation (package sealed), handing each row's (privacy
// unit, key) to the privacy core.
//
// Every form of release — the planner's private SELECT DISTINCT and GROUP
// BY, DP_SET_UNION over a protected table, the DP_NGRAMS table function —
// runs through Scan, so that what a release evaluates, and what it can
// leak, is decided in one place; and every form runs through Run, which
// owns the order of steps 2–4 (charge or reuse, read, mechanism, keep),
// each form passing only how its rows are read and which mechanism
// releases them (Steps). The lifecycle of one release is:
//
//  1. planning: the analyst's expressions are compiled (NewScan: the
//     allow-list refuses what may not run, before anything is charged),
//     and the governor's Check refuses a release over budget;
//  2. execution: the public sides of the release's lookups and joins
//     (Public, package lookup) are read from tables the configuration
//     declares public, bounded, with no protected data in reach; then
//     Charge records every Request of the statement durably, before any
//     protected row is read;
//  3. Scan.Run reads the rows, evaluates them sealed (the filter and the
//     keys as two programs, each within the row-work bound), and calls
//     the sink with each row that passes the filter; a row whose
//     evaluation fails is skipped, as a filtered-out row — or, when the
//     release's shape allows and a cache holds them, the same pairs come
//     from a release index or corpus (Indexes: the choice of path depends
//     on the statement, the table's version and size, the configuration
//     and the analyst's own history, never on a row's values, and the
//     output is the scan's; see paths.go);
//  4. the mechanism (package setunion, dpagg, ngrams; Steps.Mechanism)
//     releases, Run keeps the result for reuse, and the caller returns only
//     the released keys.
//
// A push-down release (Steps.ReadFirst) reads its source completely before
// step 2's charge instead, and is charged only then (see Run).
//
// A release's reuse key and an expression index's key are canonical
// encodings of the analysed expression trees (canon.go, "Canonical keys"):
// every field of every node, length-prefixed, so that distinct releases
// never share a key; plus only the session variables and the day the
// expressions' evaluation reads, and the versions of the public tables
// they read, so that identical releases from any client share one.
//
// See docs/architecture.md §3 for the lifecycle in the whole engine and
// docs/privacy.md §12 (and §13 for the keys) for why each step keeps the
// release differentially private.
package release
