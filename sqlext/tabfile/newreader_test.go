package tabfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestNewReaderMatchesOpen checks that NewReader reads a stream (plain or
// gzip, TSV or CSV) exactly as Open reads the same bytes from a file, and
// that it refuses the formats it does not read.
func TestNewReaderMatchesOpen(t *testing.T) {
	cases := []struct {
		name, content string
		format        Format
	}{
		{"a.tsv", "u1\thello world\r\n\nu2\tx\ty\n", TSV},
		{"b.csv", "user,text\nu1,\"a, b\"\nu2,\"multi\nline\"\n", CSV},
	}
	for _, c := range cases {
		for _, gz := range []bool{false, true} {
			path := writeFile(t, c.name, c.content, gz)
			want := readFile(t, path, c.format)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewReader(bytes.NewReader(data), c.format)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for {
				f, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				var row []string
				for _, b := range f {
					row = append(row, string(b))
				}
				got = append(got, row)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, slices.Equal) || len(got) == 0 {
				t.Errorf("%s (gzip %v): NewReader read %q, Open read %q", c.name, gz, got, want)
			}
		}
	}
	if _, err := NewReader(strings.NewReader("{}"), JSONL); err == nil {
		t.Error("NewReader accepted JSON lines")
	}
}
