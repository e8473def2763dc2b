package server

import (
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
)

// TestCheckStatementText checks each text limit's error code and setting,
// and that statements within them pass.
func TestCheckStatementText(t *testing.T) {
	l := DefaultLimits()
	in := func(n int) string { return "SELECT 1 IN (" + strings.TrimSuffix(strings.Repeat("1,", n), ",") + ")" }
	for q, want := range map[string]string{
		in(l.MaxInList + 1): "max_in_list",
		"SELECT 1 FROM t WHERE a IN (SELECT 1) AND b IN (" + strings.TrimSuffix(strings.Repeat("(1, 2),", l.MaxInList+1), ",") + ")": "max_in_list",
		"SELECT " + strings.Repeat("1+", l.MaxOperators+1) + "1":                                                                     "max_operators",
		"SELECT " + strings.Repeat("(", l.MaxNesting+1) + "1" + strings.Repeat(")", l.MaxNesting+1):                                  "max_nesting",
		in(l.MaxInList): "",
		"SELECT f(" + strings.Repeat("1,", l.MaxInList+5) + "1)": "",
		"SELECT 1 IN (SELECT a, b FROM t) AND c IN (1, 2)":       "",
	} {
		err := l.CheckStatementText(q)
		if want == "" {
			if err != nil {
				t.Errorf("%.60s…: %v", q, err)
			}
			continue
		}
		se, ok := err.(*mysql.SQLError)
		if !ok || !strings.Contains(se.Message, "limits."+want) {
			t.Errorf("%.60s…: %v, want an error naming limits.%s", q, err, want)
		}
		if want == "max_in_list" && se != nil && se.Num != mysql.ERNetPacketTooLarge {
			t.Errorf("IN list: code %d, want 1153", se.Num)
		}
	}
}
