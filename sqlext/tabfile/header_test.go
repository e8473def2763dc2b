package tabfile

import (
	"strings"
	"testing"
)

func TestLooksLikeHeader(t *testing.T) {
	for _, c := range []struct {
		row  string
		want bool
	}{
		{"user_id,query", true},
		{"User_ID, Query ", true},
		{"visitor,url,day", true},
		{"Benutzer,Straße", true},
		{"_id,text", true},
		{"u00006,divorce lawyer for u00006", false},
		{"42,shoes", false},
		{"alice,alice", false}, // repeated name
		{"user_id,", false},    // empty field
		{"col1,col2", false},   // digits: not recognised (documented)
		{"user id,query", false},
		{"user-id,query", false},
		{"a3f1c2,fix typo", false},
		{"", false},
		{strings.Repeat("a", 65) + ",b", false},
	} {
		var fields [][]byte
		if c.row != "" {
			for _, f := range strings.Split(c.row, ",") {
				fields = append(fields, []byte(f))
			}
		}
		if got := LooksLikeHeader(fields); got != c.want {
			t.Errorf("LooksLikeHeader(%q) = %v, want %v", c.row, got, c.want)
		}
	}
}
