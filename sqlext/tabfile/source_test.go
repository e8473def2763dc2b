package tabfile

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testenv"
)

// null marks NULL in expected rows.
const null = "\x00NULL"

func writeFile(t *testing.T, name, content string, gz bool) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	data := []byte(content)
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
		data = b.Bytes()
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readAll returns every row of s, with NULL as the string null, and checks
// that Line and Progress behave.
func readAll(t *testing.T, s Source) [][]string {
	t.Helper()
	defer s.Close()
	var rows [][]string
	last := int64(0)
	for {
		f, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.Line() <= last {
			t.Errorf("Line went from %d to %d", last, s.Line())
		}
		last = s.Line()
		row := make([]string, len(f))
		for i, v := range f {
			if v == nil {
				row[i] = null
			} else {
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

func open(t *testing.T, path string, o Options) Source {
	t.Helper()
	s, err := OpenSource(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func eq(t *testing.T, got [][]string, want ...[]string) {
	t.Helper()
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("rows\n got %q\nwant %q", got, want)
	}
}

func TestFormats(t *testing.T) {
	for name, want := range map[string]Format{
		"a.tsv": TSV, "a.tsv.gz": TSV, "a.txt": TSV, "a.CSV": CSV, "a.csv.gz": CSV,
		"a.jsonl": JSONL, "a.ndjson.gz": JSONL, "a.json": JSONL, "a.parquet": Parquet, "a.pq": Parquet,
	} {
		if got := FormatOf(name); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", name, got, want)
		}
	}
	for s, want := range map[string]Format{"TSV": TSV, "csv": CSV, "jsonl": JSONL, "ndjson": JSONL, " Parquet ": Parquet} {
		if got, err := ParseFormat(s); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil || !strings.Contains(err.Error(), "tsv, csv, jsonl or parquet") {
		t.Errorf("ParseFormat(xml): %v", err)
	}
	if _, err := Open("x.jsonl", JSONL); err == nil || !strings.Contains(err.Error(), "use a tsv or csv file") {
		t.Errorf("Open of JSON lines: %v", err)
	}
}

// The Reader keeps its behaviour: every field, blank lines skipped, \r\n
// endings, gzip by magic number, long lines.
func TestReaderTSVAndCSV(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	p := writeFile(t, "a.dat", "u1\thello\r\n\nu2\t\t"+long+"\nu3", true)
	r, err := Open(p, TSV)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, readAll(t, r), []string{"u1", "hello"}, []string{"u2", "", long}, []string{"u3"})

	p = writeFile(t, "a.csv", "u1,\"a, \"\"quoted\"\"\nline\"\n\nu2,\n", false)
	r, err = Open(p, CSV)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, readAll(t, r), []string{"u1", "a, \"quoted\"\nline"}, []string{"u2", ""})
}

func TestSourceDelimited(t *testing.T) {
	tsv := writeFile(t, "t.tsv.gz", "u1\tw1\t7\nu2\t\\N\t\n\nu3\tw3\t9\n", true)
	eq(t, readAll(t, open(t, tsv, Options{})),
		[]string{"u1", "w1", "7"}, []string{"u2", `\N`, ""}, []string{"u3", "w3", "9"})
	nul := `\N`
	eq(t, readAll(t, open(t, tsv, Options{Columns: []Column{{Position: 3}, {Position: 1}, {Position: 2}}, Null: &nul})),
		[]string{"7", "u1", "w1"}, []string{"", "u2", null}, []string{"9", "u3", "w3"})

	csv := writeFile(t, "h.csv", "\uFEFFuser, word ,n\nu1,\"w, 1\",1\nu2,,\n", false)
	eq(t, readAll(t, open(t, csv, Options{Header: true, Columns: []Column{{Name: "word"}, {Name: "user"}}})),
		[]string{"w, 1", "u1"}, []string{"", "u2"})
	empty := ""
	eq(t, readAll(t, open(t, csv, Options{Header: true, Null: &empty})),
		[]string{"u1", "w, 1", "1"}, []string{"u2", null, null})

	// Errors say what is wrong and where.
	for _, c := range []struct {
		path string
		o    Options
		want string
	}{
		{tsv, Options{Columns: []Column{{Name: "user"}}}, "has no header row"},
		{csv, Options{Header: true, Columns: []Column{{Name: "nope"}}}, `no column "nope" in the header (it has "user", "word", "n")`},
		{csv, Options{Header: true, Columns: []Column{{Name: "n", Position: 2}}}, "not both"},
		{csv, Options{Columns: []Column{{}}}, "a name or a position"},
		{writeFile(t, "e.csv", "", false), Options{Header: true}, "empty but a header row was expected"},
		{writeFile(t, "d.csv", "a,a\n1,2\n", false), Options{Header: true, Columns: []Column{{Name: "a"}}}, "more than once"},
	} {
		_, err := OpenSource(c.path, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
	s := open(t, tsv, Options{Columns: []Column{{Position: 4}}})
	defer s.Close()
	if _, err := s.Next(); err == nil || !strings.Contains(err.Error(), "line 1 has 3 field(s) but column #4 is field 4") {
		t.Errorf("short row: %v", err)
	}
}

func TestSourceJSONL(t *testing.T) {
	content := `{"user": "u1", "text": "caf\u00e9 \"x\"", "n": 12345678901234567890, "ok": true, "tags": [1, {"a" : null}], "extra": 1}

{"user":"u2","text":"","n":-1.5e3,"ok":false,"tags":null}
  {"n": 3, "user": "u3"}  ` + "\r\n"
	for _, gz := range []bool{false, true} {
		p := writeFile(t, "a.jsonl", content, gz)
		s := open(t, p, Options{Columns: []Column{{Name: "user"}, {Name: "text"}, {Name: "n"}, {Name: "ok"}, {Name: "tags"}}})
		eq(t, readAll(t, s),
			[]string{"u1", `café "x"`, "12345678901234567890", "1", `[1,{"a":null}]`},
			[]string{"u2", "", "-1.5e3", "0", null},
			[]string{"u3", null, "3", null, null})
	}
	for _, c := range []struct {
		content string
		want    string
	}{
		{`[{"user":"u1"}]`, "line 1: expected a JSON object (this looks like a JSON array"},
		{"{\"user\":\"u1\"}\n{\"user\":", "line 2: invalid JSON: unexpected end of JSON input"},
		{"\n\n42\n", "line 3: expected a JSON object"},
	} {
		s := open(t, writeFile(t, "bad.jsonl", c.content, false), Options{Columns: []Column{{Name: "user"}}})
		var err error
		for err == nil {
			_, err = s.Next()
		}
		s.Close()
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.content, err, c.want)
		}
	}
	p := writeFile(t, "a.jsonl", "{}", false)
	for _, o := range []Options{{}, {Columns: []Column{{Position: 1}}}, {Header: true, Columns: []Column{{Name: "a"}}}} {
		if _, err := OpenSource(p, o); err == nil {
			t.Errorf("%+v accepted for JSON lines", o)
		}
	}
}

// The shared corpus reads through the Source like through the Reader.
func TestSourceCorpus(t *testing.T) {
	path := testenv.DataFile(t, "git_rails.tsv.gz")
	s := open(t, path, Options{Columns: []Column{{Position: 1}, {Position: 2}}})
	defer s.Close()
	n := 0
	for {
		f, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(f) != 2 || len(f[0]) != 16 {
			t.Fatalf("line %d: %q", s.Line(), f)
		}
		n++
	}
	if n != 73048 {
		t.Errorf("%d rows, want 73,048 (git_rails.stats.txt)", n)
	}
}

func TestSourceJSONLKeys(t *testing.T) {
	content := `{ "us\u0065r" : "escaped key", "text" : "a}b{\"]" , "n":1 , "n" : 2 }
{}
{"user":{"deep":[{"x":"}"}]},"text":[]}
`
	s := open(t, writeFile(t, "k.jsonl", content, false), Options{Columns: []Column{{Name: "user"}, {Name: "text"}, {Name: "n"}}})
	eq(t, readAll(t, s),
		[]string{"escaped key", `a}b{"]`, "2"},
		[]string{null, null, null},
		[]string{`{"deep":[{"x":"}"}]}`, "[]", null})
}

// FuzzJSONLMembers checks the member scanner against encoding/json on
// valid objects: the same keys with the same values (the last of duplicates).
func FuzzJSONLMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":"x\"}","b":[1,{"c":null}],"a":true}`, ` { "k" : -1.5e3 , "\u006b2":"" } `, `{"":{}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line := []byte(s)
		var want map[string]json.RawMessage
		if !json.Valid(line) || json.Unmarshal(line, &want) != nil {
			return
		}
		got := map[string]string{}
		err := eachMember(bytes.TrimSpace(line), func(key, value []byte) error {
			var k string
			if err := json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k); err != nil {
				return err
			}
			got[k] = string(value)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: keys %v, want %v", s, got, want)
		}
		for k, v := range want {
			if got[k] != string(v) {
				t.Fatalf("%q: key %q = %q, want %q", s, k, got[k], v)
			}
		}
	})
}
