package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// Source is where a dataset's rows come from when they live in a database
// rather than a file:
//
//	source: {driver: mysql, dsn_env: SHOP_DSN, table: orders}
//	source: {driver: postgres, dsn_file: /etc/dpsql/pg.dsn, query: "SELECT user_id, item FROM orders"}
//
// The DSN (which holds the password) is never written in the
// configuration: it is read from an environment variable or a file when the
// dataset is loaded, and never appears in logs or errors.
type Source struct {
	// Driver is mysql (MySQL and MariaDB) or postgres (PostgreSQL).
	Driver string `yaml:"driver"`
	// DSNEnv names the environment variable that holds the DSN.
	DSNEnv string `yaml:"dsn_env"`
	// DSNFile is a file whose content (trimmed) is the DSN; relative paths
	// are resolved against the configuration file's directory.
	DSNFile string `yaml:"dsn_file"`
	// Table is the table to read, [schema.]table.
	Table string `yaml:"table"`
	// Query is a SELECT whose result is the table (instead of Table).
	Query string `yaml:"query"`
}

// Source drivers.
const (
	DriverMySQL    = "mysql"
	DriverPostgres = "postgres"
)

// Generation says how a reload of a dataset decides its load generation,
// which is part of every reuse key (server/ledger's reuse.go).
type Generation string

const (
	// GenerationSource (the default): the generation changes when the
	// dataset's configuration or its file's identity changes, never
	// because of what the rows hold; a database source has no identity
	// but its configuration, so every load of one is a new generation.
	GenerationSource Generation = "source"
	// GenerationConfig: the generation changes only when the dataset's
	// configuration does: restarts, refreshes and rewritten files keep the
	// stored releases reusable, so an analyst may be answered from a
	// release of an older snapshot, up to reuse.window after it was made.
	// Data-independent, like the default; it trades freshness for budget.
	GenerationConfig Generation = "config"
	// GenerationContent: the generation is derived from a digest of the
	// loaded schema and rows, so a load with identical content keeps the
	// stored releases reusable. It tells analysts whether a reload changed
	// the table (one bit per load outside differential privacy; see
	// docs/privacy.md §14): an administrator opts in.
	GenerationContent Generation = "content"
)

var reSourceTable = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,63}(\.[A-Za-z_][A-Za-z0-9_$]{0,63})?$`)

// Describe describes the source without its DSN, for logs, errors and the
// load generation: "mysql table orders", "postgres query SELECT …".
func (s *Source) Describe() string {
	if s.Table != "" {
		return fmt.Sprintf("%s table %s", s.Driver, s.Table)
	}
	return fmt.Sprintf("%s query %s", s.Driver, s.Query)
}

// DSN reads the DSN from the environment variable or the file. Its errors
// never contain the DSN.
func (s *Source) DSN() (string, error) {
	if s.DSNEnv != "" {
		v := strings.TrimSpace(os.Getenv(s.DSNEnv))
		if v == "" {
			return "", fmt.Errorf("the environment variable %s is unset or empty: set it to the DSN of the %s server", s.DSNEnv, s.Driver)
		}
		return v, nil
	}
	b, err := os.ReadFile(s.DSNFile)
	if err != nil {
		return "", fmt.Errorf("cannot read the DSN file: %w (source.dsn_file)", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("the DSN file %s is empty: write the DSN of the %s server in it", s.DSNFile, s.Driver)
	}
	return v, nil
}

// validateSource checks a dataset's source, refresh and generation. It
// returns true for a dataset read from a database, whose file, format and
// columns it has checked itself (columns are optional: they come from the
// source's schema), so that the caller skips the file checks.
func (v *validator) validateSource(d *Dataset, p func(...any) []any, what string, resolve func(string) string, protectedDB map[string]bool) bool {
	if d.Refresh < 0 || (d.Refresh > 0 && d.Refresh < time.Second) {
		v.errorf(p("refresh"), "%s: refresh %v: give a duration of at least 1s, such as 15m (or leave it out: no periodic refresh)", what, d.Refresh)
	}
	switch d.Generation {
	case "":
		d.Generation = GenerationSource
	case GenerationSource, GenerationConfig, GenerationContent:
	default:
		v.errorf(p("generation"), "%s: generation %q: write source (the default), config or content", what, d.Generation)
	}
	s := d.Source
	v.validateMode(d, p, what)
	if s == nil {
		return false
	}
	switch s.Driver {
	case DriverMySQL, DriverPostgres:
	case "":
		v.errorf(p("source"), "%s: source.driver is required: mysql (MySQL, MariaDB) or postgres", what)
	default:
		v.errorf(p("source", "driver"), "%s: source.driver %q: write mysql (MySQL, MariaDB) or postgres", what, s.Driver)
	}
	switch {
	case s.DSNEnv == "" && s.DSNFile == "":
		v.errorf(p("source"), "%s: source needs dsn_env (an environment variable holding the DSN) or dsn_file (a file holding it); the DSN is never written in the configuration", what)
	case s.DSNEnv != "" && s.DSNFile != "":
		v.errorf(p("source"), "%s: source: give dsn_env or dsn_file, not both", what)
	}
	s.DSNFile = resolve(s.DSNFile)
	switch {
	case s.Table == "" && s.Query == "":
		v.errorf(p("source"), "%s: source needs table (the table to read) or query (a SELECT)", what)
	case s.Table != "" && s.Query != "":
		v.errorf(p("source"), "%s: source: give table or query, not both", what)
	case s.Table != "" && !reSourceTable.MatchString(s.Table):
		v.errorf(p("source", "table"), "%s: source.table %q must be [schema.]table, each a plain name (letters, digits, _ and $)", what, s.Table)
	case s.Query != "" && !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s.Query)), "SELECT") && !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s.Query)), "WITH"):
		v.errorf(p("source", "query"), "%s: source.query must be a SELECT (or WITH … SELECT)", what)
	}
	if d.File != "" || d.Format != "" || d.Header || d.Null != nil {
		v.errorf(p("source"), "%s: a dataset read from a database takes no file, format, header or null", what)
	}
	names := map[string]bool{}
	for j := range d.Columns {
		col := &d.Columns[j]
		cp := func(rest ...any) []any { return p(append([]any{"columns", j}, rest...)...) }
		switch {
		case col.Name == "":
			v.errorf(cp(), "%s: columns[%d] needs a name", what, j)
		case !reIdent.MatchString(col.Name):
			v.errorf(cp("name"), "%s: column name %q must start with a letter or _ and contain only letters, digits, _ and $ (at most 64)", what, col.Name)
		case names[strings.ToLower(col.Name)]:
			v.errorf(cp("name"), "%s: column %q is declared twice (column names are case-insensitive)", what, col.Name)
		}
		names[strings.ToLower(col.Name)] = true
		if col.Type == "" {
			v.errorf(cp(), "%s: column %q needs a type, for example VARCHAR(64), BIGINT or TEXT (or leave columns out: they come from the source's schema)", what, col.Name)
		} else if t, err := ParseColumnType(col.Type); err != nil {
			v.errorf(cp("type"), "%s: column %q: %v", what, col.Name, err)
		} else {
			col.Type = t.String()
		}
		if col.Position != 0 {
			v.errorf(cp("position"), "%s: column %q: position applies to files; a source's columns are found by name (source: names the source column)", what, col.Name)
		}
	}
	switch {
	case d.PrivacyUnit != "" && d.Public:
		v.errorf(p("public"), "%s: a table is either protected (privacy_unit) or public, not both", what)
	case d.PrivacyUnit == "" && !d.Public:
		v.errorf(p(), "%s: say how the table is protected: privacy_unit: COLUMN names the column identifying the person whose rows are protected together; public: true lets analysts read the table without differential privacy", what)
	case d.PrivacyUnit != "":
		if len(d.Columns) > 0 && !names[strings.ToLower(d.PrivacyUnit)] {
			v.errorf(p("privacy_unit"), "%s: privacy_unit %q is not one of its columns", what, d.PrivacyUnit)
		}
		protectedDB[strings.ToLower(d.Database)] = true
	}
	return true
}
