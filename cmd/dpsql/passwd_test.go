package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/server/config"
)

func runWithStdin(t *testing.T, input string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "stdin")
	if err := os.WriteFile(p, []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := passwdStdin
	passwdStdin = f
	defer func() { passwdStdin = old }()
	var out, errb strings.Builder
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestPasswdCommand(t *testing.T) {
	code, out, errs := runWithStdin(t, "password\nignored\n", "passwd", "--password-stdin", "--plugin", "mysql_native_password")
	if code != 0 || out != "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19\n" || !strings.Contains(errs, "password_hash: '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'") {
		t.Errorf("native: code %d, stdout %q, stderr %q", code, out, errs)
	}

	code, out, errs = runWithStdin(t, "s3cret\r\n", "passwd", "--password-stdin")
	h, err := config.ParsePasswordHash(strings.TrimSpace(out))
	if code != 0 || err != nil || h.Plugin != config.CachingSha2Password || !strings.Contains(errs, "need TLS") {
		t.Fatalf("caching_sha2: code %d, stdout %q, stderr %q, %v", code, out, errs, err)
	}
	// The printed hash is a valid config value.
	yaml := "data_dir: d\ndatasets: [{database: d, table: t, file: f.tsv, columns: [{name: u, type: int}], privacy_unit: u}]\n" +
		"accounts: {analysts: [{user: a, password_hash: '" + strings.TrimSpace(out) + "'}]}\n"
	if _, err := config.Parse([]byte(yaml), "/"); err != nil {
		t.Errorf("config with the printed hash: %v", err)
	}

	for _, c := range []struct {
		input string
		args  []string
		code  int
		want  string
	}{
		{"", []string{"passwd", "--password-stdin"}, 2, "empty passwords are not allowed"},
		{"x\n", []string{"passwd"}, 2, "stdin is not a terminal: pass --password-stdin"},
		{"x\n", []string{"passwd", "--password-stdin", "--plugin", "sha256_password"}, 2, `unknown --plugin "sha256_password"`},
	} {
		code, out, errs := runWithStdin(t, c.input, c.args...)
		if code != c.code || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%q with %q: code %d, stdout %q, stderr %q; want code %d and %q", c.args, c.input, code, out, errs, c.code, c.want)
		}
	}
}
