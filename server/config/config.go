// Package config reads and validates the YAML configuration of
// `dpsql serve --config FILE`: where the server listens, its TLS key pair,
// the data directory holding the privacy-budget ledger, the datasets loaded
// at start (and which of them are protected, by which privacy-unit column),
// the accounts (administrators and analysts, with password hashes, budgets
// and per-release caps) and the default DP options of new sessions.
//
// Decoding is strict: unknown keys, duplicate keys, wrong value types and
// inconsistent settings are errors that name the file, the line and what to
// change. Relative paths are resolved against the directory of the file.
// See examples/dpsql.yaml, at the root of the repository, for a documented
// configuration.
//
// The package does not import the SQL engine: column types are validated
// SQL type strings (ColumnType) and accounts carry the MySQL auth plugin name
// and authentication string to install (PasswordHash).
package config

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dpsql/dpsql/server/ledger"
	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/checks"
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// DefaultListen is the listen address when the file gives none.
const DefaultListen = "127.0.0.1:3306"

// Config is a loaded, validated configuration. Paths in it are resolved
// (relative ones joined to the directory of the file).
type Config struct {
	// Listen is the TCP address to listen on, host:port.
	Listen string `yaml:"listen"`
	// TLS, when set, enables TLS (needed for caching_sha2_password logins).
	TLS *TLS `yaml:"tls"`
	// DataDir is the directory of the privacy-budget ledger.
	DataDir string `yaml:"data_dir"`
	// Defaults are the DP options new sessions start with.
	Defaults Defaults `yaml:"defaults"`
	// Datasets are the tables loaded at start.
	Datasets []Dataset `yaml:"datasets"`
	// Accounts are the MySQL accounts.
	Accounts Accounts `yaml:"accounts"`
	// Views are created at start in the databases of the datasets (views
	// created with SQL last until the server stops).
	Views []View `yaml:"views"`
	// Limits bound statements, accounts, connections and releases.
	Limits Limits `yaml:"limits"`
	// Accounting is how releases are charged to budgets.
	Accounting Accounting `yaml:"accounting"`
	// Reuse configures release reuse: an identical release request within
	// the window is answered again from the stored result at no charge.
	Reuse Reuse `yaml:"reuse"`
	// AllowUnprovenMechanisms lets releases use the mechanisms without a
	// privacy proof (greedy_frequency_unproven, greedy_public_unproven),
	// refused otherwise. Leave it off unless you know why you need them.
	AllowUnprovenMechanisms bool `yaml:"allow_unproven_mechanisms"`
	// LoginThrottle is the back-off of failed logins (throttle.go).
	LoginThrottle LoginThrottle `yaml:"login_throttle"`

	// Path is the file the configuration was read from ("" for Parse).
	Path string `yaml:"-"`
}

// View is a stored query, created at start as CREATE VIEW database.name AS
// query. A view over a protected table is read through the same analyst
// policy as the query itself: SELECT * FROM a view of SELECT DISTINCT … is a
// private release, a view of SELECT * is refused.
type View struct {
	Database string `yaml:"database"`
	Name     string `yaml:"name"`
	Query    string `yaml:"query"`
}

// TLS names the server's certificate and key (PEM files).
type TLS struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	// Require refuses connections that do not use TLS.
	Require bool `yaml:"require"`
}

// Defaults are the defaults: section, the set-union options new sessions
// start with, as the YAML gives them: option name to value text, the names
// and values of DP_SET_UNION's options string (setunion.OptionKeys:
// mechanism, epsilon, delta, max_items, alpha, rounds; alpha also
// "default"). Each is parsed by setunion.Options.Set over setunion.Defaults
// and the result checked by setunion.Options.Validate, the one parser and
// validator of set-union options (defaults.go).
type Defaults map[string]string

// Accounting chooses the ledger's accounting: method zcdp (the default) or
// basic, and for zcdp the share of a budget's δ set aside for the releases'
// thresholds (0: accounting.DefaultThresholdShare).
type Accounting struct {
	Method         string  `yaml:"method"`
	ThresholdShare float64 `yaml:"threshold_share"`
}

// LedgerAccounting returns the accounting for ledger.Open.
func (a Accounting) LedgerAccounting() ledger.Accounting {
	m := ledger.ZCDP
	if a.Method != "" {
		m = ledger.Method(a.Method)
	}
	return ledger.Accounting{Method: m, ThresholdShare: a.ThresholdShare}
}

// Reuse configures release reuse. An identical release request (same
// release specification, options, data version and scope) within Window of
// the original is answered with the stored released result, at no charge
// and marked as reused; reuse is post-processing of a release already made,
// so it costs no privacy (package governance, type Reuse).
type Reuse struct {
	// Enabled turns reuse on or off (omitted: DefaultReuseEnabled).
	Enabled *bool `yaml:"enabled"`
	// Window is how long a release may be reused, a Go duration such as
	// "24h" (omitted or 0: DefaultReuseWindow).
	Window time.Duration `yaml:"window"`
	// Scope is "analyst" (the default: an analyst reuses only their own
	// releases) or "database" (any analyst with a budget on the database
	// reuses any other's: the analysts of the database pool their
	// releases, so each one's guarantee is the sum of their budgets).
	Scope string `yaml:"scope"`
}

// Defaults of the reuse section.
const (
	DefaultReuseEnabled = true
	DefaultReuseWindow  = 24 * time.Hour
	DefaultReuseScope   = "analyst"
)

// On reports whether reuse is enabled.
func (r Reuse) On() bool {
	if r.Enabled == nil {
		return DefaultReuseEnabled
	}
	return *r.Enabled
}

// EffectiveWindow returns the window, DefaultReuseWindow when unset.
func (r Reuse) EffectiveWindow() time.Duration {
	if r.Window <= 0 {
		return DefaultReuseWindow
	}
	return r.Window
}

// EffectiveScope returns the scope, DefaultReuseScope when unset.
func (r Reuse) EffectiveScope() string {
	if r.Scope == "" {
		return DefaultReuseScope
	}
	return r.Scope
}

// Limits are the server's resource limits; an omitted (zero) field keeps
// its default (docs/deployment.md#configuration-limits lists them all).
// Sizes are bytes, times are Go durations ("10m", "30s").
type Limits struct {
	MaxStatementBytes        int           `yaml:"max_statement_bytes"`
	MaxStatementTokens       int           `yaml:"max_statement_tokens"`
	MaxOperators             int           `yaml:"max_operators"`
	MaxNesting               int           `yaml:"max_nesting"`
	MaxInList                int           `yaml:"max_in_list"`
	MaxExecutionTime         time.Duration `yaml:"max_execution_time"`
	MaxStringBytes           int           `yaml:"max_string_bytes"`
	MaxStatementsPerAccount  int           `yaml:"max_statements_per_account"`
	MaxConnections           int           `yaml:"max_connections"`
	AdminConnections         int           `yaml:"admin_connections"`
	MaxConnectionsPerAccount int           `yaml:"max_connections_per_account"`
	HandshakeTimeout         time.Duration `yaml:"handshake_timeout"`
	MaxPendingHandshakes     int           `yaml:"max_pending_handshakes"`
	// MaxPendingHandshakesPerAddress: at most this many of them from one
	// client address (default: half of max_pending_handshakes).
	MaxPendingHandshakesPerAddress int `yaml:"max_pending_handshakes_per_address"`
	// MaxMemoryBytes bounds the process's memory: above it the most recent
	// analyst statement is stopped (error 1041). 0: 70% of the machine's
	// (or cgroup's) memory, 90% of GOMEMLIMIT when set; -1: no bound.
	MaxMemoryBytes int64 `yaml:"max_memory_bytes"`
	// MaxUserVariableBytes bounds what one session's user variables hold
	// together (default 16 MiB).
	MaxUserVariableBytes int `yaml:"max_user_variable_bytes"`
	// ReleaseValueBytes and ReleaseRowWork bound the sealed evaluation of a
	// release's expressions (values produced, bytes read per row).
	ReleaseValueBytes int `yaml:"release_value_bytes"`
	ReleaseRowWork    int `yaml:"release_row_work"`
	// ReleaseIndexBytes bounds the memory of the release indexes (per
	// protected table and column or key expression, the grouped pairs that
	// releases take instead of scanning, and the n-gram corpora of text
	// columns; release.Indexes; expressions' indexes, each analyst's own, share half of
	// it). 0: 512 MiB; -1: none, every release scans.
	ReleaseIndexBytes int64 `yaml:"release_index_bytes"`
	// PublicLookupRows and PublicLookupBytes bound the public side of each
	// public lookup or join of a release (lookup.DefaultLimits: 1,048,576
	// rows, 64 MiB).
	PublicLookupRows  int `yaml:"public_lookup_rows"`
	PublicLookupBytes int `yaml:"public_lookup_bytes"`
	// MinEpsilon, MinDelta and MaxDelta bound every release's ε and δ
	// (governance.DefaultBounds: 0.001, 1e-15, 1e-5); MaxBudgetDelta bounds
	// the δ of a budget (default 1e-4).
	MinEpsilon     float64 `yaml:"min_epsilon"`
	MinDelta       float64 `yaml:"min_delta"`
	MaxDelta       float64 `yaml:"max_delta"`
	MaxBudgetDelta float64 `yaml:"max_budget_delta"`
}

// DefaultMaxBudgetDelta is the largest δ of a budget unless
// limits.max_budget_delta raises it.
const DefaultMaxBudgetDelta = 1e-4

// Dataset is a table loaded at start from a file.
type Dataset struct {
	Database string `yaml:"database"`
	Table    string `yaml:"table"`
	// File is the data file; relative paths are resolved against the
	// configuration file's directory.
	File string `yaml:"file"`
	// Format is tsv, csv, jsonl or parquet; empty: from the file name.
	Format tabfile.Format `yaml:"format"`
	// Header (tsv, csv): the first row names the columns.
	Header bool `yaml:"header"`
	// Null (tsv, csv): the field text that stands for NULL, e.g. '\N'.
	Null *string `yaml:"null"`
	// Columns are the table's columns, in order.
	Columns []Column `yaml:"columns"`
	// PrivacyUnit names the column identifying the person (user) whose
	// rows are protected together; it makes the table protected.
	PrivacyUnit string `yaml:"privacy_unit"`
	// Public marks an unprotected table analysts may read without DP. A
	// dataset must set exactly one of PrivacyUnit and Public.
	Public bool `yaml:"public"`
	// Source, instead of File, reads the table from a database (source.go).
	// It, Refresh and Generation are left out of the JSON that describes
	// a file dataset's load generation (server's datasetSource), which
	// therefore stays what it was before they existed.
	Source *Source `yaml:"source" json:"-"`
	// Refresh, when positive, reloads the dataset that often (source.go).
	Refresh time.Duration `yaml:"refresh" json:"-"`
	// Generation is how loads decide the load generation (source.go).
	Generation Generation `yaml:"generation" json:"-"`
	// Mode is memory (the default: the rows are loaded into dpsql) or
	// pushdown (a database dataset whose rows stay in the database;
	// pushdown.go).
	Mode Mode `yaml:"mode" json:"mode,omitempty"`
	// DP are the table's default DP options (defaults.go).
	DP *TableDP `yaml:"dp" json:"-"`
}

// Protected reports whether the table is protected (has a privacy unit).
func (d Dataset) Protected() bool { return d.PrivacyUnit != "" }

// QualifiedName returns database.table.
func (d Dataset) QualifiedName() string { return d.Database + "." + d.Table }

// SourceOptions returns the tabfile options that read the dataset's file
// with its columns in table order.
func (d Dataset) SourceOptions() tabfile.Options {
	o := tabfile.Options{Format: d.Format, Header: d.Header, Null: d.Null}
	for i, c := range d.Columns {
		switch {
		case c.Position > 0:
			o.Columns = append(o.Columns, tabfile.Column{Position: c.Position})
		case (d.Format == tabfile.TSV || d.Format == tabfile.CSV) && !d.Header:
			o.Columns = append(o.Columns, tabfile.Column{Position: i + 1})
		case c.Source != "":
			o.Columns = append(o.Columns, tabfile.Column{Name: c.Source})
		default:
			o.Columns = append(o.Columns, tabfile.Column{Name: c.Name})
		}
	}
	return o
}

// Column is a column of a dataset.
type Column struct {
	// Name is the SQL column name.
	Name string `yaml:"name"`
	// Type is the SQL type, e.g. VARCHAR(64), BIGINT, TEXT (see ColumnType).
	// Load replaces it with its canonical spelling.
	Type string `yaml:"type"`
	// Source is the field to read when it differs from Name: the header
	// name (tsv/csv with header), the JSON key, or the Parquet column path
	// (dots for nested groups).
	Source string `yaml:"source"`
	// Position is the 1-based field number (tsv/csv); without a header it
	// defaults to the column's place in the list.
	Position int `yaml:"position"`
	// DP are the column's default DP options (defaults.go).
	DP *ColumnDP `yaml:"dp" json:"-"`
}

// Accounts lists the MySQL accounts.
type Accounts struct {
	Admins   []Admin   `yaml:"admins"`
	Analysts []Analyst `yaml:"analysts"`
}

// Admin is an administrator: full SQL on every database, including reading
// protected tables, loading data and granting.
type Admin struct {
	User string `yaml:"user"`
	// Host is the MySQL account host: "localhost" (the default for
	// administrators: loopback connections only), "%" (any host) or an exact
	// address.
	Host string `yaml:"host"`
	// PasswordHash is the hash printed by `dpsql passwd`.
	PasswordHash string `yaml:"password_hash"`

	// Password is PasswordHash parsed (set by Load).
	Password PasswordHash `yaml:"-"`
}

// Analyst may read public tables and obtain DP releases over protected
// ones, each charged to the analyst's budget on that database.
type Analyst struct {
	User string `yaml:"user"`
	// Host is the MySQL account host, "%" (the default) or as for Admin.
	Host         string `yaml:"host"`
	PasswordHash string `yaml:"password_hash"`
	// MaxRelease caps every single release of this analyst, on every
	// database, unless a budget sets its own cap.
	MaxRelease *Release `yaml:"max_release"`
	// Budgets are the analyst's total allowances, one per database.
	Budgets []Budget `yaml:"budgets"`

	Password PasswordHash `yaml:"-"`
}

// Budget is an analyst's allowance on one database: the total (ε, δ) of
// all releases over its protected tables (basic composition, see package
// ledger).
type Budget struct {
	Database string  `yaml:"database"`
	Epsilon  float64 `yaml:"epsilon"`
	Delta    float64 `yaml:"delta"`
	// MaxRelease caps a single release on this database: each field it
	// sets overrides the same field of the analyst's MaxRelease, and a
	// field it omits keeps the analyst's.
	MaxRelease *Release `yaml:"max_release"`
}

// Release is a per-release cap; a zero (omitted) component is no cap.
type Release struct {
	Epsilon float64 `yaml:"epsilon"`
	Delta   float64 `yaml:"delta"`
}

// LedgerLimits returns the budgets of all analysts for ledger.SetLimits,
// with the effective per-release caps.
func (c *Config) LedgerLimits() []ledger.Limit {
	var out []ledger.Limit
	for _, a := range c.Accounts.Analysts {
		for _, b := range a.Budgets {
			lim := ledger.Limit{Analyst: a.User, Database: b.Database, Budget: ledger.Amount{Epsilon: b.Epsilon, Delta: b.Delta}}
			// Field by field: the budget's cap where it sets one, the
			// analyst's otherwise (a budget capping only ε keeps the
			// analyst's δ cap).
			for _, capp := range []*Release{a.MaxRelease, b.MaxRelease} {
				if capp == nil {
					continue
				}
				if capp.Epsilon > 0 {
					lim.MaxRelease.Epsilon = capp.Epsilon
				}
				if capp.Delta > 0 {
					lim.MaxRelease.Delta = capp.Delta
				}
			}
			out = append(out, lim)
		}
	}
	return out
}

// Databases returns the database names declared by the datasets, in order
// of first appearance.
func (c *Config) Databases() []string {
	var out []string
	for _, d := range c.Datasets {
		if !slices.ContainsFunc(out, func(s string) bool { return strings.EqualFold(s, d.Database) }) {
			out = append(out, d.Database)
		}
	}
	return out
}

// Load reads, decodes and validates the configuration file at path. The
// error lists every problem found, each with its line.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(data, abs, filepath.Dir(abs))
}

// Parse decodes and validates a configuration given as YAML text; relative
// paths are resolved against dir.
func Parse(data []byte, dir string) (*Config, error) {
	return parse(data, "", dir)
}

func parse(data []byte, path, dir string) (*Config, error) {
	name := path
	if name == "" {
		name = "config"
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: the configuration is empty; start from examples/dpsql.yaml or examples/searches.yaml (README.md, section Your own data)", name)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, decodeError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one YAML document (---); put the whole configuration in one", name)
	}
	c.Path = path
	v := &validator{name: name, root: root.Content[0]}
	v.validate(&c, dir)
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return &c, nil
}

var (
	reUnknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)
	reLine         = regexp.MustCompile(`^line (\d+): `)
)

// decodeError rewrites the decoder's errors as FILE:LINE: message, naming
// the keys allowed where an unknown one was found.
func decodeError(name string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var errs []error
	for _, e := range te.Errors {
		if m := reUnknownField.FindStringSubmatch(e); m != nil {
			errs = append(errs, fmt.Errorf("%s:%s: unknown key %q%s", name, m[1], m[2], allowedKeys(m[3])))
			continue
		}
		if m := reLine.FindStringSubmatch(e); m != nil {
			errs = append(errs, fmt.Errorf("%s:%s: %s", name, m[1], strings.TrimPrefix(e, m[0])))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %s", name, e))
	}
	return errors.Join(errs...)
}

var configTypes = map[string]reflect.Type{}

func init() {
	for _, v := range []any{Config{}, TLS{}, Dataset{}, Source{}, Column{}, TableDP{}, ColumnDP{}, Accounts{}, Admin{}, Analyst{}, Budget{}, Release{}, View{}, Reuse{}} {
		t := reflect.TypeOf(v)
		configTypes[t.String()] = t
	}
}

// allowedKeys lists the YAML keys of the named config type.
func allowedKeys(typeName string) string {
	t, ok := configTypes[typeName]
	if !ok {
		return ""
	}
	var keys []string
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return fmt.Sprintf(" (allowed here: %s)", strings.Join(keys, ", "))
}

// validator collects validation errors with the line of the offending node.
type validator struct {
	name string
	root *yaml.Node
	errs []error
}

// errorf records an error about the node at path (keys and indices from
// the document root), reporting the line of the deepest node that exists.
func (v *validator) errorf(path []any, format string, args ...any) {
	n, line := v.root, v.root.Line
	for _, p := range path {
		var next *yaml.Node
		nextLine := 0
		switch p := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == p {
						next, nextLine = n.Content[i+1], n.Content[i].Line
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && p < len(n.Content) {
				next = n.Content[p]
				nextLine = next.Line
			}
		}
		if next == nil {
			break
		}
		n, line = next, nextLine
	}
	v.errs = append(v.errs, fmt.Errorf("%s:%d: %s", v.name, line, fmt.Sprintf(format, args...)))
}

func at(path ...any) []any { return path }

var (
	reIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`)
	reUser  = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)
)

var reservedDatabases = []string{"mysql", "information_schema", "performance_schema", "sys"}

func (v *validator) validate(c *Config, dir string) {
	resolve := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	v.validateServer(c, resolve)
	tables, protectedDB := v.validateDatasets(c, resolve)
	v.validateViews(c, tables)
	v.validateAccounts(c, protectedDB)
}

// validateServer checks the server-wide settings: listen, tls, data_dir,
// defaults, accounting, login throttling, reuse and limits.
func (v *validator) validateServer(c *Config, resolve func(string) string) {
	// listen
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if host, port, err := net.SplitHostPort(c.Listen); err != nil {
		v.errorf(at("listen"), "listen %q is not host:port (for example 127.0.0.1:3306 or 0.0.0.0:3306): %v", c.Listen, err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.errorf(at("listen"), "listen %q: the port must be a number from 0 to 65535", c.Listen)
	} else if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		v.errorf(at("listen"), "listen %q: the host must be an IP address or localhost", c.Listen)
	}

	// tls
	if c.TLS != nil {
		if c.TLS.Cert == "" || c.TLS.Key == "" {
			v.errorf(at("tls"), "tls needs both cert and key (PEM files)")
		}
		c.TLS.Cert, c.TLS.Key = resolve(c.TLS.Cert), resolve(c.TLS.Key)
	}

	// data_dir
	if c.DataDir == "" {
		v.errorf(nil, "data_dir is required: the directory where dpsql keeps the privacy-budget ledger")
	}
	c.DataDir = resolve(c.DataDir)

	// defaults
	v.validateDefaults(c.Defaults) // defaults.go

	// accounting
	switch strings.ToLower(c.Accounting.Method) {
	case "", string(ledger.ZCDP), string(ledger.Basic):
		c.Accounting.Method = strings.ToLower(c.Accounting.Method)
	default:
		v.errorf(at("accounting", "method"), "accounting.method must be zcdp (the default: Gaussian releases add up in zero-concentrated DP) or basic (Σε, Σδ), got %q", c.Accounting.Method)
	}
	if s := c.Accounting.ThresholdShare; s != 0 && !(s > 0 && s < 1) {
		v.errorf(at("accounting", "threshold_share"), "accounting.threshold_share must be in (0, 1) (0 or omitted: %v), got %v", accounting.DefaultThresholdShare, s)
	}

	c.LoginThrottle.validate(v)

	// reuse
	switch strings.ToLower(c.Reuse.Scope) {
	case "", "analyst", "database":
		c.Reuse.Scope = strings.ToLower(c.Reuse.Scope)
	default:
		v.errorf(at("reuse", "scope"), "reuse.scope must be analyst (an analyst reuses only their own releases; the default) or database (any analyst with a budget on the database reuses the others' releases), got %q", c.Reuse.Scope)
	}
	if c.Reuse.Window < 0 {
		v.errorf(at("reuse", "window"), "reuse.window must be a duration ≥ 0 such as 24h (0 or omitted: %v), got %v", DefaultReuseWindow, c.Reuse.Window)
	}

	// limits
	lv := reflect.ValueOf(c.Limits)
	for i := range lv.NumField() {
		f := lv.Field(i)
		key, _, _ := strings.Cut(lv.Type().Field(i).Tag.Get("yaml"), ",")
		// Two limits take -1 for "none" (documented with their fields).
		minusOne := map[string]string{"max_memory_bytes": "no bound", "release_index_bytes": "no index, every release scans"}
		if (f.Kind() == reflect.Int || f.Kind() == reflect.Int64) && f.Int() < 0 && !(minusOne[key] != "" && f.Int() == -1) {
			if none := minusOne[key]; none != "" {
				v.errorf(at("limits", key), "limits.%s must be ≥ 0 (0 or omitted: the default) or -1 (%s), got %v", key, none, f.Interface())
				continue
			}
			v.errorf(at("limits", key), "limits.%s must be ≥ 0 (0 or omitted: the default), got %v", key, f.Interface())
		}
		if f.Kind() == reflect.Float64 && (!(f.Float() >= 0) || math.IsInf(f.Float(), 0) || f.Float() >= 1 && key != "min_epsilon") {
			v.errorf(at("limits", key), "limits.%s must be a number ≥ 0 (0 or omitted: the default) and, for a δ, below 1; got %v", key, f.Interface())
		}
	}
}

// validateDatasets checks every dataset and returns the tables declared
// (lower-cased database.table → index) and the databases holding a
// protected table.
func (v *validator) validateDatasets(c *Config, resolve func(string) string) (tables map[string]int, protectedDB map[string]bool) {
	// datasets
	if len(c.Datasets) == 0 {
		v.errorf(nil, "datasets: declare at least one table to serve")
	}
	tables = map[string]int{}
	protectedDB = map[string]bool{}
	for i := range c.Datasets {
		d := &c.Datasets[i]
		p := func(rest ...any) []any { return append([]any{"datasets", i}, rest...) }
		what := fmt.Sprintf("datasets[%d]", i)
		if d.Database != "" && d.Table != "" {
			what = fmt.Sprintf("dataset %s.%s", d.Database, d.Table)
		}
		switch {
		case d.Database == "":
			v.errorf(p(), "%s: database is required", what)
		case !reIdent.MatchString(d.Database):
			v.errorf(p("database"), "%s: database name %q must start with a letter or _ and contain only letters, digits, _ and $ (at most 64)", what, d.Database)
		case slices.Contains(reservedDatabases, strings.ToLower(d.Database)):
			v.errorf(p("database"), "%s: database name %q is reserved by MySQL; choose another", what, d.Database)
		}
		switch {
		case d.Table == "":
			v.errorf(p(), "%s: table is required", what)
		case !reIdent.MatchString(d.Table):
			v.errorf(p("table"), "%s: table name %q must start with a letter or _ and contain only letters, digits, _ and $ (at most 64)", what, d.Table)
		}
		key := strings.ToLower(d.Database + "." + d.Table)
		if j, dup := tables[key]; dup && d.Database != "" && d.Table != "" {
			v.errorf(p("table"), "%s is declared twice (also datasets[%d]); table names are case-insensitive", what, j)
		}
		tables[key] = i

		v.validateDP(p, what, d) // defaults.go
		if v.validateSource(d, p, what, resolve, protectedDB) {
			continue
		}
		names := v.validateFile(d, p, what, resolve)
		v.validateProtection(d, p, what, names, protectedDB)
	}
	return tables, protectedDB
}

// validateFile checks a file dataset's file, format and columns, and
// returns its column names (lower-cased).
func (v *validator) validateFile(d *Dataset, p func(...any) []any, what string, resolve func(string) string) map[string]bool {
	if d.File == "" {
		v.errorf(p(), "%s: file is required (the CSV, TSV, JSON lines or Parquet file to load), or source: to read a database", what)
	}
	d.File = resolve(d.File)
	if d.Format == "" {
		d.Format = tabfile.FormatOf(d.File)
	} else if f, err := tabfile.ParseFormat(string(d.Format)); err != nil {
		v.errorf(p("format"), "%s: %v", what, err)
	} else {
		d.Format = f
	}
	delimited := d.Format == tabfile.TSV || d.Format == tabfile.CSV
	if d.Header && !delimited {
		v.errorf(p("header"), "%s: header applies to tsv and csv files only (%s columns are found by name)", what, d.Format)
	}
	if d.Null != nil && !delimited {
		v.errorf(p("null"), "%s: null applies to tsv and csv files only (%s files mark NULL themselves)", what, d.Format)
	}

	if len(d.Columns) == 0 {
		v.errorf(p(), "%s: columns are required: list each column's name and SQL type", what)
	}
	names := map[string]bool{}
	positions := map[int]string{}
	for j := range d.Columns {
		col := &d.Columns[j]
		cp := func(rest ...any) []any { return p(append([]any{"columns", j}, rest...)...) }
		if col.Name == "" {
			v.errorf(cp(), "%s: columns[%d] needs a name", what, j)
		} else if !reIdent.MatchString(col.Name) {
			v.errorf(cp("name"), "%s: column name %q must start with a letter or _ and contain only letters, digits, _ and $ (at most 64)", what, col.Name)
		} else if names[strings.ToLower(col.Name)] {
			v.errorf(cp("name"), "%s: column %q is declared twice (column names are case-insensitive)", what, col.Name)
		}
		names[strings.ToLower(col.Name)] = true
		if col.Type == "" {
			v.errorf(cp(), "%s: column %q needs a type, for example VARCHAR(64), BIGINT or TEXT", what, col.Name)
		} else if t, err := ParseColumnType(col.Type); err != nil {
			v.errorf(cp("type"), "%s: column %q: %v", what, col.Name, err)
		} else {
			col.Type = t.String()
		}
		if col.Position != 0 {
			if !delimited {
				v.errorf(cp("position"), "%s: column %q: position applies to tsv and csv files; %s columns are found by name (use source: to name the field)", what, col.Name, d.Format)
			} else if col.Position < 0 {
				v.errorf(cp("position"), "%s: column %q: position counts from 1", what, col.Name)
			}
		}
		if col.Source != "" && delimited && !d.Header {
			v.errorf(cp("source"), "%s: column %q: the file has no header, so fields are found by position, not by name (set header: true or use position:)", what, col.Name)
		}
		if col.Source != "" && col.Position != 0 {
			v.errorf(cp(), "%s: column %q: give source or position, not both", what, col.Name)
		}
		pos := col.Position
		if pos == 0 && delimited && !d.Header {
			pos = j + 1
		}
		if pos > 0 {
			if other, dup := positions[pos]; dup {
				v.errorf(cp(), "%s: columns %q and %q both read field %d", what, other, col.Name, pos)
			}
			positions[pos] = col.Name
		}
	}
	return names
}

// validateProtection checks that a dataset is either protected by a
// privacy unit among its columns or public, and records protected
// databases.
func (v *validator) validateProtection(d *Dataset, p func(...any) []any, what string, names map[string]bool, protectedDB map[string]bool) {
	switch {
	case d.PrivacyUnit != "" && d.Public:
		v.errorf(p("public"), "%s: a table is either protected (privacy_unit) or public, not both", what)
	case d.PrivacyUnit == "" && !d.Public:
		v.errorf(p(), "%s: say how the table is protected: privacy_unit: COLUMN names the column identifying the person whose rows are protected together; public: true lets analysts read the table without differential privacy", what)
	case d.PrivacyUnit != "":
		if !names[strings.ToLower(d.PrivacyUnit)] {
			var cols []string
			for _, c := range d.Columns {
				cols = append(cols, c.Name)
			}
			v.errorf(p("privacy_unit"), "%s: privacy_unit %q is not one of its columns (%s)", what, d.PrivacyUnit, strings.Join(cols, ", "))
		}
		protectedDB[strings.ToLower(d.Database)] = true
	}
}

// validateViews checks the stored views against the declared tables.
func (v *validator) validateViews(c *Config, tables map[string]int) {
	// views
	isTable := func(key string) bool { _, ok := tables[key]; return ok }
	for i, w := range c.Views {
		p := func(rest ...any) []any { return append([]any{"views", i}, rest...) }
		what := fmt.Sprintf("views[%d]", i)
		switch {
		case !slices.ContainsFunc(c.Datasets, func(d Dataset) bool { return strings.EqualFold(d.Database, w.Database) }):
			v.errorf(p("database"), "%s: database %q has no dataset; a view lives in a database of the datasets", what, w.Database)
		case !reIdent.MatchString(w.Name):
			v.errorf(p("name"), "%s: view name %q must start with a letter or _ and contain only letters, digits, _ and $ (at most 64)", what, w.Name)
		case isTable(strings.ToLower(w.Database + "." + w.Name)):
			v.errorf(p("name"), "%s: %s.%s is already a table", what, w.Database, w.Name)
		case strings.TrimSpace(w.Query) == "":
			v.errorf(p("query"), "%s: query is required (a SELECT statement)", what)
		}
		for j := range i {
			if strings.EqualFold(c.Views[j].Database, w.Database) && strings.EqualFold(c.Views[j].Name, w.Name) {
				v.errorf(p("name"), "%s: view %s.%s is declared twice", what, w.Database, w.Name)
			}
		}
	}
}

// validateAccounts checks the admin and analyst accounts and the analysts'
// budgets.
func (v *validator) validateAccounts(c *Config, protectedDB map[string]bool) {
	// accounts
	users := map[string]string{}
	account := func(p []any, kind, user, host, hash, defaultHost string) (string, PasswordHash) {
		what := kind
		if user != "" {
			what = fmt.Sprintf("%s %q", kind, user)
		}
		switch {
		case user == "":
			v.errorf(p, "%s: user is required", kind)
		case !reUser.MatchString(user):
			v.errorf(append(p, "user"), "%s: user names may contain letters, digits, '_', '.' and '-' (at most 32)", what)
		default:
			if prev, dup := users[user]; dup {
				v.errorf(append(p, "user"), "%s: duplicate account (already declared as %s); each user name may appear once", what, prev)
			}
			users[user] = kind
		}
		if host == "" {
			host = defaultHost
		}
		if host != "%" && strings.ContainsAny(host, "%_'\"\\ ") {
			v.errorf(append(p, "host"), "%s: host %q: use \"%%\" (any host), \"localhost\" or an exact address; go-mysql-server v0.20.0 has no partial host patterns", what, host)
		}
		var ph PasswordHash
		if hash == "" {
			v.errorf(p, "%s: password_hash is required; run `dpsql passwd` and paste the hash it prints", what)
		} else if h, err := ParsePasswordHash(hash); err != nil {
			v.errorf(append(p, "password_hash"), "%s: %v", what, err)
		} else {
			ph = h
		}
		return host, ph
	}
	for i := range c.Accounts.Admins {
		a := &c.Accounts.Admins[i]
		a.Host, a.Password = account(at("accounts", "admins", i), "admin", a.User, a.Host, a.PasswordHash, "localhost")
	}
	for i := range c.Accounts.Analysts {
		a := &c.Accounts.Analysts[i]
		p := func(rest ...any) []any { return append([]any{"accounts", "analysts", i}, rest...) }
		a.Host, a.Password = account(p(), "analyst", a.User, a.Host, a.PasswordHash, "%")
		what := fmt.Sprintf("analyst %q", a.User)
		if a.MaxRelease != nil {
			v.release(p("max_release"), what, a.MaxRelease)
		}
		seen := map[string]bool{}
		for j := range a.Budgets {
			b := &a.Budgets[j]
			bp := func(rest ...any) []any { return p(append([]any{"budgets", j}, rest...)...) }
			bwhat := fmt.Sprintf("%s, budget on %q", what, b.Database)
			switch db := strings.ToLower(b.Database); {
			case b.Database == "":
				v.errorf(bp(), "%s: budgets[%d] needs a database", what, j)
			case seen[db]:
				v.errorf(bp("database"), "%s: two budgets for database %q; give one", what, b.Database)
			case !slices.ContainsFunc(c.Datasets, func(d Dataset) bool { return strings.EqualFold(d.Database, b.Database) }):
				v.errorf(bp("database"), "%s: no dataset declares database %q", what, b.Database)
			case !protectedDB[db]:
				v.errorf(bp("database"), "%s: database %q has no protected table, so there is nothing to spend a budget on", what, b.Database)
			}
			seen[strings.ToLower(b.Database)] = true
			if err := checks.Epsilon(b.Epsilon); err != nil {
				v.errorf(bp("epsilon"), "%s: %v", bwhat, err)
			}
			maxBudgetDelta := c.Limits.MaxBudgetDelta
			if maxBudgetDelta == 0 {
				maxBudgetDelta = DefaultMaxBudgetDelta
			}
			switch {
			case checks.Delta(b.Delta) != nil:
				v.errorf(bp("delta"), "%s: %v (every set-union mechanism needs δ > 0)", bwhat, checks.Delta(b.Delta))
			case b.Delta > maxBudgetDelta:
				v.errorf(bp("delta"), "%s: delta %v is above %v: over its releases the analyst would learn values that one person holds with probability up to δ; lower it, or raise limits.max_budget_delta if you mean it", bwhat, b.Delta, maxBudgetDelta)
			}
			if b.MaxRelease != nil {
				v.release(bp("max_release"), bwhat, b.MaxRelease)
			}
		}
	}
	if len(c.Accounts.Admins)+len(c.Accounts.Analysts) == 0 {
		v.errorf(nil, "accounts: declare at least one admin or analyst")
	}
}

func (v *validator) release(p []any, what string, r *Release) {
	if r.Epsilon == 0 && r.Delta == 0 {
		v.errorf(p, "%s: max_release needs epsilon and/or delta", what)
	}
	if err := checks.EpsilonOrZero(r.Epsilon); err != nil {
		v.errorf(append(p, "epsilon"), "%s: max_release %v (0: no cap)", what, err)
	}
	if err := checks.DeltaOrZero(r.Delta); err != nil {
		v.errorf(append(p, "delta"), "%s: max_release %v (0: no cap)", what, err)
	}
}

// CheckFiles checks what Load does not: that every dataset file exists and
// is a regular file, and that the TLS key pair loads. Call it before loading
// data, so that a typo fails the start at once.
func (c *Config) CheckFiles() error {
	var errs []error
	for _, d := range c.Datasets {
		if d.Source != nil {
			continue // read at load (source.go)
		}
		st, err := os.Stat(d.File)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("dataset %s: %w", d.QualifiedName(), err))
		case !st.Mode().IsRegular():
			errs = append(errs, fmt.Errorf("dataset %s: %s is not a regular file", d.QualifiedName(), d.File))
		}
	}
	if c.TLS != nil {
		if _, err := tls.LoadX509KeyPair(c.TLS.Cert, c.TLS.Key); err != nil {
			errs = append(errs, fmt.Errorf("tls: cannot load the key pair %s, %s: %w", c.TLS.Cert, c.TLS.Key, err))
		}
	}
	if c.Path != "" && len(errs) > 0 {
		return fmt.Errorf("%s: %w", c.Path, errors.Join(errs...))
	}
	return errors.Join(errs...)
}
