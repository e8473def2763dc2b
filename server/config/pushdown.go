package config

// Mode says where a dataset's rows are kept.
type Mode string

const (
	// ModeMemory (the default): the rows are loaded into dpsql's column
	// store, and reloaded by refresh: and DP_RELOAD.
	ModeMemory Mode = "memory"
	// ModePushdown: a protected dataset read from a database keeps its
	// rows there; dpsql reads its schema only, and each release asks the
	// database for the grouped contributions it needs (docs/sources.md,
	// "Push-down").
	ModePushdown Mode = "pushdown"
)

// Pushdown reports whether the dataset keeps its rows in its database.
func (d Dataset) Pushdown() bool { return d.Mode == ModePushdown }

// validateMode checks a dataset's mode.
func (v *validator) validateMode(d *Dataset, p func(...any) []any, what string) {
	switch d.Mode {
	case "", ModeMemory:
		d.Mode = ""
		return
	case ModePushdown:
	default:
		v.errorf(p("mode"), "%s: mode %q: write memory (the default: rows are loaded into dpsql) or pushdown (rows stay in the database)", what, d.Mode)
		return
	}
	switch {
	case d.Source == nil:
		v.errorf(p("mode"), "%s: mode: pushdown needs a database source (source: {driver: …}): a file's rows are always loaded", what)
	case d.PrivacyUnit == "":
		v.errorf(p("mode"), "%s: mode: pushdown is for protected datasets (privacy_unit): a public table's rows are read by analysts directly, so load it (leave mode out)", what)
	case d.Generation == GenerationContent:
		v.errorf(p("generation"), "%s: generation: content needs the rows loaded to digest them; with mode: pushdown use source (the default) or config", what)
	}
}
