package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// TestMySQLErrorCodes sends mistakes over the wire and checks that each
// comes back with the error number and SQLSTATE MySQL 8 gives it (not
// go-mysql-server's catch-all 1105), with a message that names the culprit,
// and that the connection stays usable.
func TestMySQLErrorCodes(t *testing.T) {
	addr := startServer(t)
	db := openDB(t, addr, "demo")
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, c := range []struct {
		query string
		code  uint16
		state string
		want  []string // substrings of the message
	}{
		{"SELECT nosuch FROM words", 1054, "42S22", []string{"Unknown column 'nosuch'"}},
		{"SELECT DISTINCT nosuch FROM words", 1054, "42S22", []string{"Unknown column 'nosuch'"}},
		{"SELECT 1 FROM words WHERE nosuch = 1", 1054, "42S22", []string{"Unknown column 'nosuch'"}},
		{"SELECT w.nosuch FROM words w", 1054, "42S22", []string{"Unknown column 'w.nosuch'"}},
		{"SELECT word FROM words ORDER BY 5", 1054, "42S22", []string{"Unknown column '5'"}},
		{"SELECT 1 FROM words GROUP BY 7", 1054, "42S22", []string{"Unknown column '7'"}},
		{"SELECT user_id FROM words, posts LIMIT 1", 1052, "23000", []string{"Column 'user_id' is ambiguous", "posts.user_id"}},
		{"SELECT word AS a, user_id AS a FROM words ORDER BY a LIMIT 1", 1052, "23000", []string{"'a' is ambiguous"}},
		{"SELECT * FROM nosuchtable", 1146, "42S02", []string{"nosuchtable"}},
		{"SELECT * FROM nosuchdb.t", 1049, "42000", []string{"nosuchdb"}},
		{"SET dp_epsilonn = 1", 1193, "HY000", []string{"Unknown system variable 'dp_epsilonn'", "did you mean dp_epsilon?"}},
		{"SET SESSION dp_deltaa = 1e-6", 1193, "HY000", []string{"Unknown system variable 'dp_deltaa'", "did you mean dp_delta?"}},
		{"SET @@dp_epsilonn = 1", 1193, "HY000", []string{"Unknown system variable 'dp_epsilonn'", "dp_epsilon"}},
		{"SELECT @@dp_epsilonn", 1193, "HY000", []string{"Unknown system variable 'dp_epsilonn'", "dp_epsilon"}},
		{"SET dp_zzzzzzzzzzzz = 1", 1193, "HY000", []string{"dp_epsilon, "}}, // lists dpsql's variables
		{"SET dp_epsilon = 'x'", 1231, "42000", []string{"dp_epsilon"}},
		{"SELEC 1", 1064, "42000", []string{"SQL syntax", "SELEC"}},
		{"SELECT nosuchfn(1)", 1305, "42000", []string{"FUNCTION nosuchfn does not exist"}},
		{"SELECT 1 FROM words w, posts w", 1066, "42000", []string{"'w'"}},
		{"SELECT word FROM words UNION SELECT word, user_id FROM words", 1222, "21000", []string{"different number of columns"}},
		{"SELECT (SELECT word FROM words)", 1242, "21000", nil},
		// A parser check's MySQL error keeps its number (it used to arrive
		// as 1105 with "(errno 1153) (sqlstate 08S01)" in its text).
		{"SELECT 1 IN (" + strings.Repeat("1,", 10_000) + "1)", 1153, "08S01", []string{"limits.max_in_list"}},
	} {
		_, err := conn.ExecContext(ctx, c.query)
		var me *gomysql.MySQLError
		if !errors.As(err, &me) {
			t.Errorf("%s: %v, want MySQL error %d", c.query, err, c.code)
			continue
		}
		if me.Number != c.code || string(me.SQLState[:]) != c.state {
			t.Errorf("%s: error %d (%s) %q, want %d (%s)", c.query, me.Number, me.SQLState, me.Message, c.code, c.state)
		}
		for _, w := range c.want {
			if !strings.Contains(me.Message, w) {
				t.Errorf("%s: message %q does not contain %q", c.query, me.Message, w)
			}
		}
	}
	// Valid SETs are untouched, and the session is still usable.
	for _, q := range []string{"SET dp_epsilon = 0.5", "SET NAMES utf8mb4", "SET @x = 1", "SET autocommit = 1",
		"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET CHARACTER SET utf8mb4"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	var eps float64
	if err := conn.QueryRowContext(ctx, "SELECT @@dp_epsilon").Scan(&eps); err != nil || eps != 0.5 {
		t.Errorf("@@dp_epsilon = %v, %v", eps, err)
	}
}
