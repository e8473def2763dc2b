package release

import (
	"context"
	"errors"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/storage"
)

// TestScanStopsWithinCheckRows: a release's scan whose context ends stops
// after at most checkRows more rows (each may do a row's whole work
// bound), and reports the cancellation.
func TestScanStopsWithinCheckRows(t *testing.T) {
	b, err := storage.NewTableBuilder("t", []storage.Column{{Name: "uid", Type: storage.BigInt}, {Name: "s", Type: storage.Text}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		if err := b.Append(int64(i%70), "w"); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{1, 15, 16, 17, 1000} {
		cctx, cancel := context.WithCancel(context.Background())
		ctx := sql.NewContext(cctx)
		s, err := NewScan(ctx, "db", "t", tbl, "uid", Expr{}, []Expr{{E: column(tbl, "s")}}, sealed.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		err = s.Run(ctx, func(*Row) {
			if rows++; rows == at {
				cancel()
			}
		})
		cancel()
		if !errors.Is(err, context.Canceled) || rows > at+checkRows {
			t.Fatalf("cancelled at row %d: %d rows read, error %v; want at most %d and the cancellation", at, rows, err, at+checkRows)
		}
	}
}
