package tabfile

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFile(t *testing.T, path string, f Format) [][]string {
	t.Helper()
	r, err := Open(path, f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out [][]string
	for {
		fields, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var row []string
		for _, b := range fields {
			row = append(row, string(b))
		}
		out = append(out, row)
	}
}

func TestTSVAndCSV(t *testing.T) {
	dir := t.TempDir()
	tsv := filepath.Join(dir, "a.tsv")
	os.WriteFile(tsv, []byte("u1\thello world\r\n\nu2\t\"quoted\" text\tthird\nu3\t"+strings.Repeat("x", 3<<20)+"\n"), 0o644)
	rows := readFile(t, tsv, TSV)
	if len(rows) != 3 || rows[0][1] != "hello world" || rows[1][1] != `"quoted" text` || len(rows[1]) != 3 || len(rows[2][1]) != 3<<20 {
		t.Fatalf("TSV rows: %d, %q", len(rows), rows[:2])
	}
	csvPath := filepath.Join(dir, "b.csv.gz")
	f, _ := os.Create(csvPath)
	z := gzip.NewWriter(f)
	z.Write([]byte("user,text\nu1,\"a, b\"\nu2,\"multi\nline \"\"q\"\"\"\n"))
	z.Close()
	f.Close()
	if FormatOf(csvPath) != CSV || FormatOf("x.tsv.gz") != TSV {
		t.Fatal("FormatOf")
	}
	rows = readFile(t, csvPath, CSV)
	if len(rows) != 3 || rows[1][1] != "a, b" || rows[2][1] != "multi\nline \"q\"" {
		t.Fatalf("CSV rows: %q", rows)
	}
	if _, err := ParseFormat("xls"); err == nil {
		t.Fatal("ParseFormat accepted xls")
	}
	if _, err := Open(filepath.Join(dir, "missing"), TSV); err == nil {
		t.Fatal("opened a missing file")
	}
}
