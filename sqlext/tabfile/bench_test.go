package tabfile_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	_ "github.com/dpsql/dpsql/sqlext/parquetfile"
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// BenchmarkSource reads the same 200,000 (user_id, text) rows from each
// format and reports rows per second.
func BenchmarkSource(b *testing.B) {
	const rows = 200_000
	dir := b.TempDir()
	type row struct {
		User string `parquet:"user_id"`
		Text string `parquet:"text"`
	}
	data := make([]row, rows)
	for i := range data {
		data[i] = row{fmt.Sprintf("%016x", i%7000*2654435761), fmt.Sprintf("commit message number %d with a few words", i)}
	}
	write := func(name string, line func(r row) string) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for _, r := range data {
			w.WriteString(line(r))
		}
		w.Flush()
		f.Close()
		return p
	}
	tsv := write("b.tsv", func(r row) string { return r.User + "\t" + r.Text + "\n" })
	jsonl := write("b.jsonl", func(r row) string { return fmt.Sprintf("{\"user_id\":%q,\"text\":%q}\n", r.User, r.Text) })
	pq := filepath.Join(dir, "b.parquet")
	if err := parquet.WriteFile(pq, data); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		path string
		o    tabfile.Options
	}{
		{"tsv", tsv, tabfile.Options{Columns: []tabfile.Column{{Position: 1}, {Position: 2}}}},
		{"jsonl", jsonl, tabfile.Options{Columns: []tabfile.Column{{Name: "user_id"}, {Name: "text"}}}},
		{"parquet", pq, tabfile.Options{Columns: []tabfile.Column{{Name: "user_id"}, {Name: "text"}}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				s, err := tabfile.OpenSource(c.path, c.o)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					_, err := s.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				s.Close()
				if n != rows {
					b.Fatalf("%d rows", n)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
