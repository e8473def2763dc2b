package server_test

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
)

// The test deployment: database shop with a protected table visits
// (privacy unit user_id) and a public table products; an admin, three
// analysts with budgets (alice and bob: mysql_native_password; carol:
// caching_sha2_password, TLS only) and dave without a budget.
const (
	adminPass = "admin-secret"
	alicePass = "alice-secret"
	bobPass   = "bob-secret"
	carolPass = "carol-secret"
	davePass  = "dave-secret"
)

// deployment is a configuration written to a temporary directory.
type deployment struct {
	dir        string
	cfgPath    string
	tlsName    string // go-sql-driver TLS config name
	accounting string // accounting.method of the configuration
}

// newDeployment writes the data files, a self-signed certificate and the
// configuration (with extra YAML appended under the top level, e.g.
// "tls:\n  require: true" is not possible that way; see requireTLS).
func newDeployment(t *testing.T, requireTLS bool) *deployment {
	t.Helper()
	return newDeploymentWith(t, requireTLS, "basic")
}

// newDeploymentWith is newDeployment with the given accounting method (most
// tests check basic composition's exact arithmetic; the configuration's
// default is zcdp).
func newDeploymentWith(t *testing.T, requireTLS bool, accounting string) *deployment {
	t.Helper()
	dir := t.TempDir()
	d := &deployment{dir: dir, cfgPath: filepath.Join(dir, "dpsql.yaml"), accounting: accounting}

	// visits: 400 users; each visits 3 of 10 common pages and one page of
	// their own (never released).
	var b strings.Builder
	for u := 1; u <= 400; u++ {
		for k := 0; k < 3; k++ {
			fmt.Fprintf(&b, "%d\t/common/%d\n", u, (u+k)%10)
		}
		fmt.Fprintf(&b, "%d\t/private/%d\n", u, u)
	}
	testmysql.WriteFile(t, filepath.Join(dir, "visits.tsv"), b.String())
	testmysql.WriteFile(t, filepath.Join(dir, "products.csv"), "sku,name\nA1,apple\nB2,banana\nC3,cherry\n")

	cert := testmysql.SelfSigned(t)
	cert.WriteFiles(t, filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"))
	d.tlsName = cert.RegisterTLS(t)

	hash := func(plugin, pw string) string { return testserver.HashPassword(t, plugin, pw) }
	require := "false"
	if requireTLS {
		require = "true"
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
tls:
  cert: server.crt
  key: server.key
  require: %s
data_dir: data
# The tests count charges, so identical releases are made and charged
# again (release reuse is tested in integration/reuse_test.go).
reuse: {enabled: false}
accounting:
  method: %s
defaults:
  epsilon: 0.1
  delta: 1e-7
  max_items: 10
datasets:
  - database: shop
    table: visits
    file: visits.tsv
    columns:
      - {name: user_id, type: BIGINT}
      - {name: url, type: VARCHAR(64)}
    privacy_unit: user_id
  - database: shop
    table: products
    file: products.csv
    header: true
    columns:
      - {name: sku, type: CHAR(2)}
      - {name: name, type: VARCHAR(32)}
    public: true
accounts:
  admins:
    - {user: admin, password_hash: '%s'}
  analysts:
    - user: alice
      password_hash: '%s'
      max_release: {epsilon: 0.5, delta: 1e-6}
      budgets:
        - {database: shop, epsilon: 1, delta: 1e-5}
    - user: bob
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 2, delta: 1e-5}
    - user: carol
      password_hash: '%s'
      budgets:
        - {database: shop, epsilon: 1, delta: 1e-5}
    - user: dave
      password_hash: '%s'
`, require, d.accounting,
		hash(config.NativePassword, adminPass), hash(config.NativePassword, alicePass), hash(config.NativePassword, bobPass),
		hash(config.CachingSha2Password, carolPass), hash(config.NativePassword, davePass))
	testmysql.WriteFile(t, d.cfgPath, cfg)
	return d
}

// start loads the configuration and starts a governed server on a random
// loopback port; it is shut down at the end of the test (unless the test
// did so).
func (d *deployment) start(t *testing.T) *server.Governed {
	t.Helper()
	s, err := d.tryStart(t)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (d *deployment) tryStart(t *testing.T) (*server.Governed, error) {
	t.Helper()
	cfg, err := config.Load(d.cfgPath)
	if err != nil {
		return nil, err
	}
	return testserver.TryGoverned(t, server.GovernedOptions{Config: cfg, LedgerLockTimeout: 200 * time.Millisecond})
}

// as is the login of user at addr; useTLS selects TLS.
func (d *deployment) as(addr, user, password string, useTLS bool) testmysql.Login {
	l := testmysql.Login{Addr: addr, User: user, Password: password}
	if useTLS {
		l.TLS = d.tlsName
	}
	return l
}

// connect opens a pool for user; useTLS selects TLS.
func (d *deployment) connect(t *testing.T, addr, user, password string, useTLS bool) *dbsql.DB {
	t.Helper()
	return testmysql.Connect(t, d.as(addr, user, password, useTLS))
}

// login connects and runs SELECT 1.
func (d *deployment) login(addr, user, password string, useTLS bool) error {
	return testmysql.Ping(d.as(addr, user, password, useTLS))
}

// queryer is a *sql.DB or a *sql.Conn.
type queryer interface {
	QueryContext(context.Context, string, ...any) (*dbsql.Rows, error)
}

// budgetRow is one row of DP_BUDGET().
type budgetRow struct {
	Analyst, Database          string
	BudgetEps, BudgetDelta     float64
	Accounting                 string
	SpentEps, SpentDelta       float64
	RemainingEps, RemainingDel float64
	BasicEps, BasicDelta       float64
	CapEps, CapDelta           dbsql.NullFloat64
	Releases                   int64
	Last                       dbsql.NullString
	Active                     bool
}

func budget(t *testing.T, db queryer) []budgetRow {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "SELECT * FROM DP_BUDGET()")
	if err != nil {
		t.Fatalf("DP_BUDGET(): %v", err)
	}
	defer rows.Close()
	var out []budgetRow
	for rows.Next() {
		var r budgetRow
		if err := rows.Scan(&r.Analyst, &r.Database, &r.BudgetEps, &r.BudgetDelta, &r.Accounting, &r.SpentEps, &r.SpentDelta,
			&r.RemainingEps, &r.RemainingDel, &r.BasicEps, &r.BasicDelta, &r.CapEps, &r.CapDelta, &r.Releases, &r.Last, &r.Active); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// release runs the DISTINCT release over visits and returns the released
// urls.
func releaseURLs(db queryer) ([]string, error) {
	rows, err := db.QueryContext(context.Background(), "SELECT DISTINCT url FROM visits")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func TestMain(m *testing.M) {
	logrus.SetLevel(logrus.ErrorLevel)
	os.Exit(m.Run())
}
