package replay

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	qs, err := Parse("x.sql", strings.NewReader(`-- header
-- source: a/b.go
SELECT 1;

SELECT *
FROM t
WHERE a = ';';
-- source: c
-- a note
SHOW TABLES;
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{{"x.sql", 3, "a/b.go", "SELECT 1"}, {"x.sql", 5, "a/b.go", "SELECT *\nFROM t\nWHERE a = ';'"}, {"x.sql", 10, "c", "SHOW TABLES"}}
	if len(qs) != len(want) {
		t.Fatalf("got %d queries: %+v", len(qs), qs)
	}
	for i := range want {
		if qs[i] != want[i] {
			t.Errorf("query %d: got %+v, want %+v", i, qs[i], want[i])
		}
	}
	if _, err := Parse("y.sql", strings.NewReader("SELECT 1;\n")); err == nil {
		t.Error("a statement without a source was accepted")
	}
	if _, err := Parse("z.sql", strings.NewReader("-- source: s\nSELECT 1\n")); err == nil {
		t.Error("an unterminated statement was accepted")
	}
}

func TestSubstitute(t *testing.T) {
	r := Runner{Vars: map[string]string{"db": "shop", "table": "items"}}
	got, err := r.Substitute("SHOW FULL COLUMNS FROM `${db}`.`${table}` LIKE '%'")
	if err != nil || got != "SHOW FULL COLUMNS FROM `shop`.`items` LIKE '%'" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := r.Substitute("${nope}"); err == nil {
		t.Error("unknown placeholder accepted")
	}
}
