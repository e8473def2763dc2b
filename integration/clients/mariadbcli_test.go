package clients

import (
	"reflect"
	"testing"
)

func TestParseBatch(t *testing.T) {
	r := parseBatch([]string{"a\tb", `x\ty\nz\\w\0`, "NULL\t"})
	if !reflect.DeepEqual(r.Columns, []string{"a", "b"}) {
		t.Errorf("columns %q", r.Columns)
	}
	want := [][]string{{"x\ty\nz\\w\x00"}, {"NULL", ""}}
	if got := r.Cells(); !reflect.DeepEqual(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	if r.Rows[1][0] != nil {
		t.Error("NULL is not nil")
	}
	if r := parseBatch(nil); r.Columns != nil || r.Rows != nil {
		t.Errorf("empty output parsed as %+v", r)
	}
}

func TestCnfQuote(t *testing.T) {
	if got := cnfQuote(`p"a\ss`); got != `"p\"a\\ss"` {
		t.Errorf("got %s", got)
	}
}
