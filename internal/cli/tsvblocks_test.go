package cli

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRowsParallelTSVAsRows: on TSV files with what tabfile.Reader treats
// specially (leading and inner empty lines, "\r\n" and lone '\r' endings,
// lines longer than a block, extra columns, a header, no final newline,
// gzip), RowsParallel's workers split the same rows Rows reads, in order,
// and name the same line in errors.
func TestRowsParallelTSVAsRows(t *testing.T) {
	defer func(b int) { blockBytes = b }(blockBytes)
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		blockBytes = 16 + r.IntN(400)
		var b bytes.Buffer
		for range r.IntN(4) {
			b.WriteString([]string{"\n", "\r\n", "\r\r\n"}[r.IntN(3)])
		}
		if trial%3 == 0 {
			b.WriteString("user_id\tword\n")
		}
		rows := 200 + r.IntN(800)
		for i := range rows {
			fmt.Fprintf(&b, "u%d\t%s", r.IntN(50), strings.Repeat("w ", r.IntN(30)))
			if r.IntN(10) == 0 {
				b.WriteString("\textra\tcols")
			}
			if r.IntN(40) == 0 {
				b.WriteString(strings.Repeat("long ", 300))
			}
			if i < rows-1 || trial%2 == 0 {
				b.WriteString([]string{"\n", "\n", "\r\n", "\n\n", "\r\n\r\n"}[r.IntN(5)])
			}
		}
		name := "in.tsv"
		data := b.Bytes()
		if trial%4 == 1 {
			var z bytes.Buffer
			w := gzip.NewWriter(&z)
			w.Write(data)
			w.Close()
			data, name = z.Bytes(), "in.tsv.gz"
		}
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, col := range []int{2, 4} {
			in := InputFlags{Input: p, UserColumn: 1, TextColumn: col}
			var want []string
			n, wantErr := in.Rows(nil, func(user, value []byte) { want = append(want, string(user)+"|"+string(value)) })
			for _, workers := range []int{1, 3} {
				var got []string
				m, err := RowsParallel(&in, nil, workers, func() *[]string { return new([]string) },
					func(b *RowBlock, s *[]string) {
						*s = (*s)[:0]
						for i := range b.Len() {
							u, v := b.Row(i)
							*s = append(*s, string(u)+"|"+string(v))
						}
					},
					func(s *[]string) { got = append(got, *s...) })
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("trial %d, column %d, %d workers: error %v, want %v", trial, col, workers, err, wantErr)
				}
				if wantErr == nil && (m != n || strings.Join(got, "\n") != strings.Join(want, "\n")) {
					t.Fatalf("trial %d, column %d, %d workers: %d rows, want %d; rows differ", trial, col, workers, m, n)
				}
				if wantErr != nil && !strings.HasPrefix(strings.Join(want, "\n"), strings.Join(got, "\n")) {
					t.Fatalf("trial %d, column %d, %d workers: rows merged before the error are not a prefix of Rows'", trial, col, workers)
				}
			}
		}
	}
}
