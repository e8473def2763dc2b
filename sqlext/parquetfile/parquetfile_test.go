package parquetfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// null marks NULL in expected rows.
const null = "\x00NULL"

// open opens path through tabfile.OpenSource, which this package's init
// taught to read Parquet.
func open(t *testing.T, path string, o tabfile.Options) tabfile.Source {
	t.Helper()
	s, err := tabfile.OpenSource(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readAll returns every row of s, with NULL as the string null, and checks
// that Line grows and Progress ends at the size.
func readAll(t *testing.T, s tabfile.Source) [][]string {
	t.Helper()
	defer s.Close()
	var rows [][]string
	for {
		f, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.Line() != int64(len(rows)+1) {
			t.Errorf("row %d: Line %d", len(rows)+1, s.Line())
		}
		row := make([]string, len(f))
		for i, v := range f {
			row[i] = null
			if v != nil {
				row[i] = string(v)
			}
		}
		rows = append(rows, row)
	}
	if read, size := s.Progress(); read != size {
		t.Errorf("progress at EOF: %d of %d", read, size)
	}
	return rows
}

func eq(t *testing.T, got [][]string, want ...[]string) {
	t.Helper()
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("rows\n got %q\nwant %q", got, want)
	}
}

type pqNested struct {
	A *string `parquet:"a,optional"`
}

type pqRow struct {
	User   string   `parquet:"user_id"`
	Text   *string  `parquet:"text,optional"`
	N      int64    `parquet:"n"`
	Small  int32    `parquet:"small"`
	Big    uint64   `parquet:"big,uint(64)"`
	Score  *float64 `parquet:"score,optional"`
	Ratio  float32  `parquet:"ratio"`
	Flag   bool     `parquet:"flag"`
	Day    int32    `parquet:"day,date"`
	At     int64    `parquet:"at,timestamp(microsecond)"`
	Clock  int64    `parquet:"clock,time(microsecond)"`
	Price  int64    `parquet:"price,decimal(2:18)"`
	ID     [16]byte `parquet:"id,uuid"`
	Raw    []byte   `parquet:"raw"`
	Nested pqNested `parquet:"nested"`
	Tags   []string `parquet:"tags,list"`
}

func str(s string) *string { return &s }

func writeParquet(t *testing.T, rows []pqRow, perGroup int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[pqRow](f, parquet.MaxRowsPerRowGroup(perGroup))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSourceParquet(t *testing.T) {
	score := 0.25
	at := time.Date(2024, 2, 29, 13, 4, 5, 123456000, time.UTC)
	rows := []pqRow{
		{User: "u1", Text: str("héllo"), N: -7, Small: 3, Big: 1<<63 + 1, Score: &score, Ratio: 1.5, Flag: true,
			Day: int32(at.Unix() / 86400), At: at.UnixMicro(), Clock: (13*3600+4*60+5)*1e6 + 500000, Price: -1234,
			ID: [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}, Raw: []byte{},
			Nested: pqNested{A: str("in")}, Tags: []string{"x"}},
		{User: "u2", Price: 5, Raw: []byte("r")},
		{User: "u3", Text: str(""), N: 1},
	}
	// Many row groups: the value readers must restart per group.
	var many []pqRow
	for i := range 1000 {
		r := rows[i%3]
		r.N = int64(i)
		many = append(many, r)
	}
	p := writeParquet(t, many, 64)
	cols := []tabfile.Column{{Name: "n"}, {Name: "user_id"}, {Name: "text"}, {Name: "small"}, {Name: "big"}, {Name: "score"},
		{Name: "ratio"}, {Name: "flag"}, {Name: "day"}, {Name: "at"}, {Name: "clock"}, {Name: "price"}, {Name: "id"},
		{Name: "raw"}, {Name: "nested.a"}}
	got := readAll(t, open(t, p, tabfile.Options{Columns: cols}))
	if len(got) != 1000 {
		t.Fatalf("%d rows, want 1000", len(got))
	}
	eq(t, got[:3],
		[]string{"0", "u1", "héllo", "3", "9223372036854775809", "0.25", "1.5", "1", "2024-02-29", "2024-02-29 13:04:05.123456",
			"13:04:05.5", "-12.34", "12345678-9abc-def0-0102-030405060708", "", "in"},
		[]string{"1", "u2", null, "0", "0", null, "0", "0", "1970-01-01", "1970-01-01 00:00:00", "00:00:00", "0.05", "00000000-0000-0000-0000-000000000000", "r", null},
		[]string{"2", "u3", "", "0", "0", null, "0", "0", "1970-01-01", "1970-01-01 00:00:00", "00:00:00", "0.00", "00000000-0000-0000-0000-000000000000", "", null})
	for i, r := range got {
		if r[0] != fmt.Sprint(i) || r[1] != many[i].User {
			t.Fatalf("row %d: %q", i, r)
		}
	}

	// Errors.
	for _, c := range []struct {
		o    tabfile.Options
		want string
	}{
		{tabfile.Options{}, `column "tags.list.element" is repeated`},
		{tabfile.Options{Columns: []tabfile.Column{{Name: "nope"}}}, `no column "nope" (the file has "user_id", "text"`},
		{tabfile.Options{Columns: []tabfile.Column{{Name: "nested"}}}, `no column "nested"`},
		{tabfile.Options{Columns: []tabfile.Column{{Position: 1}}}, "selected by name"},
		{tabfile.Options{Header: true}, "no header row"},
	} {
		_, err := tabfile.OpenSource(p, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := tabfile.OpenSource(garbage(t), tabfile.Options{}); err == nil || !strings.Contains(err.Error(), "not a readable Parquet file") {
		t.Errorf("garbage: %v", err)
	}
}

// Without Columns a Parquet file yields every (flat) column in schema order.
func TestSourceParquetAllColumns(t *testing.T) {
	type flat struct {
		A string `parquet:"a"`
		B *int64 `parquet:"b,optional"`
	}
	p := filepath.Join(t.TempDir(), "f.parquet")
	if err := parquet.WriteFile(p, []flat{{"x", nil}, {"y", new(int64)}}); err != nil {
		t.Fatal(err)
	}
	eq(t, readAll(t, open(t, p, tabfile.Options{})), []string{"x", null}, []string{"y", "0"})
}

func TestAppendDecimal(t *testing.T) {
	for _, c := range []struct {
		b     []byte
		scale int
		want  string
	}{
		{[]byte{0x04, 0xd2}, 2, "12.34"},
		{[]byte{0xfb, 0x2e}, 2, "-12.34"},
		{[]byte{0x01}, 3, "0.001"},
		{[]byte{0xff}, 1, "-0.1"},
		{[]byte{0x07}, 0, "7"},
		{[]byte{0x07}, -2, "700"},
	} {
		if got := string(appendDecimal(nil, twosComplement(c.b), c.scale)); got != c.want {
			t.Errorf("%x scale %d: %s, want %s", c.b, c.scale, got, c.want)
		}
	}
	if f := halfToFloat(0x3e00); f != 1.5 {
		t.Errorf("half 0x3e00 = %v", f)
	}
}

// garbage writes a file named .parquet that is not one.
func garbage(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "x.parquet")
	if err := os.WriteFile(p, []byte("not parquet at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
