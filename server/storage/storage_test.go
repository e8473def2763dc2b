package storage

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/parquet-go/parquet-go"

	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// sliceSource is a RowSource over in-memory rows.
type sliceSource struct {
	rows [][]string
	i    int
	buf  [][]byte
}

func (s *sliceSource) Next() ([][]byte, error) {
	if s.i >= len(s.rows) {
		return nil, io.EOF
	}
	s.buf = s.buf[:0]
	for _, f := range s.rows[s.i] {
		s.buf = append(s.buf, []byte(f))
	}
	s.i++
	return s.buf, nil
}

func (s *sliceSource) Line() int64 { return int64(s.i) }

type namedSlice struct {
	sliceSource
	names []string
}

func (s *namedSlice) Columns() []string { return s.names }

func rows(t *testing.T, tbl sql.Table) []sql.Row {
	t.Helper()
	ctx := sql.NewContext(context.Background())
	parts, err := tbl.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sql.RowIterToRows(ctx, sql.NewTableRowIter(ctx, tbl, parts))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInferTypes(t *testing.T) {
	for _, c := range []struct {
		vals []string
		want Type
	}{
		{[]string{"1", "-2", "", "\\N"}, BigInt},
		{[]string{"1", "2.5", "1e3"}, Double},
		{[]string{"007", "8"}, Text},
		{[]string{"12345678901234567890123"}, Text},
		{[]string{"1.5", "12345678901234567890123"}, Text},
		{[]string{"2024-01-02", "2023-12-31"}, Date},
		{[]string{"2024-01-02", "2024-01-02 10:11:12"}, Datetime},
		{[]string{"2024-01-02T10:11:12Z"}, Datetime},
		{[]string{"abc", "1"}, Text},
		{[]string{"", ""}, Text},
		{[]string{"NaN"}, Text},
	} {
		var vals [][]byte
		for _, v := range c.vals {
			vals = append(vals, []byte(v))
		}
		if got := inferType(vals); got != c.want {
			t.Errorf("inferType(%q) = %s, want %s", c.vals, got, c.want)
		}
	}
}

func TestLoadWithHeaderAndTypes(t *testing.T) {
	src := &sliceSource{rows: [][]string{
		{"id", "name", "score", "day", "at"},
		{"1", "ann", "1.5", "2024-01-02", "2024-01-02 03:04:05"},
		{"2", "", "", "", "\\N"},
		{"3", "\\N", "-2", "2024-02-29", "2024-02-29T10:00:00.25Z"},
	}}
	tbl, info, err := Load("t", src, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Header || info.Rows != 3 {
		t.Fatalf("info %+v", info)
	}
	var types []string
	for _, c := range tbl.Columns() {
		types = append(types, c.Name+" "+c.Type.String())
	}
	if got := strings.Join(types, ", "); got != "id BIGINT, name TEXT, score DOUBLE, day DATE, at DATETIME" {
		t.Fatalf("columns %s", got)
	}
	got := rows(t, tbl)
	d := func(s string) time.Time {
		v, _ := time.Parse("2006-01-02 15:04:05.999", s)
		return v
	}
	want := []sql.Row{
		{int64(1), "ann", 1.5, d("2024-01-02 00:00:00"), d("2024-01-02 03:04:05")},
		{int64(2), "", nil, nil, nil},
		{int64(3), nil, -2.0, d("2024-02-29 00:00:00"), d("2024-02-29 10:00:00.25")},
	}
	for i := range want {
		for j := range want[i] {
			if !equal(got[i][j], want[i][j]) {
				t.Errorf("row %d col %d: %v (%T), want %v", i, j, got[i][j], got[i][j], want[i][j])
			}
		}
	}
}

func equal(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	return a == b
}

func TestHeaderDetection(t *testing.T) {
	for _, c := range []struct {
		rows   [][]string
		header bool
		names  string
	}{
		// The corpora: hex user ids and text, no header.
		{[][]string{{"68d71a232fb2b06e", "Removed recipe (conda-sboms)."}, {"2659899c54dcb062", "Add conda-sboms"}}, false, "c1,c2"},
		// Names over text.
		{[][]string{{"user_id", "word"}, {"u1", "hello"}}, true, "user_id,word"},
		// Names over numbers.
		{[][]string{{"id", "n"}, {"1", "2"}}, true, "id,n"},
		// Numbers only.
		{[][]string{{"1", "2"}, {"3", "4"}}, false, "c1,c2"},
		// A single row of names.
		{[][]string{{"a", "b"}}, true, "a,b"},
		// Identifier-like first row over a numeric column is data if it parses.
		{[][]string{{"x", "1"}, {"y", "2"}}, false, "c1,c2"},
	} {
		tbl, info, err := Load("t", &sliceSource{rows: c.rows}, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, col := range tbl.Columns() {
			names = append(names, col.Name)
		}
		if info.Header != c.header || strings.Join(names, ",") != c.names {
			t.Errorf("%q: header %v names %v", c.rows, info.Header, names)
		}
	}
}

func TestLoadSpecColumnsAndErrors(t *testing.T) {
	spec, err := ParseLoadSpec("sales.visits(user_id BIGINT, item, day date)=/tmp/v.csv.gz", "data")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Database != "sales" || spec.Table != "visits" || spec.Path != "/tmp/v.csv.gz" || len(spec.Columns) != 3 ||
		!spec.Columns[0].Typed || spec.Columns[1].Typed || spec.Columns[2].Type != Date {
		t.Fatalf("spec %+v", spec)
	}
	spec, err = ParseLoadSpec("posts=a=b.tsv", "data")
	if err != nil || spec.Database != "data" || spec.Table != "posts" || spec.Path != "a=b.tsv" {
		t.Fatalf("spec %+v, %v", spec, err)
	}
	for _, bad := range []string{"posts", "=x.tsv", "posts(a=x.tsv", "posts(a BLOB)=x", "my table=x", "posts()=x", "a.b.c=x"} {
		if _, err := ParseLoadSpec(bad, "data"); err == nil {
			t.Errorf("ParseLoadSpec(%q) accepted", bad)
		}
	}

	// Declared columns: a header equal to them is skipped; declared types
	// are used; a bad value names the line and column.
	src := &sliceSource{rows: [][]string{{"USER_ID", "item"}, {"1", "a"}, {"2", "b"}}}
	tbl, info, err := Load("t", src, LoadOptions{Columns: []ColumnSpec{{Name: "user_id", Type: Text, Typed: true}, {Name: "item"}}})
	if err != nil || !info.Header || tbl.Len() != 2 || tbl.Columns()[0].Type != Text {
		t.Fatalf("%+v %v", info, err)
	}
	src = &sliceSource{rows: [][]string{{"1", "a"}, {"x", "b"}}}
	_, _, err = Load("t", src, LoadOptions{Columns: []ColumnSpec{{Name: "id", Type: BigInt, Typed: true}, {Name: "item"}}, Label: "f.tsv"})
	if err == nil || err.Error() != `f.tsv: line 2: column id: "x" is not a BIGINT` {
		t.Fatalf("got %v", err)
	}
	// A value past the sample that does not fit the inferred type.
	src = &sliceSource{rows: [][]string{{"1"}, {"2"}, {"three"}}}
	_, _, err = Load("t", src, LoadOptions{SampleRows: 2, Label: "f.tsv"})
	want := `f.tsv: line 3: column c1: "three" is not a BIGINT (the type was inferred from the first 2 rows; declare the column's type to override)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	// Ragged rows.
	src = &sliceSource{rows: [][]string{{"1", "a"}, {"2"}}}
	if _, _, err = Load("t", src, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "line 2 has 1 field(s), but the table has 2 column(s)") {
		t.Fatalf("got %v", err)
	}
	// Empty file without names.
	if _, _, err = Load("t", &sliceSource{}, LoadOptions{}); err == nil {
		t.Fatal("empty file accepted")
	}
	// A source that names its columns.
	ns := &namedSlice{sliceSource: sliceSource{rows: [][]string{{"1", "x"}}}, names: []string{"k", "v"}}
	tbl, info, err = Load("t", ns, LoadOptions{})
	if err != nil || info.Header || tbl.Columns()[0].Name != "k" || tbl.Columns()[0].Type != BigInt {
		t.Fatalf("%+v %v", info, err)
	}
}

func TestLoadFileGzipCSV(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v.csv.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, "user_id,comment\n1,\"hello, world\"\n2,\"multi\nline\"\n")
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl, info, err := LoadFile("v", path, "", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := rows(t, tbl)
	if !info.Header || len(got) != 2 || got[0][1] != "hello, world" || got[1][1] != "multi\nline" || got[1][0] != int64(2) {
		t.Fatalf("%+v %v", info, got)
	}
	if _, _, err := LoadFile("v", filepath.Join(dir, "missing.tsv"), tabfile.TSV, LoadOptions{}); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestScanProjectionAndPartitions(t *testing.T) {
	b, _ := NewTableBuilder("t", []Column{{Name: "a", Type: BigInt}, {Name: "b", Type: Text}, {Name: "c", Type: Double}})
	n := 3*partitionRows + 17
	for i := 0; i < n; i++ {
		if err := b.Append(i, []string{"x", "y", "z"}[i%3], float64(i)/2); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	all := rows(t, tbl)
	if len(all) != n || all[n-1][0] != int64(n-1) || all[n-1][1] != []string{"x", "y", "z"}[(n-1)%3] {
		t.Fatalf("scan: %d rows, last %v", len(all), all[len(all)-1])
	}
	p := tbl.WithProjections([]string{"C", "a"})
	if s := p.Schema(); len(s) != 2 || s[0].Name != "c" || s[1].Name != "a" {
		t.Fatalf("projected schema %v", s)
	}
	got := rows(t, p)
	if len(got) != n || got[5][0] != 2.5 || got[5][1] != int64(5) || len(got[5]) != 2 {
		t.Fatalf("projected row %v", got[5])
	}
	// Rows stay valid after later batches are read.
	if all[0][0] != int64(0) || all[0][1] != "x" {
		t.Fatalf("first row changed: %v", all[0])
	}
}

func TestBuilderErrors(t *testing.T) {
	if _, err := NewTableBuilder("t", []Column{{Name: "a"}, {Name: "A"}}); err == nil {
		t.Fatal("duplicate column accepted")
	}
	b, _ := NewTableBuilder("t", []Column{{Name: "a", Type: BigInt, NotNull: true}, {Name: "b", Type: Text}})
	if err := b.Append(nil, "x"); err == nil {
		t.Fatal("NULL in NOT NULL column accepted")
	}
	if err := b.Append(1, "x"); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendText([][]byte{[]byte("2"), []byte("y")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Append("x", "z"); err == nil {
		t.Fatal("text in BIGINT accepted")
	}
	tbl, err := b.Build()
	if err != nil || tbl.Len() != 2 {
		t.Fatalf("%v, %d rows (a failed row must leave nothing behind)", err, tbl.Len())
	}
}

func TestRowCountsAndProvider(t *testing.T) {
	b, _ := NewTableBuilder("Visits", []Column{{Name: "a", Type: BigInt}})
	for i := 0; i < 1234; i++ {
		b.Column(0).AppendInt(int64(i))
	}
	tbl, _ := b.Build()
	ctx := sql.NewEmptyContext()
	for _, c := range []struct {
		mode  RowCounts
		n     uint64
		exact bool
	}{{ExactCounts, 1234, true}, {HiddenCounts, 0, false}, {CoarseCounts, 10000, false}} {
		n, exact, err := tbl.WithRowCounts(c.mode).RowCount(ctx)
		if err != nil || n != c.n || exact != c.exact {
			t.Errorf("mode %d: %d %v %v", c.mode, n, exact, err)
		}
	}
	if l, _ := tbl.WithRowCounts(HiddenCounts).DataLength(ctx); l != 0 {
		t.Errorf("hidden data length %d", l)
	}

	db := NewDatabase("Sales")
	if err := db.AddTable(tbl); err != nil {
		t.Fatal(err)
	}
	if err := db.AddTable(tbl); err == nil {
		t.Fatal("duplicate table accepted")
	}
	p, err := NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasDatabase(ctx, "SALES") || p.HasDatabase(ctx, "other") {
		t.Fatal("database lookup is not case-insensitive")
	}
	got, _ := p.Database(ctx, "sales")
	if tt, ok, _ := got.GetTableInsensitive(ctx, "VISITS"); !ok || tt.Name() != "Visits" {
		t.Fatal("table lookup is not case-insensitive")
	}
	if _, err := p.Database(ctx, "nope"); err == nil || !sql.ErrDatabaseNotFound.Is(err) {
		t.Fatalf("missing database: %v", err)
	}
	if err := p.AddDatabase(NewDatabase("information_schema")); err == nil {
		t.Fatal("reserved name accepted")
	}
	if tbl.Schema()[0].DatabaseSource != "Sales" {
		t.Fatalf("schema database %q", tbl.Schema()[0].DatabaseSource)
	}
}

func TestLoadJSONLinesAndParquet(t *testing.T) {
	dir := t.TempDir()
	jl := filepath.Join(dir, "events.jsonl.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, `{"user": 1, "url": "a.example", "day": "2024-01-02", "meta": {"k": 1}}`+"\n")
	io.WriteString(zw, `{"url": "b.example", "user": 2, "day": null}`+"\n\n")
	zw.Close()
	os.WriteFile(jl, buf.Bytes(), 0o644)
	tbl, info, err := LoadFile("events", jl, "", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range info.Columns {
		cols = append(cols, c.Name+" "+c.Type.String())
	}
	if strings.Join(cols, ", ") != "user BIGINT, url TEXT, day DATE, meta TEXT" || info.Header {
		t.Fatalf("columns %v, header %v", cols, info.Header)
	}
	got := rows(t, tbl)
	if len(got) != 2 || got[1][0] != int64(2) || got[1][2] != nil || got[1][3] != nil || got[0][3] != `{"k":1}` {
		t.Fatalf("rows %v", got)
	}
	// Declared columns select keys.
	tbl, _, err = LoadFile("events", jl, "", LoadOptions{Columns: []ColumnSpec{{Name: "url"}, {Name: "user", Type: Text, Typed: true}}})
	if err != nil || rows(t, tbl)[0][1] != "1" {
		t.Fatalf("%v %v", err, rows(t, tbl))
	}

	type visit struct {
		User  int64    `parquet:"user_id"`
		Item  string   `parquet:"item"`
		Score *float64 `parquet:"score,optional"`
	}
	pq := filepath.Join(dir, "visits.parquet")
	half := 0.5
	if err := parquet.WriteFile(pq, []visit{{1, "x", &half}, {2, "y", nil}}); err != nil {
		t.Fatal(err)
	}
	tbl, info, err = LoadFile("visits", pq, "", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cols = cols[:0]
	for _, c := range info.Columns {
		cols = append(cols, c.Name+" "+c.Type.String())
	}
	got = rows(t, tbl)
	if strings.Join(cols, ", ") != "user_id BIGINT, item TEXT, score DOUBLE" || len(got) != 2 || got[0][2] != 0.5 || got[1][2] != nil {
		t.Fatalf("columns %v rows %v", cols, got)
	}
}
