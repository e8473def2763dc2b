package storage

import (
	"context"
	"errors"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// TestColumnCodes: per row, the value of its code is the value the scan
// gives (NULL as NullCode) for TEXT and BIGINT columns; other types are
// not coded; the scan guard applies.
func TestColumnCodes(t *testing.T) {
	b, _ := NewTableBuilder("t", []Column{{Name: "a", Type: BigInt}, {Name: "b", Type: Text}, {Name: "c", Type: Double}})
	n := 2*partitionRows + 5
	for i := 0; i < n; i++ {
		var a, s any = int64(i % 7), []string{"x", "", "\x00z"}[i%3]
		if i%11 == 0 {
			a, s = nil, nil
		}
		if err := b.Append(a, s, float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx := sql.NewContext(context.Background())
	all := rows(t, tbl)
	for j, col := range []string{"A", "b"} {
		codes, values, ok, err := tbl.ColumnCodes(ctx, col)
		if !ok || err != nil || len(codes) != n {
			t.Fatalf("column %s: ok=%v err=%v, %d codes", col, ok, err, len(codes))
		}
		for r, c := range codes {
			var v any
			if c != NullCode {
				v = values[c]
			}
			if v != all[r][j] {
				t.Fatalf("column %s row %d: code %d is %#v, the scan gives %#v", col, r, c, v, all[r][j])
			}
		}
	}
	if _, _, ok, _ := tbl.ColumnCodes(ctx, "c"); ok {
		t.Fatal("a DOUBLE column was coded")
	}
	refused := errors.New("refused")
	if _, _, ok, err := tbl.WithScanGuard(func(*sql.Context) error { return refused }).ColumnCodes(ctx, "b"); ok || !errors.Is(err, refused) {
		t.Fatalf("guarded table: ok=%v err=%v", ok, err)
	}
}
