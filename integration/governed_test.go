package integration

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/ledger"
)

// The governed dpsql servers the tests of this package run against, in
// process on a random loopback port:
//
//   - the embedded demo (server.Demo): database demo with the protected
//     tables posts(user_id, body) and words(user_id, word), the analyst
//     "analyst" (mysql_native_password, no TLS) with the demo budget and
//     the admin "admin";
//   - git_rails: a configuration file loading ../shared/data/git_rails.tsv.gz
//     as the protected table rails.commits(user_id, message), a small
//     public table rails.notes (NULL, non-ASCII text, a tab and a newline
//     in values), a view of a private release (first_words) and one of the
//     public table (cheap_notes), with TLS required (self-signed
//     certificate) and the analyst on caching_sha2_password, MySQL 8's
//     default plugin.

const (
	analystPassword = "analyst-pw-0"
	adminPassword   = "admin-pw-0"
)

// govServer is a running governed server and how to reach it.
type govServer struct {
	*server.Governed
	name     string // "demo" or "git_rails"
	db       string // the database of the protected tables
	analyst  clients.Target
	admin    clients.Target
	dataDir  string
	protects []string // protected tables, db.table
}

// analystAs returns the analyst target with another user and password.
func (s *govServer) analystAs(user, password string) clients.Target {
	t := s.analyst
	t.User, t.Password = user, password
	return t
}

// extraAnalyst is an analyst added to a deployment, with a budget on its
// database.
type extraAnalyst struct {
	user, password string
	epsilon, delta float64
}

// startDemo starts the embedded default with fixed passwords and a fresh
// data directory; extra analysts (native passwords) get budgets on demo.
func startDemo(t testing.TB, extra ...extraAnalyst) *govServer {
	t.Helper()
	return startDemoLimits(t, nil, extra...)
}

// startDemoLimits is startDemo with the configuration's limits changed by
// set (nil: none changed).
func startDemoLimits(t testing.TB, set func(*config.Limits), extra ...extraAnalyst) *govServer {
	t.Helper()
	dataDir := t.TempDir()
	opts, cred, err := server.Demo(server.DemoOptions{Listen: "127.0.0.1:0", DataDir: dataDir,
		AnalystPassword: analystPassword, AdminPassword: adminPassword})
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(&opts.Config.Limits)
	}
	for _, a := range extra {
		h, err := config.HashPassword(config.NativePassword, a.password)
		if err != nil {
			t.Fatal(err)
		}
		opts.Config.Accounts.Analysts = append(opts.Config.Accounts.Analysts, config.Analyst{
			User: a.user, Host: "localhost", PasswordHash: h.String(), Password: h,
			Budgets: []config.Budget{{Database: "demo", Epsilon: a.epsilon, Delta: a.delta}},
		})
	}
	s := testserver.Governed(t, opts)
	host, port := splitAddr(t, s.Addr())
	return &govServer{Governed: s, name: "demo", db: "demo", dataDir: dataDir,
		analyst:  clients.Target{Host: host, Port: port, User: cred.AnalystUser, Password: cred.AnalystPassword, Database: "demo"},
		admin:    clients.Target{Host: host, Port: port, User: cred.AdminUser, Password: cred.AdminPassword, Database: "demo"},
		protects: []string{"demo.posts", "demo.words"},
	}
}

// railsNotes is the public table of the git_rails deployment: values that
// client output formats must carry (NULL, non-ASCII, tab, newline,
// decimals).
const railsNotes = "id,note,price\n" +
	"1,apple,1.50\n" +
	"2,crème brûlée,\\N\n" +
	"3,\"tab\there\",7.25\n" +
	"4,\"line1\nline2\",0.10\n" +
	"5,\\N,2\n"

// startRails starts a governed server from a configuration file that loads
// git_rails.tsv.gz as the protected table rails.commits, with TLS required.
// The analyst logs in with caching_sha2_password; extra analysts with
// mysql_native_password.
func startRails(t testing.TB, extra ...extraAnalyst) *govServer {
	t.Helper()
	dir := t.TempDir()
	cfgPath := writeRailsConfig(t, dir, extra...)
	c, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	s := testserver.Governed(t, server.GovernedOptions{Config: c})
	host, port := splitAddr(t, s.Addr())
	return railsServer(s, dir, host, port)
}

// railsServer describes a git_rails deployment written to dir and served at
// host:port.
func railsServer(s *server.Governed, dir, host string, port int) *govServer {
	ca := filepath.Join(dir, "server.crt")
	return &govServer{Governed: s, name: "git_rails", db: "rails", dataDir: filepath.Join(dir, "data"),
		analyst:  clients.Target{Host: host, Port: port, User: "analyst", Password: analystPassword, Database: "rails", TLS: true, CAFile: ca},
		admin:    clients.Target{Host: host, Port: port, User: "admin", Password: adminPassword, Database: "rails", TLS: true, CAFile: ca},
		protects: []string{"rails.commits"},
	}
}

// writeRailsConfig writes the git_rails deployment (configuration, TLS
// certificate and key, the public table's file) to dir and returns the
// configuration's path; its data directory is dir/data.
func writeRailsConfig(t testing.TB, dir string, extra ...extraAnalyst) string {
	t.Helper()
	corpus := testenv.DataFile(t, "git_rails.tsv.gz")
	testmysql.SelfSigned(t).WriteFiles(t, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	testmysql.WriteFile(t, filepath.Join(dir, "notes.csv"), railsNotes)
	var extraYAML strings.Builder
	for _, a := range extra {
		fmt.Fprintf(&extraYAML, "    - user: %s\n      password_hash: '%s'\n      budgets:\n        - {database: rails, epsilon: %g, delta: %g}\n",
			a.user, testserver.HashPassword(t, config.NativePassword, a.password), a.epsilon, a.delta)
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
tls: {cert: server.crt, key: server.key, require: true}
data_dir: data
datasets:
  - database: rails
    table: commits
    file: %q
    format: tsv
    columns:
      - {name: user_id, type: VARCHAR(16)}
      - {name: message, type: TEXT}
    privacy_unit: user_id
  - database: rails
    table: notes
    file: notes.csv
    header: true
    null: '\N'
    columns:
      - {name: id, type: BIGINT}
      - {name: note, type: TEXT}
      - {name: price, type: 'DECIMAL(10,2)'}
    public: true
views:
  - {database: rails, name: first_words, query: "SELECT DISTINCT LOWER(SUBSTRING_INDEX(message, ' ', 1)) AS first_word FROM commits"}
  - {database: rails, name: cheap_notes, query: "SELECT id, note FROM notes WHERE price < 5"}
limits:
  max_budget_delta: 0.5
accounts:
  admins:
    - {user: admin, password_hash: '%s'}
  analysts:
    - user: analyst
      password_hash: '%s'
      budgets:
        - {database: rails, epsilon: 100, delta: 1e-3}
%s`, corpus, testserver.HashPassword(t, config.NativePassword, adminPassword), testserver.HashPassword(t, config.CachingSha2Password, analystPassword), extraYAML.String())
	path := filepath.Join(dir, "dpsql.yaml")
	testmysql.WriteFile(t, path, cfg)
	return path
}

func splitAddr(t testing.TB, addr string) (string, int) {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return a.IP.String(), a.Port
}

// appendFile appends content to the file at path.
func appendFile(t testing.TB, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// openGo opens a go-sql-driver pool for target, closed when the test ends.
func openGo(t testing.TB, target clients.Target) *dbsql.DB {
	t.Helper()
	db, err := clients.OpenGo(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ledgerBalance reads an analyst's balance on a database from the server's
// ledger.
func ledgerBalance(t testing.TB, l *ledger.Ledger, analyst, db string) ledger.Balance {
	t.Helper()
	b, err := l.Balance(analyst, db)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// alive checks that the server answers a new connection's SELECT 1.
func alive(t testing.TB, target clients.Target) {
	t.Helper()
	db, err := clients.OpenGo(target)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the server no longer answers SELECT 1 on a new connection: %v", err)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(envServeConfig) != "" {
		os.Exit(serveSubprocess(os.Getenv(envServeConfig)))
	}
	logrus.SetLevel(logrus.ErrorLevel)
	code := m.Run()
	if bigDir != "" {
		os.RemoveAll(bigDir)
	}
	if jdbcShared.dir != "" {
		os.RemoveAll(jdbcShared.dir)
	}
	os.Exit(code)
}
