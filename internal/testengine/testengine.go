// Package testengine holds the fixtures of the engine's tests, shared by
// the tests of packages engine, server and planner: the test database mydb
// (Provider, NgramsProvider), seeded randomness (Seeded), values as
// numbers (Float), and a fake Governor with a provider that counts scans
// (FakeGov, CountingProvider).
package testengine

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Provider builds database mydb:
//
//	visits(user_id BIGINT, item TEXT, day DATE, score DOUBLE, at DATETIME, g BIGINT, uname TEXT)
//	no_rows(user_id BIGINT, item TEXT)
//
// In visits, each of 400 users has the items "common" and "only_<u>", the
// even users "even", users 0–9 "few", and every user a NULL item. Rows with
// a NULL user_id and uname carry "ghost", rows with an empty uname "blank".
// At ε = 1 "common" (400 users) and "even" (200) are released with
// overwhelming probability, "few" (10 users) and the single-user items
// essentially never.
func Provider(t testing.TB) *storage.Provider {
	t.Helper()
	b, err := storage.NewTableBuilder("visits", []storage.Column{
		{Name: "user_id", Type: storage.BigInt},
		{Name: "item", Type: storage.Text},
		{Name: "day", Type: storage.Date},
		{Name: "score", Type: storage.Double},
		{Name: "at", Type: storage.Datetime},
		{Name: "g", Type: storage.BigInt},
		{Name: "uname", Type: storage.Text},
	})
	if err != nil {
		t.Fatal(err)
	}
	d1 := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)
	d2 := time.Date(2024, 1, 2, 11, 30, 0, 500_000_000, time.UTC)
	add := func(vals ...any) {
		if err := b.Append(vals...); err != nil {
			t.Fatal(err)
		}
	}
	for u := int64(0); u < 400; u++ {
		name := fmt.Sprintf("user%d", u)
		add(u, "common", d1, 1.5, d1, u%3, name)
		add(u, fmt.Sprintf("only_%d", u), d1, float64(u)/1000, d1, u%3, name)
		if u%2 == 0 {
			add(u, "even", d2, 2.25, d2, u%3, name)
		}
		if u < 10 {
			add(u, "few", d1, 1.5, d1, u%3, name)
		}
		add(u, nil, d1, 1.5, d1, u%3, name)
		add(nil, "ghost", d1, 1.5, d1, u%3, nil)
		add(nil, "blank", d1, 1.5, d1, u%3, "")
	}
	visits, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	eb, err := storage.NewTableBuilder("no_rows", []storage.Column{
		{Name: "user_id", Type: storage.BigInt},
		{Name: "item", Type: storage.Text},
	})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := eb.Build()
	if err != nil {
		t.Fatal(err)
	}
	db := storage.NewDatabase("mydb")
	for _, tb := range []*storage.Table{visits, empty} {
		if err := db.AddTable(tb); err != nil {
			t.Fatal(err)
		}
	}
	p, err := storage.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Float is an engine value (an integer, a float, a decimal, or their
// text) as a float64; it stops the test when v is not a number.
func Float(t testing.TB, v any) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	if err != nil {
		t.Fatalf("not a number: %v (%T)", v, v)
	}
	return f
}

// Seeded makes releases reproducible: tests that assert which keys are
// released must not depend on crypto randomness (a policy releases an item
// at its cutoff with probability Φ(α), 0.9987 at α = 3, so an unseeded
// assertion on two such items fails about once in 370 runs).
func Seeded() functions.Config {
	return functions.Config{Rand: func() *rand.Rand { return securerand.NewSeeded(42) }}
}

// FakeGov is a Governor for tests: the users in Analysts are governed,
// Units maps "db.table" (lower case) to the privacy-unit column of a
// protected table, and Check and Charge record their releases (Charge also
// records how many table scans had started when it was called) and fail
// with CheckErr and ChargeErr when those are set.
type FakeGov struct {
	Analysts map[string]bool
	Units    map[string]string
	Reads    *atomic.Int64

	Mu            sync.Mutex
	CheckErr      error
	ChargeErr     error
	Checks        []release.Request
	Charges       []release.Request
	ReadsAtCharge []int64
}

var _ release.Governor = (*FakeGov)(nil)

func (g *FakeGov) PrivacyUnit(db, table string) (string, bool) {
	c, ok := g.Units[strings.ToLower(db+"."+table)]
	return c, ok
}

func (g *FakeGov) Governed(ctx *sql.Context) bool { return g.Analysts[ctx.Session.Client().User] }

func (g *FakeGov) Check(_ *sql.Context, r release.Request) error {
	g.Mu.Lock()
	defer g.Mu.Unlock()
	g.Checks = append(g.Checks, r)
	return g.CheckErr
}

func (g *FakeGov) Charge(_ *sql.Context, r release.Request) error {
	g.Mu.Lock()
	defer g.Mu.Unlock()
	g.ReadsAtCharge = append(g.ReadsAtCharge, g.Reads.Load())
	if g.ChargeErr != nil {
		return g.ChargeErr
	}
	g.Charges = append(g.Charges, r)
	return nil
}

// Counts returns and resets the numbers of checks, charges and scans.
func (g *FakeGov) Counts() (checks, charges int, reads int64) {
	g.Mu.Lock()
	defer g.Mu.Unlock()
	checks, charges, reads = len(g.Checks), len(g.Charges), g.Reads.Load()
	g.Checks, g.Charges, g.ReadsAtCharge = nil, nil, nil
	g.Reads.Store(0)
	return
}

// CountingProvider wraps a storage provider so that every scan of a table
// called notes (Partitions) is counted: the test of "nothing is read before
// the charge".
type CountingProvider struct {
	*storage.Provider
	Reads *atomic.Int64
}

func (p CountingProvider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	db, err := p.Provider.Database(ctx, name)
	if err != nil {
		return nil, err
	}
	return countingDB{Database: db, reads: p.Reads}, nil
}

func (p CountingProvider) AllDatabases(ctx *sql.Context) []sql.Database {
	var out []sql.Database
	for _, db := range p.Provider.AllDatabases(ctx) {
		out = append(out, countingDB{Database: db, reads: p.Reads})
	}
	return out
}

func (p CountingProvider) WithTableFunctions(fns ...sql.TableFunction) (sql.TableFunctionProvider, error) {
	np, err := p.Provider.WithTableFunctions(fns...)
	if err != nil {
		return nil, err
	}
	return CountingProvider{Provider: np.(*storage.Provider), Reads: p.Reads}, nil
}

type countingDB struct {
	sql.Database
	reads *atomic.Int64
}

func (d countingDB) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	t, ok, err := d.Database.GetTableInsensitive(ctx, name)
	if !ok || err != nil || t.Name() != "notes" {
		return t, ok, err
	}
	return countingTable{Table: t, reads: d.reads}, true, nil
}

type countingTable struct {
	sql.Table
	reads *atomic.Int64
}

func (t countingTable) Partitions(ctx *sql.Context) (sql.PartitionIter, error) {
	t.reads.Add(1)
	return t.Table.Partitions(ctx)
}
