package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func writeTSV(t *testing.T, rows int) string {
	t.Helper()
	var b strings.Builder
	for i := range rows {
		if i%97 == 0 {
			b.WriteString("\n") // empty lines are skipped
		}
		fmt.Fprintf(&b, "user%d\tvalue %d %s\n", i%131, i, strings.Repeat("x", i%50))
	}
	p := filepath.Join(t.TempDir(), "in.tsv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRowsParallelOrder: with tiny blocks, any number of workers and
// GOMAXPROCS 1 or 2, merge sees every row once, in input order, with the
// fields Rows gives.
func TestRowsParallelOrder(t *testing.T) {
	defer func(b int) { blockBytes = b }(blockBytes)
	blockBytes = 500
	in := InputFlags{Input: writeTSV(t, 20000), UserColumn: 1, TextColumn: 2}
	var want []string
	n, err := in.Rows(nil, func(user, value []byte) { want = append(want, string(user)+"|"+string(value)) })
	if err != nil || n != int64(len(want)) {
		t.Fatalf("Rows: %d rows, %v", n, err)
	}
	for _, procs := range []int{1, 2} {
		for _, workers := range []int{0, 1, 2, 7} {
			prev := runtime.GOMAXPROCS(procs)
			var got []string
			n, err := RowsParallel(&in, nil, workers, func() *[]string { return new([]string) },
				func(b *RowBlock, s *[]string) {
					*s = (*s)[:0]
					for i := range b.Len() {
						u, v := b.Row(i)
						*s = append(*s, string(u)+"|"+string(v))
					}
				},
				func(s *[]string) { got = append(got, *s...) })
			runtime.GOMAXPROCS(prev)
			if err != nil || n != int64(len(want)) {
				t.Fatalf("RowsParallel: %d rows, %v", n, err)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("GOMAXPROCS %d, %d workers: rows differ (%d vs %d)", procs, workers, len(got), len(want))
			}
		}
	}
}

// TestRowsParallelError: a row with too few columns stops the read with the
// error Rows gives.
func TestRowsParallelError(t *testing.T) {
	defer func(b int) { blockBytes = b }(blockBytes)
	blockBytes = 100
	p := filepath.Join(t.TempDir(), "bad.tsv")
	os.WriteFile(p, []byte("u1\ta\nu2\tb\nu3\nu4\td\n"), 0o644)
	in := InputFlags{Input: p, UserColumn: 1, TextColumn: 2}
	_, want := in.Rows(nil, func(_, _ []byte) {})
	_, err := RowsParallel(&in, nil, 2, func() *int { return new(int) }, func(*RowBlock, *int) {}, func(*int) {})
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("error %v, want %v", err, want)
	}
	if !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("error %v does not name line 3", err)
	}
}
