package release

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release/lookup"
	"github.com/dpsql/dpsql/release/sealed"
)

// PublicTables is implemented by governors that know which tables the
// configuration declares public: only those may enrich a private release
// (Public). A governor without it declares no table public.
type PublicTables interface {
	// Public reports whether database.table is declared public (names
	// are matched case-insensitively).
	Public(database, table string) bool
}

// Public is the public side of an enrichment of a release: the values of
// one expression over the rows of a public table that pass a filter,
// compiled for sealed evaluation (deterministic, allow-listed), read into a
// lookup.Set by Fill before the protected table is scanned.
//
// Fill reads the public table under the analyst's own context — not a
// release's (Context): a protected table would refuse it at the storage
// layer — and reads nothing else, so the set, Fill's errors and its time
// are functions of public data alone.
type Public struct {
	db, name string
	table    sql.Table
	prog     *sealed.Program
	filter   int // program index of the filter, -1 without one
	// cols, for a join, are the program indexes of the public columns
	// its Set keeps per key (nil: an IN / EXISTS set).
	cols []int
	set  *lookup.Set
}

// NewPublic compiles the public side of a lookup over db.name. value and
// filter (may have a nil E) index the table's full schema; set receives
// the values. Its errors (what the allow-list refuses, constants that
// fail) say where; the caller makes them refusals of the release.
func NewPublic(ctx *sql.Context, db, name string, table sql.Table, value, filter Expr, set *lookup.Set, lim sealed.Limits) (*Public, error) {
	return newPublic(ctx, db, name, table, value, filter, nil, set, lim)
}

// NewPublicJoin compiles the public side of a join with db.name: key is
// the join column, filter the join's conditions on the public table alone,
// and cols the public columns the release reads, kept per key (the key
// must be unique: Fill fails otherwise).
func NewPublicJoin(ctx *sql.Context, db, name string, table sql.Table, key, filter Expr, cols []Expr, set *lookup.Set, lim sealed.Limits) (*Public, error) {
	return newPublic(ctx, db, name, table, key, filter, cols, set, lim)
}

func newPublic(ctx *sql.Context, db, name string, table sql.Table, value, filter Expr, cols []Expr, set *lookup.Set, lim sealed.Limits) (*Public, error) {
	var err error
	if value.E, err = canonRewrite(value.E); err != nil {
		return nil, err
	}
	if filter.E, err = canonRewrite(filter.E); err != nil {
		return nil, err
	}
	cols = slices.Clone(cols)
	for i := range cols {
		if cols[i].E, err = canonRewrite(cols[i].E); err != nil {
			return nil, err
		}
	}
	all := []Expr{value}
	p := &Public{db: db, name: name, filter: -1, set: set}
	if filter.E != nil {
		p.filter = 1
		all = append(all, filter)
	}
	if cols != nil {
		p.cols = []int{}
	}
	for _, c := range cols {
		p.cols = append(p.cols, len(all))
		all = append(all, c)
	}
	for _, e := range all {
		if _, err := sealed.Compile(ctx, []sql.Expression{e.E}, len(table.Schema()), lim); err != nil {
			return nil, fmt.Errorf("in the %s of the public lookup over %s.%s: %w", e.Where, db, name, err)
		}
	}
	set.SetSource(publicSource(ctx, db, name, table, all, p.filter, p.cols != nil, lim))
	table, exprs, ncols, err := project(table, all)
	if err != nil {
		return nil, err
	}
	p.table = table
	if p.prog, err = sealed.Compile(ctx, exprs, ncols, lim); err != nil {
		return nil, fmt.Errorf("in the public lookup over %s.%s: %w", db, name, err)
	}
	return p, nil
}

// Set returns the set Fill fills.
func (p *Public) Set() *lookup.Set { return p.set }

// Fill reads the public table into the set (emptied first). Rows whose
// evaluation fails are skipped, as in a release; the errors are those of
// the table's iterator, of cancellation and of the set's limits.
func (p *Public) Fill(ctx *sql.Context) error {
	p.set.Reset()
	ev := p.prog.NewEvaluator(ctx)
	sctx := ev.Context()
	var addErr error
	err := scanTable(ctx, p.table, func(row sql.Row) {
		if addErr != nil || !ev.Row(row) {
			return
		}
		if p.filter >= 0 {
			v, ok := ev.Value(p.filter)
			if !ok || v == nil {
				return
			}
			if b, err := sql.ConvertToBool(sctx, v); err != nil || !b {
				return
			}
		}
		v, ok := ev.Value(0)
		if !ok {
			return
		}
		if p.cols == nil {
			addErr = p.set.Add(sctx, v)
			return
		}
		vals := make([]any, len(p.cols))
		for i, c := range p.cols {
			if vals[i], ok = ev.Value(c); !ok {
				return
			}
		}
		addErr = p.set.AddRow(sctx, v, vals)
	})
	if err == nil {
		err = addErr
	}
	if err != nil {
		return fmt.Errorf("public lookup over %s.%s: %w", p.db, p.name, err)
	}
	p.set.Done()
	return nil
}

// processEpoch tells this process's table versions apart from another's:
// storage.Table.Version counts the loads of this process only, and reuse
// keys outlive it (the ledger keeps them).
var processEpoch = func() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}()

// publicSource is the canonical description of a public side: the table
// and the version of its rows (this process's epoch and the table's load
// count: a release reading a public table is reused only within the
// process that loaded it, and never across a reload), the canonical keys
// of the value, filter and columns it evaluates (a join's set, whose key
// must be unique, is told from an IN / EXISTS set), the values of the
// session variables and the date they read, and the limits. "" (never
// reused) when the table has no version or an expression cannot be
// encoded.
func publicSource(ctx *sql.Context, db, name string, table sql.Table, all []Expr, filter int, join bool, lim sealed.Limits) string {
	v, ok := table.(versioned)
	if !ok {
		return ""
	}
	b := canonParts([]byte("public 1"), []byte(strings.ToLower(db)), []byte(strings.ToLower(name)),
		[]byte(fmt.Sprintf("epoch %s version %d", processEpoch, v.Version())),
		[]byte(fmt.Sprintf("limits=%+v filter=%d join=%v", lim, filter, join)))
	var deps canonDeps
	for _, e := range all {
		k, d, err := exprKey(ctx, e.E)
		if err != nil {
			return ""
		}
		b = canonParts(b, k)
		deps = deps.or(d)
	}
	return string(canonParts(b, depsKey(nil, ctx, deps)))
}
