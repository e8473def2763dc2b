package config

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/server/ledger"
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

func TestExampleConfigLoads(t *testing.T) {
	root := testenv.ModuleRoot()
	if root == "" {
		t.Fatal("module root not found")
	}
	path := filepath.Join(root, "examples", "dpsql.yaml")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "examples")
	if c.Listen != "127.0.0.1:3306" || c.TLS != nil || c.DataDir != filepath.Join(dir, "dpsql-data") || c.Path != path {
		t.Errorf("server settings: listen %q tls %v data_dir %q path %q", c.Listen, c.TLS, c.DataDir, c.Path)
	}
	o := c.Defaults.Options()
	if o.Mechanism != setunion.DefaultMechanism || o.Epsilon != 1 || o.Delta != 1e-6 || o.MaxItems != setunion.DefaultMaxItems || o.Alpha != nil || o.Rounds != setunion.DefaultRounds {
		t.Errorf("defaults %+v", o)
	}
	if len(c.Datasets) != 2 {
		t.Fatalf("%d datasets", len(c.Datasets))
	}
	commits, stop := c.Datasets[0], c.Datasets[1]
	if commits.QualifiedName() != "rails.commits" || !commits.Protected() || commits.PrivacyUnit != "user_id" ||
		commits.Format != tabfile.TSV || commits.File != filepath.Join(root, "..", "shared", "data", "git_rails.tsv.gz") ||
		commits.Columns[0].Type != "VARCHAR(16)" || commits.Columns[1].Type != "TEXT" {
		t.Errorf("commits: %+v", commits)
	}
	if stop.Protected() || !stop.Public || stop.Format != tabfile.CSV || !stop.Header || stop.File != filepath.Join(dir, "stopwords.csv") {
		t.Errorf("stopwords: %+v", stop)
	}
	if got := c.Databases(); len(got) != 1 || got[0] != "rails" {
		t.Errorf("databases %v", got)
	}
	admin := c.Accounts.Admins[0]
	if admin.User != "admin" || admin.Host != "localhost" || admin.Password.Plugin != NativePassword {
		t.Errorf("admin %+v", admin)
	}
	alice, carol := c.Accounts.Analysts[0], c.Accounts.Analysts[1]
	// Both log in without TLS (the example has none configured).
	if alice.Host != "%" || alice.Password.Plugin != NativePassword || carol.Host != "%" || carol.Password.Plugin != NativePassword {
		t.Errorf("analysts %+v %+v", alice, carol)
	}
	// The example's documented passwords match its hashes.
	for _, c := range []struct {
		h  PasswordHash
		pw string
	}{{admin.Password, "admin-example"}, {alice.Password, "alice-example"}, {carol.Password, "carol-example"}} {
		if !matches(t, c.h, c.pw) {
			t.Errorf("%s hash does not match %q", c.h.Plugin, c.pw)
		}
	}
	want := []ledger.Limit{
		{Analyst: "alice", Database: "rails", Budget: ledger.Amount{Epsilon: 10, Delta: 1e-5}, MaxRelease: ledger.Amount{Epsilon: 1, Delta: 1e-6}},
		{Analyst: "carol", Database: "rails", Budget: ledger.Amount{Epsilon: 4, Delta: 4e-6}, MaxRelease: ledger.Amount{Epsilon: 0.5}},
	}
	if got := c.LedgerLimits(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("limits %+v", got)
	}
	// The ledger accepts them.
	l, err := ledger.Open(t.TempDir(), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetLimits(t.Context(), c.LedgerLimits()); err != nil {
		t.Fatal(err)
	}

	// With the corpus where the test environment has it, the files check
	// and the tables read through their source options.
	c.Datasets[0].File = testenv.DataFile(t, "git_rails.tsv.gz")
	if err := c.CheckFiles(); err != nil {
		t.Fatal(err)
	}
	for _, d := range c.Datasets {
		s, err := tabfile.OpenSource(d.File, d.SourceOptions())
		if err != nil {
			t.Fatal(err)
		}
		f, err := s.Next()
		if err != nil || len(f) != len(d.Columns) {
			t.Errorf("%s: first row %q, %v", d.QualifiedName(), f, err)
		}
		if d.Table == "stopwords" && (string(f[0]) != "a" || string(f[1]) != "en") {
			t.Errorf("stopwords first row %q", f)
		}
		s.Close()
	}
}

// matches reports whether password matches h, verifying as
// go-mysql-server does.
func matches(t *testing.T, h PasswordHash, password string) bool {
	t.Helper()
	switch h.Plugin {
	case NativePassword:
		s1 := sha1.Sum([]byte(password))
		s2 := sha1.Sum(s1[:])
		return h.AuthString == "*"+strings.ToUpper(hex.EncodeToString(s2[:]))
	case CachingSha2Password:
		_, it, salt, _, err := mysql.DeserializeCachingSha2PasswordAuthString([]byte(h.AuthString))
		if err != nil {
			t.Fatal(err)
		}
		got, err := mysql.SerializeCachingSha2PasswordAuthString(password, salt, it)
		if err != nil {
			t.Fatal(err)
		}
		return string(got) == h.AuthString
	}
	return false
}

const validConfig = `listen: 0.0.0.0:3307
data_dir: /var/lib/dpsql
datasets:
  - database: demo
    table: posts
    file: posts.tsv.gz
    columns:
      - name: user_id
        type: bigint unsigned
      - name: text
        type: text
    privacy_unit: user_id
  - database: demo
    table: pages
    file: pages.parquet
    columns:
      - {name: url, type: varchar(255), source: page.url}
    public: true
accounts:
  admins:
    - user: root
      password_hash: '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'
  analysts:
    - user: ann
      password_hash: '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'
      budgets:
        - database: demo
          epsilon: 2
          delta: 1e-5
`

func TestParseValid(t *testing.T) {
	c, err := Parse([]byte(validConfig), "/etc/dpsql")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Datasets[0]
	if d.File != "/etc/dpsql/posts.tsv.gz" || d.Format != tabfile.TSV || d.Columns[0].Type != "BIGINT UNSIGNED" {
		t.Errorf("dataset %+v", d)
	}
	if o := d.SourceOptions(); len(o.Columns) != 2 || o.Columns[0].Position != 1 || o.Columns[1].Position != 2 {
		t.Errorf("tsv source options %+v", o)
	}
	if o := c.Datasets[1].SourceOptions(); o.Format != tabfile.Parquet || len(o.Columns) != 1 || o.Columns[0].Name != "page.url" {
		t.Errorf("parquet source options %+v", o)
	}
	if c.Defaults.Options().Mechanism != setunion.DefaultMechanism {
		t.Errorf("defaults %+v", c.Defaults.Options())
	}
	if lim := c.LedgerLimits(); len(lim) != 1 || lim[0].MaxRelease != (ledger.Amount{}) {
		t.Errorf("limits %+v", lim)
	}
	if r := c.Reuse; !r.On() || r.EffectiveWindow() != 24*time.Hour || r.EffectiveScope() != "analyst" {
		t.Errorf("reuse defaults: %v %v %v", r.On(), r.EffectiveWindow(), r.EffectiveScope())
	}
	c, err = Parse([]byte(strings.Replace(validConfig, "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\nreuse: {enabled: false, window: 90m, scope: DATABASE}\n", 1)), "/etc/dpsql")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Reuse; r.On() || r.EffectiveWindow() != 90*time.Minute || r.EffectiveScope() != "database" {
		t.Errorf("reuse: %v %v %v", r.On(), r.EffectiveWindow(), r.EffectiveScope())
	}
}

// TestParseErrors changes the valid configuration one way at a time and
// expects an error naming the line and the fix.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name      string
		old, new_ string
		want      string
	}{
		{"unknown key", "    privacy_unit: user_id", "    privacy_unti: user_id",
			`config:12: unknown key "privacy_unti" (allowed here: database, table, file, format, header, null, columns, privacy_unit, public, source, refresh, generation, mode, dp)`},
		{"unknown top-level key", "data_dir:", "datadir:", `config:2: unknown key "datadir"`},
		{"duplicate key", "    table: posts\n", "    table: posts\n    table: posts2\n", `config:6: mapping key "table" already defined at line 5`},
		{"wrong value type", "epsilon: 2", "epsilon: lots", "config:28: cannot unmarshal !!str `lots` into float64"},
		{"no privacy unit", "    privacy_unit: user_id\n", "", "config:4: dataset demo.posts: say how the table is protected: privacy_unit: COLUMN"},
		{"both protected and public", "    public: true", "    public: true\n    privacy_unit: url", "config:18: dataset demo.pages: a table is either protected (privacy_unit) or public, not both"},
		{"privacy unit not a column", "privacy_unit: user_id", "privacy_unit: uid", `config:12: dataset demo.posts: privacy_unit "uid" is not one of its columns (user_id, text)`},
		{"unknown column type", "type: text", "type: string", `config:11: dataset demo.posts: column "text": unknown column type "string"; use one of BIGINT, BINARY`},
		{"varchar without length", "type: text", "type: varchar", `needs a length, for example VARCHAR(255)`},
		{"budget epsilon zero", "epsilon: 2", "epsilon: 0", `config:28: analyst "ann", budget on "demo": epsilon must be a finite number greater than 0, got 0`},
		{"budget epsilon negative", "epsilon: 2", "epsilon: -1", `epsilon must be a finite number greater than 0, got -1`},
		{"budget delta zero", "delta: 1e-5", "delta: 0", `config:29: analyst "ann", budget on "demo": delta must be greater than 0 and less than 1`},
		{"budget on unknown database", "        - database: demo\n          epsilon", "        - database: other\n          epsilon", `config:27: analyst "ann": no dataset declares database "other"`},
		{"duplicate account", "    - user: ann", "    - user: root", `config:24: analyst "root": duplicate account (already declared as admin)`},
		{"plaintext password", "  analysts:\n    - user: ann\n      password_hash: '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'", "  analysts:\n    - user: ann\n      password_hash: hunter2", "config:25: analyst \"ann\": password_hash must be a hash printed by `dpsql passwd`"},
		{"missing password", "  admins:\n    - user: root\n      password_hash: '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'", "  admins:\n    - user: root", "config:21: admin \"root\": password_hash is required; run `dpsql passwd`"},
		{"partial host pattern", "    - user: ann\n", "    - user: ann\n      host: 10.0.%\n", `host "10.0.%": use "%" (any host), "localhost" or an exact address`},
		{"duplicate table", "    table: pages", "    table: POSTS", "config:14: dataset demo.POSTS is declared twice (also datasets[0])"},
		{"duplicate column", "      - name: text", "      - name: USER_ID", `column "USER_ID" is declared twice`},
		{"view in unknown database", "accounts:", "views:\n  - {database: other, name: v, query: SELECT 1}\naccounts:", `views[0]: database "other" has no dataset`},
		{"view named like a table", "accounts:", "views:\n  - {database: demo, name: POSTS, query: SELECT 1}\naccounts:", `views[0]: demo.POSTS is already a table`},
		{"view without query", "accounts:", "views:\n  - {database: demo, name: v}\naccounts:", `views[0]: query is required`},
		{"reserved database", "  - database: demo\n    table: pages", "  - database: mysql\n    table: pages", `database name "mysql" is reserved`},
		{"bad identifier", "table: posts", "table: my-posts", `table name "my-posts" must start with a letter`},
		{"header on parquet", "    file: pages.parquet\n", "    file: pages.parquet\n    header: true\n", "header applies to tsv and csv files only"},
		{"source without header", "        type: text\n", "        type: text\n        source: body\n", "the file has no header, so fields are found by position"},
		{"position on parquet", "source: page.url}", "position: 2}", "position applies to tsv and csv files"},
		{"unknown format", "    file: pages.parquet\n", "    file: pages.parquet\n    format: xml\n", `unknown format "xml": use tsv, csv, jsonl or parquet`},
		{"bad listen", "listen: 0.0.0.0:3307", "listen: 3307", `config:1: listen "3307" is not host:port`},
		{"bad mechanism", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\ndefaults:\n  mechanism: magic\n", `config:4: defaults: unknown mechanism "magic"`},
		{"bad default epsilon", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\ndefaults:\n  epsilon: -1\n", `defaults: epsilon must be a finite number greater than 0`},
		{"default epsilon not a number", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\ndefaults:\n  delta: 1e-7\n  epsilon: lots\n", `config:5: defaults: epsilon: "lots" is not a finite number`},
		{"unknown default", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\ndefaults:\n  noise: laplace\n", `config:4: defaults: unknown option "noise": the options are epsilon, delta, max_items, mechanism, alpha, rounds`},
		{"default out of range", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\ndefaults: {max_items: -1}\n", `defaults: max_items must be an integer from 1 to 1000000, or 0 to choose it privately from the data, got -1`},
		{"no data dir", "data_dir: /var/lib/dpsql\n", "", "data_dir is required"},
		{"tls without key", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\ntls:\n  cert: c.pem\n", "config:3: tls needs both cert and key"},
		{"cap zero", "          delta: 1e-5\n", "          delta: 1e-5\n          max_release: {epsilon: -1}\n", "max_release epsilon must be a finite number ≥ 0, got -1 (0: no cap)"},
		{"budget without protected table", "    privacy_unit: user_id", "    public: true", `database "demo" has no protected table`},
		{"two documents", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\n---\nlisten: x\n", "more than one YAML document"},
		{"reuse scope", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\nreuse:\n  scope: everyone\n", `config:4: reuse.scope must be analyst`},
		{"reuse window", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\nreuse: {window: -1h}\n", `config:3: reuse.window must be a duration ≥ 0`},
		{"reuse window type", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\nreuse: {window: often}\n", `config:3: cannot unmarshal`},
		{"reuse unknown key", "data_dir: /var/lib/dpsql\n", "data_dir: /var/lib/dpsql\nreuse: {enable: true}\n", `unknown key "enable" (allowed here: enabled, window, scope)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(validConfig, c.old) {
				t.Fatalf("%q not in the valid config", c.old)
			}
			_, err := Parse([]byte(strings.Replace(validConfig, c.old, c.new_, 1)), "/etc/dpsql")
			if err == nil {
				t.Fatalf("accepted; want %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got  %v\nwant %q", err, c.want)
			}
		})
	}
}

func TestParseReportsAllErrors(t *testing.T) {
	bad := strings.NewReplacer("epsilon: 2", "epsilon: 0", "privacy_unit: user_id", "privacy_unit: uid").Replace(validConfig)
	_, err := Parse([]byte(bad), "/")
	if err == nil || !strings.Contains(err.Error(), "privacy_unit \"uid\"") || !strings.Contains(err.Error(), "epsilon must be") {
		t.Errorf("want both errors, got %v", err)
	}
	if _, err := Parse([]byte("  \n# nothing\n"), "/"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty config: %v", err)
	}
	if _, err := Parse([]byte("datasets: [\n"), "/"); err == nil || !strings.Contains(err.Error(), "line") {
		t.Errorf("broken YAML: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadResolvesRelativePathsAndChecksFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.Replace(validConfig, "data_dir: /var/lib/dpsql", "data_dir: state\ntls: {cert: c.pem, key: k.pem}", 1)
	path := filepath.Join(dir, "dpsql.yaml")
	os.WriteFile(path, []byte(cfg), 0o600)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != filepath.Join(dir, "state") || c.TLS.Cert != filepath.Join(dir, "c.pem") || c.Datasets[1].File != filepath.Join(dir, "pages.parquet") {
		t.Errorf("paths: %q %q %q", c.DataDir, c.TLS.Cert, c.Datasets[1].File)
	}
	err = c.CheckFiles()
	for _, want := range []string{path + ": ", "dataset demo.posts: ", "posts.tsv.gz: no such file", "tls: cannot load the key pair"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckFiles: %v; want %q", err, want)
		}
	}
}

func TestParseColumnType(t *testing.T) {
	for in, want := range map[string]string{
		"int": "INT", "INTEGER": "INT", "int(11)": "INT(11)", "bigint  unsigned": "BIGINT UNSIGNED", "bool": "BOOLEAN",
		"double precision": "DOUBLE", "real": "DOUBLE", "numeric(10, 2)": "DECIMAL(10,2)", "decimal": "DECIMAL",
		"varchar(64)": "VARCHAR(64)", "char": "CHAR", "character varying(8)": "VARCHAR(8)", "text": "TEXT",
		"longtext": "LONGTEXT", "varbinary(16)": "VARBINARY(16)", "blob": "BLOB", "date": "DATE",
		"datetime(6)": "DATETIME(6)", "timestamp": "TIMESTAMP", "time(3)": "TIME(3)", "year": "YEAR", "json": "JSON",
	} {
		got, err := ParseColumnType(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseColumnType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"string":                     "unknown column type",
		"varchar":                    "needs a length",
		"text(10)":                   "takes no arguments",
		"decimal(10,12)":             "scale (12) cannot exceed the precision (10)",
		"decimal(66)":                "from 1 to 65",
		"datetime(7)":                "from 0 to 6",
		"varchar(10) unsigned":       "only integer types can be UNSIGNED",
		"varchar(10) charset latin1": "not understood",
		"enum('a','b')":              "not understood",
		"":                           "not understood",
	} {
		if _, err := ParseColumnType(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseColumnType(%q): %v, want %q", in, err, want)
		}
	}
}

func TestPasswordHashes(t *testing.T) {
	// MySQL's PASSWORD('password').
	h, err := ParsePasswordHash("*2470c0c06dee42fd1618bb99005adca2ec9d1e19")
	if err != nil || h.Plugin != NativePassword || h.AuthString != "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19" || !matches(t, h, "password") {
		t.Errorf("native: %+v %v", h, err)
	}
	n, err := HashPassword(NativePassword, "password")
	if err != nil || n != h {
		t.Errorf("HashPassword native = %+v, %v", n, err)
	}

	// An authentication string generated by MySQL for "pass1" (from vitess'
	// tests); its salt holds control bytes, so it is written in hex.
	const mysqlGenerated = "0x244124303035241A502F3D02576A0150494D096659325E017E08086E516B42326E5762733366615556756E6131666174354533594255684536356E79772F5971397876772F32"
	h, err = ParsePasswordHash(mysqlGenerated)
	if err != nil || h.Plugin != CachingSha2Password || len(h.AuthString) != 70 || !matches(t, h, "pass1") || matches(t, h, "pass2") {
		t.Errorf("caching_sha2 from hex: %+v %v", h, err)
	}
	if h.String() != mysqlGenerated {
		t.Errorf("String() = %s, want the hex form", h)
	}

	s, err := HashPassword(CachingSha2Password, "correct horse")
	if err != nil || !matches(t, s, "correct horse") || !strings.HasPrefix(s.AuthString, "$A$005$") {
		t.Fatalf("HashPassword caching_sha2 = %+v, %v", s, err)
	}
	if s.String() != s.AuthString {
		t.Errorf("a generated hash is printable: %s", s)
	}
	if again, _ := HashPassword(CachingSha2Password, "correct horse"); again == s {
		t.Error("two hashes of one password share a salt")
	}
	if back, err := ParsePasswordHash(s.String()); err != nil || back != s {
		t.Errorf("round trip: %+v %v", back, err)
	}
	if _, err := HashPassword(CachingSha2Password, ""); err == nil {
		t.Error("empty password hashed")
	}
	if _, err := HashPassword("sha256_password", "x"); err == nil {
		t.Error("unknown plugin accepted")
	}

	for _, bad := range []string{"hunter2", "*2470C0", "*ZZ70C0C06DEE42FD1618BB99005ADCA2EC9D1E19", s.AuthString[:60],
		strings.Replace(s.AuthString, "$A$005$", "$A$0Z5$", 1), strings.Replace(s.AuthString, "$A$005$", "$A$001$", 1),
		s.AuthString[:69] + "!", "0x1234", "$B$005$" + s.AuthString[7:]} {
		if _, err := ParsePasswordHash(bad); err == nil {
			t.Errorf("ParsePasswordHash(%q) accepted", bad)
		}
	}
}

// TestCapsMergeByField: a budget's max_release overrides only the fields it
// sets; the analyst's cap applies to the others (a budget capping ε alone
// used to drop the analyst's δ cap).
func TestCapsMergeByField(t *testing.T) {
	for _, c := range []struct {
		analyst, budget string
		want            ledger.Amount
	}{
		{"", "", ledger.Amount{}},
		{"{epsilon: 1, delta: 1e-7}", "", ledger.Amount{Epsilon: 1, Delta: 1e-7}},
		{"{epsilon: 1, delta: 1e-7}", "{epsilon: 0.5}", ledger.Amount{Epsilon: 0.5, Delta: 1e-7}},
		{"{epsilon: 1, delta: 1e-7}", "{delta: 1e-8}", ledger.Amount{Epsilon: 1, Delta: 1e-8}},
		{"{delta: 1e-7}", "{epsilon: 2}", ledger.Amount{Epsilon: 2, Delta: 1e-7}},
		{"", "{epsilon: 2, delta: 1e-6}", ledger.Amount{Epsilon: 2, Delta: 1e-6}},
	} {
		cfg := validConfig
		if c.analyst != "" {
			cfg = strings.Replace(cfg, "      budgets:\n", "      max_release: "+c.analyst+"\n      budgets:\n", 1)
		}
		if c.budget != "" {
			cfg += "          max_release: " + c.budget + "\n"
		}
		conf, err := Parse([]byte(cfg), "/etc/dpsql")
		if err != nil {
			t.Fatalf("%s / %s: %v", c.analyst, c.budget, err)
		}
		if lim := conf.LedgerLimits(); len(lim) != 1 || lim[0].MaxRelease != c.want {
			t.Errorf("analyst cap %s, budget cap %s: %+v, want %+v", c.analyst, c.budget, lim, c.want)
		}
	}
}

// TestBudgetDeltaCeiling: a budget δ above limits.max_budget_delta (1e-4 by
// default) is refused with a message saying why and how to raise it.
func TestBudgetDeltaCeiling(t *testing.T) {
	big := strings.Replace(validConfig, "          delta: 1e-5", "          delta: 0.01", 1)
	if _, err := Parse([]byte(big), "/etc/dpsql"); err == nil || !strings.Contains(err.Error(), "max_budget_delta") {
		t.Fatalf("δ = 0.01 budget: %v", err)
	}
	if _, err := Parse([]byte(big+"limits:\n  max_budget_delta: 0.05\n"), "/etc/dpsql"); err != nil {
		t.Fatalf("raised ceiling: %v", err)
	}
	if _, err := Parse([]byte(validConfig+"limits:\n  max_delta: 2\n"), "/etc/dpsql"); err == nil {
		t.Fatal("limits.max_delta = 2 accepted")
	}
}

// TestMaxMemoryUnbounded: limits.max_memory_bytes: -1 turns the memory
// guard off, as documented; other negative values and other negative
// limits stay refused.
func TestMaxMemoryUnbounded(t *testing.T) {
	c, err := Parse([]byte(validConfig+"limits:\n  max_memory_bytes: -1\n"), "/etc/dpsql")
	if err != nil {
		t.Fatalf("max_memory_bytes: -1: %v", err)
	}
	if c.Limits.MaxMemoryBytes != -1 {
		t.Errorf("max_memory_bytes = %d, want -1", c.Limits.MaxMemoryBytes)
	}
	for _, bad := range []string{"max_memory_bytes: -2", "max_connections: -1"} {
		if _, err := Parse([]byte(validConfig+"limits:\n  "+bad+"\n"), "/etc/dpsql"); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
