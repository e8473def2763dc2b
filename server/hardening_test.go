package server_test

import (
	"context"
	dbsql "database/sql"
	"os"
	"strings"
	"testing"
)

// appendConfig appends YAML at the top level of the deployment's
// configuration.
func (d *deployment) appendConfig(t *testing.T, yaml string) {
	t.Helper()
	f, err := os.OpenFile(d.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(yaml); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseIndexBytesNoneServes: limits.release_index_bytes: -1 starts a
// server without release indexes (it refused to start): releases scan, and
// no index memory is ever held.
func TestReleaseIndexBytesNoneServes(t *testing.T) {
	d := newDeployment(t, false)
	d.appendConfig(t, "limits:\n  release_index_bytes: -1\n")
	s := d.start(t)
	alice := d.connect(t, s.Addr(), "alice", alicePass, false)
	for range 2 {
		if _, err := releaseURLs(alice); err != nil {
			t.Fatalf("release without indexes: %v", err)
		}
	}
	if n := s.ReleaseIndexBytes(); n != 0 {
		t.Errorf("release indexes hold %d bytes with release_index_bytes: -1", n)
	}
}

// serverPathVariables are the system variables whose MySQL meaning is a
// path on the server.
var serverPathVariables = []string{
	"secure_file_priv", "datadir", "basedir", "plugin_dir", "tmpdir", "general_log_file", "slow_query_log_file",
	"log_error", "pid_file", "socket", "character_sets_dir", "lc_messages_dir", "init_file", "ft_stopword_file",
	"caching_sha2_password_private_key_path", "caching_sha2_password_public_key_path",
}

// TestNoServerPathsForAnalysts: no system variable an analyst reads, with
// @@name, @@global.name, SHOW VARIABLES or SHOW GLOBAL VARIABLES, nor the
// value copied into a user variable, holds an absolute path on the server
// (@@secure_file_priv showed the data directory); an administrator still
// sees the directory the file functions are confined to.
func TestNoServerPathsForAnalysts(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	alice := d.connect(t, s.Addr(), "alice", alicePass, false)
	leaks := func(v string) bool {
		return strings.HasPrefix(v, "/") || strings.Contains(v, d.dir) || strings.Contains(v, os.TempDir())
	}
	for _, name := range serverPathVariables {
		for _, q := range []string{"SELECT @@" + name, "SELECT @@global." + name, "SELECT (SELECT @@" + name + ")"} {
			var v dbsql.NullString
			if err := alice.QueryRow(q).Scan(&v); err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			if leaks(v.String) {
				t.Errorf("analyst: %s = %q", q, v.String)
			}
		}
	}
	conn, err := alice.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var v dbsql.NullString
	if _, err := conn.ExecContext(context.Background(), "SET @x = @@secure_file_priv"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(context.Background(), "SELECT @x").Scan(&v); err != nil || leaks(v.String) {
		t.Errorf("analyst: SET @x = @@secure_file_priv gives %q (%v)", v.String, err)
	}
	for _, q := range []string{"SHOW VARIABLES", "SHOW GLOBAL VARIABLES", "SHOW SESSION VARIABLES LIKE '%dir%'", "SHOW VARIABLES WHERE Variable_name = 'secure_file_priv'"} {
		rows, err := alice.Query(q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		n := 0
		for rows.Next() {
			var name string
			var val dbsql.NullString
			if err := rows.Scan(&name, &val); err != nil {
				t.Fatal(err)
			}
			n++
			if leaks(val.String) {
				t.Errorf("analyst: %s shows %s = %q", q, name, val.String)
			}
		}
		rows.Close()
		if n == 0 {
			t.Errorf("%s: no rows", q)
		}
	}
	admin := d.connect(t, s.Addr(), "admin", adminPass, false)
	if err := admin.QueryRow("SELECT @@secure_file_priv").Scan(&v); err != nil || !strings.HasPrefix(v.String, d.dir) {
		t.Errorf("admin: @@secure_file_priv = %q (%v), want the files directory under %s", v.String, err, d.dir)
	}
}

// slowRelease is a release whose every row does about 120 KB of work.
const slowRelease = "SELECT DISTINCT url FROM visits WHERE LENGTH(LPAD(LPAD(url, 60000, 'x'), 60000, 'y')) > 0"

// TestSessionMaxExecutionTimeStopsReleases: SET max_execution_time = 1
// (milliseconds, as in MySQL) stops the session's next release with error
// 3024 naming the session's variable (it was accepted and ignored); with
// 0 the same release completes.
func TestSessionMaxExecutionTimeStopsReleases(t *testing.T) {
	d := newDeployment(t, false)
	s := d.start(t)
	alice := d.connect(t, s.Addr(), "alice", alicePass, false)
	ctx := context.Background()
	conn, err := alice.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET max_execution_time = 1"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.QueryContext(ctx, slowRelease)
	wantCode(t, "release past the session's max_execution_time", err, 3024)
	if err != nil && !strings.Contains(err.Error(), "max_execution_time") {
		t.Errorf("the error does not name the variable: %v", err)
	}
	if _, err := conn.ExecContext(ctx, "SET max_execution_time = 0"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(ctx, slowRelease)
	if err != nil {
		t.Fatalf("release without a session limit: %v", err)
	}
	rows.Close()
}
