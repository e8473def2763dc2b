package release

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/storage"
)

// TestCodedGroupingAsRows: the build from the columns' codes (groupCoded)
// groups exactly as the build that reads the rows (groupRows) — users and
// items in the same order, the same lists, counts and first rows, the
// same NULL counts and order of first non-NULL value — on random tables
// with text and BIGINT units (NULL and empty ones), text keys with NULLs,
// empty strings and strings starting with 0x00 or 0x01, BIGINT keys, and
// tables large enough for the parallel read and grouping.
func TestCodedGroupingAsRows(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	ctx := sql.NewContext(context.Background())
	for trial := range trials(40, 8) {
		var tbl *storage.Table
		if trial%8 == 7 {
			tbl = bigRandomTable(t, r, trial%16 == 15)
		} else {
			tbl = randomTable(t, r, trial%2 == 1)
		}
		for _, col := range []string{"s", "n", "uid"} {
			s, err := NewScan(ctx, "db", "t", tbl, "uid", Expr{}, []Expr{{E: column(tbl, col)}}, sealed.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			coded, ok, err := s.groupCoded(ctx)
			if err != nil || !ok {
				t.Fatalf("trial %d column %s: groupCoded ok=%v err=%v", trial, col, ok, err)
			}
			rows, err := s.groupRows(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(coded, rows) {
				t.Fatalf("trial %d column %s (%d rows):\ncoded %+v\nrows  %+v", trial, col, tbl.Len(), coded, rows)
			}
		}
	}
}

// bigRandomTable is randomTable's shape with 70,000 to 120,000 rows: over
// the parallel grouping's threshold, and over one storage partition.
func bigRandomTable(t testing.TB, r *rand.Rand, intUnits bool) *storage.Table {
	t.Helper()
	ut := storage.Text
	if intUnits {
		ut = storage.BigInt
	}
	b, err := storage.NewTableBuilder("t", []storage.Column{
		{Name: "uid", Type: ut}, {Name: "s", Type: storage.Text}, {Name: "n", Type: storage.BigInt}, {Name: "f", Type: storage.Double},
	})
	if err != nil {
		t.Fatal(err)
	}
	users, vals := 1+r.IntN(3000), 1+r.IntN(5000)
	u := 0
	for range 70_000 + r.IntN(50_000) {
		if r.IntN(5) == 0 {
			u = r.IntN(users)
		}
		var unit any = fmt.Sprintf("u%d", u)
		switch {
		case u == 0:
			unit = nil
		case intUnits:
			unit = int64(u)
		case u == 1:
			unit = ""
		}
		v := int(float64(vals) * r.Float64() * r.Float64())
		var s, n any = fmt.Sprintf("w%d", v), int64(v - 7)
		switch v % 50 {
		case 0:
			s, n = nil, nil
		case 1:
			s = "\x01x"
		}
		if err := b.Append(unit, s, n, r.Float64()); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestCodedBuildGuardedAndCancelled: the build from codes is refused by
// the table's scan guard as a scan is, and ends with its context.
func TestCodedBuildGuardedAndCancelled(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	tbl := bigRandomTable(t, r, false)
	refused := errors.New("refused")
	guarded := tbl.WithScanGuard(func(*sql.Context) error { return refused })
	ctx := sql.NewContext(context.Background())
	if _, err := buildIndex(ctx, guarded, "db", "t", "uid", column(tbl, "s"), sealed.DefaultLimits()); !errors.Is(err, refused) {
		t.Fatalf("guarded table: %v, want the guard's refusal", err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := buildIndex(sql.NewContext(cctx), tbl, "db", "t", "uid", column(tbl, "n"), sealed.DefaultLimits()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled build: %v, want context.Canceled", err)
	}
}
