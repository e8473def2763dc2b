// Package dpvars provides the dp_* session variables of dpsql and the
// order in which a release reads its options from them.
//
// A release's option (ε, δ, mechanism, Δ0, m, clamping bounds, noise, …)
// is, option by option, the first of: the statement's (a
// /*+ SET_VAR(dp_…) */ hint, hints.go, or BigQuery's OPTIONS rewritten
// into hints), what the analyst SET in the session, the configured
// default of the release's key column, that of its table (defaults.go:
// the administrator's dp: sections, carried by the release's context),
// and the server default (the variable's global value). Each read records
// where the value came from, which DP_EXPLAIN shows as source.* rows.
//
// The variables themselves (vars.go; those of DP aggregates in
// aggregates.go, dp_reuse in reuse.go, dp_privacy_unit_column in unit.go)
// refuse a value they could never use when it is SET, with MySQL error
// 1231 and a message saying what is allowed. The set-union options they
// read are setunion.Options, the one representation every edge (SQL,
// flags, YAML) converts into (options.go).
//
// Every candidate value is fixed before a release and independent of the
// protected rows (the analyst's own, or the administrator's), so where an
// option comes from changes which mechanism M(o) runs but never its
// guarantee (docs/privacy.md §19).
package dpvars
