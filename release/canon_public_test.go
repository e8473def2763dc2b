package release_test

import (
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/lookup"
	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/storage"
)

// TestSpecFollowsPublicTables: the reuse specification of a release that
// reads a public table through a lookup holds that table's version (a
// reload of the same rows is another release: reuse must not answer from
// rows the public table no longer has) and the public side's expressions
// (another public filter is another release); the same public side over the
// same version is the same specification.
func TestSpecFollowsPublicTables(t *testing.T) {
	build := func(name string, rows ...string) *storage.Table {
		b, err := storage.NewTableBuilder(name, []storage.Column{{Name: "uid", Type: storage.Text}, {Name: "item", Type: storage.Text}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if err := b.Append("u", r); err != nil {
				t.Fatal(err)
			}
		}
		tbl, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	prot := build("t", "a", "b")
	ctx := sql.NewEmptyContext()
	spec := func(pub sql.Table, filter sql.Expression) string {
		set := lookup.NewSet(lookup.Text, sql.Collation_Default, "p", lookup.Limits{})
		if _, err := release.NewPublic(ctx, "db", "p", pub,
			release.Expr{E: expression.NewGetFieldWithTable(1, 0, types.LongText, "db", "p", "item", true), Where: "selected column"},
			release.Expr{E: filter, Where: "WHERE clause"}, set, sealed.Limits{}); err != nil {
			t.Fatal(err)
		}
		item := expression.NewGetFieldWithTable(1, 0, types.LongText, "db", "t", "item", true)
		s, err := release.NewScan(ctx, "db", "t", prot, "uid", release.Expr{E: lookup.NewIn(item, set, false, "p"), Where: "WHERE clause"},
			[]release.Expr{{E: item, Where: "selected columns"}}, sealed.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Spec() == "" {
			t.Fatal("a release reading a public table has no specification (never reused)")
		}
		return s.Spec()
	}
	p1 := build("p", "a")
	p2 := build("p", "a") // the same rows, loaded again
	col := expression.NewGetFieldWithTable(1, 0, types.LongText, "db", "p", "item", true)
	lit := func(s string) sql.Expression { return expression.NewLiteral(s, types.LongText) }
	base := spec(p1, nil)
	if spec(p1, nil) != base {
		t.Error("the same public side over the same version has another specification")
	}
	if spec(p2, nil) == base {
		t.Error("a reloaded public table has the specification of the old one")
	}
	f1 := spec(p1, expression.NewEquals(col, lit("a")))
	f2 := spec(p1, expression.NewEquals(col, lit("b")))
	if f1 == base || f1 == f2 {
		t.Error("public sides with other filters share a specification")
	}
}

// TestSpecDayOnlyWhenClock: a release whose expressions can read the clock
// (a TIME taken as a date is today's) is keyed by the day; one that cannot
// is the same release on every day.
func TestSpecDayOnlyWhenClock(t *testing.T) {
	b, err := storage.NewTableBuilder("t", []storage.Column{{Name: "uid", Type: storage.Text}, {Name: "s", Type: storage.Text}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append("u", "10:00:00"); err != nil {
		t.Fatal(err)
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	s := expression.NewGetFieldWithTable(1, 0, types.LongText, "db", "t", "s", true)
	clock := function.NewDateFormat(function.NewTime(s), expression.NewLiteral("%Y-%m-%d", types.LongText))
	specOn := func(day time.Time, key sql.Expression) string {
		var spec string
		_ = sql.RunWithNowFunc(func() time.Time { return day }, func() error {
			sc, err := release.NewScan(sql.NewEmptyContext(), "db", "t", tbl, "uid", release.Expr{}, []release.Expr{{E: key, Where: "key"}}, sealed.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			spec = sc.Spec()
			return nil
		})
		return spec
	}
	d1 := time.Date(2024, 2, 28, 12, 0, 0, 0, time.Local)
	d2 := d1.AddDate(0, 0, 1)
	if specOn(d1, clock) == specOn(d2, clock) {
		t.Error("DATE_FORMAT(TIME(s), …) has the same specification on two days")
	}
	lower := function.NewLower(s)
	if specOn(d1, lower) != specOn(d2, lower) {
		t.Error("LOWER(s), which reads no clock, has another specification on another day")
	}
}
