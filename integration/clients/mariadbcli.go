package clients

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// MariaDBCLI runs statements through the `mysql` command line client of
// Debian's mariadb-client in batch mode (-B: tab-separated output, special
// characters escaped) on one connection, and parses its output. It runs with
// --comments: by default the client strips comments, optimizer hints
// (/*+ SET_VAR(…) */) included, before sending a statement.
//
// With Stdin the statements are piped to the client with --force, so that
// it goes on after an error; with -e (Stdin false) they are passed as one
// -e argument, and the client stops at the first error: later statements get
// an Error with Code 0 saying they did not run.
//
// Limits of the format: a NULL and the string "NULL" print alike (both come
// back as nil); an empty result set prints nothing, so it has no columns;
// the client has no prepared statements (a Prepared statement gets an error
// result and is not sent). When a statement asks for its warnings the client
// runs with --show-warnings, which prints them after each statement's output
// as "Note (Code 1105): …" lines; those lines are taken out of every
// statement's rows (a row that reads like one would be lost).
type MariaDBCLI struct {
	Path  string // the client program ("mysql" or "mariadb"; "" finds mysql on PATH)
	Stdin bool
}

func (c MariaDBCLI) Name() string {
	if c.Stdin {
		return "mysql CLI (batch, stdin)"
	}
	return "mysql CLI (batch, -e)"
}

var cliError = regexp.MustCompile(`^ERROR (\d+) \(([0-9A-Z]{5})\)(?: at line (\d+))?: (.*)$`)

// cliWarning is a line --show-warnings prints after a statement's output.
var cliWarning = regexp.MustCompile(`^(Note|Warning|Error) \(Code (\d+)\): (.*)$`)

func (c MariaDBCLI) Run(ctx context.Context, t Target, stmts []Statement) ([]Result, error) {
	path := c.Path
	if path == "" {
		path = "mysql"
	}
	dir, err := os.MkdirTemp("", "dpsql-mysqlcli")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	args, err := cliArgs(dir, t)
	if err != nil {
		return nil, err
	}
	sc := newCLIScript(stmts)
	if sc.warnings {
		args = append(args, "--show-warnings")
	}
	var cmd *exec.Cmd
	if c.Stdin {
		cmd = exec.CommandContext(ctx, path, append(args, "--force")...)
		cmd.Stdin = strings.NewReader(sc.text.String())
	} else {
		cmd = exec.CommandContext(ctx, path, append(args, "-e", sc.text.String())...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if err := sc.readStdout(&stdout); err != nil {
		return nil, err
	}
	if err := sc.readStderr(stderr.String(), c.Stdin); err != nil {
		return nil, err
	}
	if sc.last < 0 && runErr != nil && len(sc.startLine) > 0 {
		return nil, fmt.Errorf("%s: %v: %s", path, runErr, clip(stderr.String()))
	}
	for i := range stmts {
		if sc.sent[i] && !sc.seen[i] && sc.out[i].Error == nil {
			sc.out[i].Error = &Error{Message: "not run: the mysql client stopped at an earlier error"}
		}
	}
	return sc.out, nil
}

// cliArgs writes the credentials to a defaults file in dir (not the
// command line, not the environment, which also keeps ~/.my.cnf out of the
// run) and returns the client's arguments for t.
func cliArgs(dir string, t Target) ([]string, error) {
	cnf := filepath.Join(dir, "client.cnf")
	if err := os.WriteFile(cnf, []byte(fmt.Sprintf("[client]\nuser=%s\npassword=%s\n",
		cnfQuote(t.User), cnfQuote(t.Password))), 0o600); err != nil {
		return nil, err
	}
	args := []string{"--defaults-file=" + cnf, "--protocol=TCP", "-h", t.Host, "-P", strconv.Itoa(t.Port), "--batch", "--comments"}
	if t.TLS {
		args = append(args, "--ssl")
		if t.CAFile != "" {
			args = append(args, "--ssl-ca="+t.CAFile, "--ssl-verify-server-cert")
		}
	} else {
		args = append(args, "--skip-ssl")
	}
	if t.Database != "" {
		args = append(args, "--database="+t.Database)
	}
	return args, nil
}

// cliScript is the script sent to the client, each statement preceded by
// a marker result set (SELECT i AS marker) so that its output can be told
// apart, and the results read back.
type cliScript struct {
	marker    string
	text      strings.Builder
	stmts     []Statement
	startLine map[int]int // script line of a statement's start → its index
	out       []Result
	sent      []bool
	seen      []bool
	last      int  // the statement whose output is being read, or -1
	warnings  bool // some statement asks for its warnings (--show-warnings)
}

func newCLIScript(stmts []Statement) *cliScript {
	nonce := make([]byte, 6)
	rand.Read(nonce)
	sc := &cliScript{
		marker:    "dpsql_marker_" + hex.EncodeToString(nonce),
		stmts:     stmts,
		startLine: map[int]int{},
		out:       make([]Result, len(stmts)),
		sent:      make([]bool, len(stmts)),
		seen:      make([]bool, len(stmts)),
		last:      -1,
	}
	line := 1
	for i, s := range stmts {
		if s.Prepared || s.Meta != "" {
			sc.out[i].Error = &Error{Message: "the mysql command line client cannot run " + s.String()}
			continue
		}
		sql := strings.TrimRight(strings.TrimSpace(s.SQL), ";")
		fmt.Fprintf(&sc.text, "SELECT %d AS %s;\n", i, sc.marker)
		line++
		sc.startLine[line] = i
		sc.text.WriteString(sql + ";\n")
		line += strings.Count(sql, "\n") + 1
		sc.sent[i] = true
		sc.warnings = sc.warnings || s.Warnings
	}
	return sc
}

// readStdout reads the client's standard output: marker result sets, each
// followed by the output of its statement (a header line and rows, or
// nothing).
func (sc *cliScript) readStdout(stdout io.Reader) error {
	s := bufio.NewScanner(stdout)
	s.Buffer(make([]byte, 1<<20), 1<<30)
	var lines []string
	var warnings []Warning
	flush := func() {
		if sc.last >= 0 {
			sc.out[sc.last] = parseBatch(lines)
			if warnings != nil {
				sc.out[sc.last].Warnings = warnings
			}
		}
		lines, warnings = lines[:0], nil
	}
	for s.Scan() {
		l := s.Text()
		if m := cliWarning.FindStringSubmatch(l); m != nil && sc.warnings {
			// --show-warnings: kept for the statements that asked.
			if sc.last >= 0 && sc.stmts[sc.last].Warnings {
				code, _ := strconv.Atoi(m[2])
				warnings = append(warnings, Warning{Level: m[1], Code: code, Message: m[3]})
			}
			continue
		}
		if l == sc.marker && s.Scan() {
			flush()
			n, err := strconv.Atoi(s.Text())
			if err != nil || n < 0 || n >= len(sc.out) {
				return fmt.Errorf("mysql client output: bad marker %q", s.Text())
			}
			sc.last, sc.seen[n] = n, true
			continue
		}
		lines = append(lines, l)
	}
	flush()
	return s.Err()
}

// readStderr reads the client's standard error: "ERROR n (state) at line
// L: message", L being the script line where the failed statement starts
// (always 1 with -e). An error before the first marker is the
// connection's, returned.
func (sc *cliScript) readStderr(stderr string, stdin bool) error {
	var errs []*Error
	for _, l := range strings.Split(stderr, "\n") {
		m := cliError.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		code, _ := strconv.Atoi(m[1])
		e := &Error{Code: code, State: m[2], Message: m[4]}
		if m[3] == "" {
			if sc.last < 0 {
				return e
			}
			errs = append(errs, e)
			continue
		}
		ln, _ := strconv.Atoi(m[3])
		if i, ok := sc.startLine[ln]; ok && stdin {
			sc.out[i] = Result{Error: e}
		} else if sc.last >= 0 {
			sc.out[sc.last] = Result{Error: e}
		}
	}
	if !stdin && len(errs) > 0 && sc.last >= 0 {
		sc.out[sc.last] = Result{Error: errs[0]}
	}
	return nil
}

// parseBatch reads one statement's batch output: a tab-separated header
// line and rows with \t, \n, \\ and \0 escaped.
func parseBatch(lines []string) Result {
	var r Result
	if len(lines) == 0 {
		return r
	}
	r.Columns = strings.Split(lines[0], "\t")
	for _, l := range lines[1:] {
		var row []*string
		for _, f := range strings.Split(l, "\t") {
			if f == "NULL" {
				row = append(row, nil)
			} else {
				row = append(row, str(unescapeBatch(f)))
			}
		}
		r.Rows = append(r.Rows, row)
	}
	return r
}

func unescapeBatch(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '0':
			b.WriteByte(0)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// cnfQuote quotes an option file value (the client strips the quotes and
// handles backslash escapes inside them).
func cnfQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
