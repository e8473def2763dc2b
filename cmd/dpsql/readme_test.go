package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server/config"
)

// docFiles are the documents whose examples TestDocs runs, with the least
// number of blocks each must run (so that a broken parser or a lost marker
// cannot make the test vacuous). Every docs/*.md must be listed.
var docFiles = []struct {
	path   string
	minRun int
}{
	{"README.md", 10},
	{"docs/sql.md", 6},
	{"docs/deployment.md", 3},
	{"docs/batch.md", 2},
	{"docs/ngrams.md", 2},
	{"docs/beam.md", 0},        // its commands need the Beam module or a cluster: illustrative
	{"docs/performance.md", 0}, // commands in prose only
	{"docs/development.md", 0}, // go test commands (this run)
	{"docs/architecture.md", 0},
	{"docs/privacy.md", 0},
	{"docs/gms.md", 0},
	{"docs/sources.md", 0},              // needs a database source: server/sources_test.go runs against real servers
	{"docs/deployment-hardening.md", 0}, // configuration excerpts
	{"docs/accuracy.md", 1},             // DP_INTERVAL_LOW/HIGH over the demo
}

// TestDocs runs the examples of README.md and of every docs/*.md against
// real servers, so that what the documents promise works. Each file runs
// in a harness of its own (its own servers and working directory), as a
// reader following that file alone would:
//
//   - ```sh blocks: every command; ```console blocks: the lines after "$ ".
//     dpsql commands (also written ./dpsql or go run ./cmd/dpsql) run as
//     this test binary in a subprocess (TestMain); `dpsql serve` starts a
//     server in the background on a free port (its --addr, or the
//     configuration's listen, or 127.0.0.1:3306, is remembered and later
//     commands' ports are mapped onto the real one) with the ledger in a
//     temporary directory; mysql commands run the mysql command-line client
//     with the password of the user they name (the documents' `-p` prompts);
//     `go build`/`go install ./cmd/dpsql` are checked with go list (this
//     binary is that build), `go test` is not run (it is this run); head,
//     cat and wc run as they are. Paths under examples/ are the
//     repository's; ../shared/data/ is the corpus directory
//     (testenv.DataDir), and a block that needs a missing corpus is
//     skipped (failed under CI). Every command must succeed.
//   - ```sql blocks: each statement, as the demo's analyst on database
//     demo over go-sql-driver/mysql, in one session; a statement whose line
//     ends with a comment "-- ERROR n…" must fail with MySQL error n.
//   - ```python blocks: run by /usr/bin/python3 (DPSQL_PYTHON) with
//     "127.0.0.1:PORT" mapped to the real server; skipped (failed under CI)
//     without pandas, SQLAlchemy and PyMySQL.
//   - ```yaml blocks right after "<!-- file: PATH -->": PATH must contain
//     the block.
//
// A block right after "<!-- illustrative -->" (or "<!-- illustrative: why
// -->") is not run. Any other command
// fails the test: mark its block illustrative or teach this harness.
// Output shown in the documents is not compared (releases are random).
func TestDocs(t *testing.T) {
	root := testenv.ModuleRoot()
	listed := map[string]bool{}
	for _, f := range docFiles {
		listed[f.path] = true
	}
	all, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if rel := "docs/" + filepath.Base(p); !listed[rel] {
			t.Errorf("%s is not in docFiles: add it, with the number of its blocks that must run", rel)
		}
	}
	for _, f := range docFiles {
		t.Run(strings.NewReplacer("/", "_", ".md", "").Replace(f.path), func(t *testing.T) {
			t.Parallel() // each file has its own servers, ports and directories
			runDocExamples(t, root, f.path, f.minRun)
		})
	}
}

// runDocExamples runs the blocks of one document in a harness of its own.
func runDocExamples(t *testing.T, root, path string, minRun int) {
	text, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	h := &readmeHarness{root: root, work: t.TempDir(), dataDir: t.TempDir(), servers: map[string]*readmeServer{}}
	defer h.close(t)
	start := time.Now()
	blocks := readmeBlocks(string(text))
	ran := 0
	for _, b := range blocks {
		if b.illustrative || b.lang == "" {
			continue
		}
		ran++
		t.Run(fmt.Sprintf("line%d_%s", b.line, b.lang), func(t *testing.T) { h.run(t, b) })
	}
	if ran < minRun {
		t.Errorf("only %d blocks of %s ran, want at least %d", ran, path, minRun)
	}
	t.Logf("%s: %d blocks (%d run) in %v", path, len(blocks), ran, time.Since(start).Round(time.Millisecond))
}

// readmeBlock is one fenced block of a document.
type readmeBlock struct {
	line         int    // 1-based line of the opening fence
	lang         string // sh, console, sql, python, yaml; "" for others (not run)
	body         string
	illustrative bool
	file         string // <!-- file: PATH --> before a yaml block
}

var readmeMarker = regexp.MustCompile(`^<!--\s*(illustrative\b.*|file:\s*(\S+))\s*-->$`)

// readmeBlocks splits a document's text into fenced blocks, with the marker on
// the last non-blank line before each.
func readmeBlocks(text string) []readmeBlock {
	var out []readmeBlock
	lines := strings.Split(text, "\n")
	prev := ""
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		// A fence is ``` and an info string without backticks
		// (CommonMark); "```` ```sh ````" in a paragraph is inline code.
		if !strings.HasPrefix(l, "```") || strings.Contains(strings.TrimLeft(l, "`"), "`") {
			if l != "" {
				prev = l
			}
			continue
		}
		b := readmeBlock{line: i + 1}
		switch lang := strings.TrimPrefix(l, "```"); lang {
		case "sh", "console", "sql", "python", "yaml":
			b.lang = lang
		}
		if m := readmeMarker.FindStringSubmatch(prev); m != nil {
			b.illustrative = strings.HasPrefix(m[1], "illustrative")
			b.file = m[2]
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		b.body = strings.Join(body, "\n")
		out = append(out, b)
		prev = ""
	}
	return out
}

// readmeHarness holds what one document's commands share: a working
// directory and the servers they started.
type readmeHarness struct {
	root, work, dataDir string
	servers             map[string]*readmeServer // by the README's address
	mu                  sync.Mutex
}

// readmeServer is a dpsql serve subprocess.
type readmeServer struct {
	key       string // the command's arguments, to tell servers apart
	addr      string // where it really listens
	passwords map[string]string
	cmd       *exec.Cmd
	stderr    *testserver.Log
	done      chan struct{} // closed when the process has exited
}

// Passwords: the demo's are set through its environment variables, the
// example configurations' are documented in them.
var (
	readmeDemoPasswords    = map[string]string{"analyst": "analyst-readme", "admin": "admin-readme"}
	readmeExamplePasswords = map[string]string{"admin": "admin-example", "alice": "alice-example", "carol": "carol-example"}
)

func (h *readmeHarness) run(t *testing.T, b readmeBlock) {
	switch b.lang {
	case "sh", "console":
		for _, c := range shellCommands(b.body, b.lang == "console") {
			h.command(t, c)
		}
	case "sql":
		h.sql(t, b.body)
	case "python":
		h.python(t, b.body)
	case "yaml":
		if b.file == "" {
			return
		}
		got, err := os.ReadFile(filepath.Join(h.root, b.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), strings.TrimSpace(b.body)) {
			t.Errorf("the document's copy of %s differs from the file", b.file)
		}
	}
}

// shellCommands returns the commands of a block: continuation lines
// joined, comments and blank lines dropped; in a console block only the
// lines after "$ ".
func shellCommands(body string, console bool) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(body, "\n") {
		if cur == "" {
			if console {
				rest, ok := strings.CutPrefix(l, "$ ")
				if !ok {
					continue
				}
				l = rest
			}
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
		}
		if strings.HasSuffix(strings.TrimRight(l, " "), `\`) {
			cur += strings.TrimSuffix(strings.TrimRight(l, " "), `\`) + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

// shellWords splits a command line into words with sh quoting (single and
// double quotes, backslash escapes) and drops a trailing # comment.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				w.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			i = len(line)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// command runs one command line of a document.
func (h *readmeHarness) command(t *testing.T, line string) {
	t.Helper()
	words, err := shellWords(line)
	if err != nil || len(words) == 0 {
		t.Fatalf("%q: %v", line, err)
	}
	var stdin string
	if i := slicesIndex(words, "|"); i >= 0 {
		if words[0] != "echo" || i == len(words)-1 {
			t.Fatalf("%q: only `echo … | command` pipes are supported", line)
		}
		stdin = strings.Join(words[1:i], " ") + "\n"
		words = words[i+1:]
	}
	var stdout string // a > redirection
	if i := slicesIndex(words, ">"); i >= 0 && i == len(words)-2 {
		stdout = words[i+1]
		words = words[:i]
	}
	switch {
	case words[0] == "go" && len(words) >= 3 && words[1] == "run" && words[2] == "./cmd/dpsql":
		h.dpsql(t, line, words[3:], stdin, stdout)
	case words[0] == "dpsql" || words[0] == "./dpsql":
		h.dpsql(t, line, words[1:], stdin, stdout)
	case words[0] == "go" && len(words) >= 2 && (words[1] == "build" || words[1] == "install"):
		pkg := words[len(words)-1]
		out, err := exec.Command("go", "list", "-C", h.root, "-f", "{{.Name}}", pkg).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "main" {
			t.Errorf("%q: %s is not a command package: %v %s", line, pkg, err, out)
		}
	case words[0] == "go" && len(words) >= 2 && words[1] == "test":
		t.Logf("%q: not run (it is this test run)", line)
	case words[0] == "mysql":
		h.mysql(t, line, words[1:])
	case words[0] == "head" || words[0] == "cat" || words[0] == "wc":
		h.exec(t, line, words[0], h.paths(t, words[1:]), stdin, stdout)
	default:
		t.Errorf("%q: the documentation test cannot run %s; mark the block <!-- illustrative --> or teach readme_test.go", line, words[0])
	}
}

func slicesIndex(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

// paths rewrites the file arguments of a command: examples/… is the
// repository's, ../shared/data/NAME the corpus (skipping the block when it
// is missing).
func (h *readmeHarness) paths(t *testing.T, args []string) []string {
	t.Helper()
	out := make([]string, len(args))
	for i, a := range args {
		prefix, rest, eq := "", a, strings.IndexByte(a, '=')
		if eq >= 0 && strings.HasPrefix(a, "-") || eq >= 0 && strings.Contains(a[eq+1:], "/") {
			prefix, rest = a[:eq+1], a[eq+1:]
		}
		switch {
		case strings.HasPrefix(rest, "examples/"):
			rest = filepath.Join(h.root, rest)
		case strings.HasPrefix(rest, "../shared/data/"):
			if testing.Short() {
				t.Skip("reads a corpus (-short)")
			}
			rest = testenv.DataFile(t, strings.TrimPrefix(rest, "../shared/data/"))
		}
		out[i] = prefix + rest
	}
	return out
}

// exec runs a program in the working directory and fails the test unless
// it exits 0.
func (h *readmeHarness) exec(t *testing.T, line, prog string, args []string, stdin, stdout string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = h.work
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdout != "" {
		f, err := os.Create(filepath.Join(h.work, stdout))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout = f
	}
	if err := cmd.Run(); err != nil {
		t.Errorf("%q: %v\nstdout:\n%s\nstderr:\n%s", line, err, out.String(), errOut.String())
	}
}

// dpsql runs a dpsql command line: serve in the background, the others to
// completion.
func (h *readmeHarness) dpsql(t *testing.T, line string, args []string, stdin, stdout string) {
	t.Helper()
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "serve" {
		if len(args) > 0 && args[0] == "serve" {
			args = args[1:]
		}
		h.serve(t, line, args)
		return
	}
	h.exec(t, line, os.Args[0], h.paths(t, args), stdin, stdout, "DPSQL_TEST_MAIN=1")
}

// serve starts `dpsql serve ARGS` on a free port, unless a server started
// with the same arguments runs already. The README's address for it is the
// --addr, the configuration's listen, or 127.0.0.1:3306.
func (h *readmeHarness) serve(t *testing.T, line string, args []string) {
	t.Helper()
	readmeAddr := config.DefaultListen
	passwords := readmeDemoPasswords
	var run []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasVal && i+1 < len(args) && (name == "addr" || name == "config" || name == "data-dir") {
			i++
			val = args[i]
		}
		switch name {
		case "addr":
			readmeAddr = val
		case "data-dir":
			// the ledger goes to the harness's directory (below)
		case "config":
			path := h.paths(t, []string{val})[0]
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if !strings.Contains(line, "--addr") {
				readmeAddr = cfg.Listen
			}
			passwords = readmeExamplePasswords
			run = append(run, "--config", val)
		default:
			run = append(run, a)
		}
	}
	run = h.paths(t, run)
	key := strings.Join(run, " ")
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.servers[readmeAddr]; s != nil {
		if s.key == key {
			return // the same server, started by an earlier example
		}
		s.stop(t)
		delete(h.servers, readmeAddr)
	}
	dataDir := filepath.Join(h.dataDir, strconv.Itoa(len(h.servers)), strings.NewReplacer(":", "_", ".", "_").Replace(readmeAddr))
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir}, run...)...)
	cmd.Dir = h.work
	cmd.Env = append(os.Environ(), "DPSQL_TEST_MAIN=1",
		"DPSQL_ANALYST_PASSWORD="+readmeDemoPasswords["analyst"], "DPSQL_ADMIN_PASSWORD="+readmeDemoPasswords["admin"])
	pr, pw := io.Pipe()
	s := &readmeServer{key: key, passwords: passwords, cmd: cmd, stderr: &testserver.Log{}}
	cmd.Stderr = io.MultiWriter(pw, s.stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	exited := make(chan error, 1)
	s.done = make(chan struct{})
	go func() {
		err := cmd.Wait()
		pw.Close()
		close(s.done)
		exited <- err
	}()
	select {
	case s.addr = <-addrc:
	case err := <-exited:
		t.Fatalf("%q exited before listening: %v\n%s", line, err, s.stderr.String())
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%q: not listening after a minute:\n%s", line, s.stderr.String())
	}
	h.servers[readmeAddr] = s
}

func (s *readmeServer) stop(t *testing.T) {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(2 * time.Minute): // ends when it stops: generous for a loaded machine
		s.cmd.Process.Kill()
		t.Errorf("server %s did not stop on SIGTERM within 2 minutes:\n%s", s.key, s.stderr.String())
	}
}

func (h *readmeHarness) close(t *testing.T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.servers {
		s.stop(t)
	}
}

// server returns the server the README calls host:port, starting the demo
// for 127.0.0.1:3306 when no example has yet.
func (h *readmeHarness) server(t *testing.T, host, port string) *readmeServer {
	t.Helper()
	if host == "localhost" {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, port)
	h.mu.Lock()
	s := h.servers[addr]
	h.mu.Unlock()
	if s == nil && addr == config.DefaultListen {
		h.serve(t, "(the demo)", nil)
		h.mu.Lock()
		s = h.servers[addr]
		h.mu.Unlock()
	}
	if s == nil {
		t.Fatalf("no example of this document started a server on %s", addr)
	}
	return s
}

// mysql runs a mysql command line against the server it names, with the
// password of its user where it asks for one (-p).
func (h *readmeHarness) mysql(t *testing.T, line string, args []string) {
	t.Helper()
	prog := testenv.Tool(t, "mysql", "apt-get install mariadb-client")
	host, port, user := "127.0.0.1", "3306", ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case a == "-h":
			host = next()
		case a == "-P":
			port = next()
		case a == "-u":
			user = next()
		case strings.HasPrefix(a, "--host="):
			host = strings.TrimPrefix(a, "--host=")
		case strings.HasPrefix(a, "--port="):
			port = strings.TrimPrefix(a, "--port=")
		case strings.HasPrefix(a, "--user="):
			user = strings.TrimPrefix(a, "--user=")
		case a == "-e":
			next()
		}
	}
	s := h.server(t, host, port)
	realHost, realPort, _ := net.SplitHostPort(s.addr)
	var run []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-h" || a == "-P":
			i++ // replaced below
		case strings.HasPrefix(a, "--host=") || strings.HasPrefix(a, "--port="):
		case a == "-p" || a == "--password":
			pw, ok := s.passwords[user]
			if !ok {
				t.Fatalf("%q: the documentation test knows no password of %q", line, user)
			}
			run = append(run, "-p"+pw)
		default:
			run = append(run, a)
		}
	}
	run = append([]string{"-h", realHost, "-P", realPort, "--connect-timeout=10"}, run...)
	h.exec(t, line, prog, run, "", "")
}

// sql runs a sql block as the demo's analyst, in one session.
func (h *readmeHarness) sql(t *testing.T, body string) {
	t.Helper()
	s := h.server(t, "127.0.0.1", "3306")
	db, err := testmysql.Open(testmysql.Login{Addr: s.addr, User: "analyst", Password: s.passwords["analyst"], DB: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, st := range sqlStatements(body) {
		rows, err := conn.QueryContext(ctx, st.text)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		switch {
		case st.wantErr == 0 && err != nil:
			t.Errorf("%s: %v", st.text, err)
		case st.wantErr != 0 && int(testmysql.ErrNo(err)) != st.wantErr:
			t.Errorf("%s: %v, want MySQL error %d", st.text, err, st.wantErr)
		}
	}
}

type sqlStatement struct {
	text    string
	wantErr int
}

var sqlErrorComment = regexp.MustCompile(`--.*\bERROR (\d+)`)

// sqlStatements splits a sql block into statements: a statement ends with a
// line whose code ends with ';'; a "-- … ERROR n" comment on that line says
// it must fail with error n. Comment-only lines are dropped.
func sqlStatements(body string) []sqlStatement {
	var out []sqlStatement
	var cur []string
	for _, l := range strings.Split(body, "\n") {
		code, comment, _ := strings.Cut(l, "--")
		if strings.TrimSpace(code) == "" {
			continue
		}
		cur = append(cur, code)
		if c := strings.TrimSpace(code); strings.HasSuffix(c, ";") {
			st := sqlStatement{text: strings.TrimSuffix(strings.TrimSpace(strings.Join(cur, "\n")), ";")}
			if m := sqlErrorComment.FindStringSubmatch("--" + comment); m != nil {
				st.wantErr, _ = strconv.Atoi(m[1])
			}
			out = append(out, st)
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, sqlStatement{text: strings.TrimSpace(strings.Join(cur, "\n"))})
	}
	return out
}

var hostPortRe = regexp.MustCompile(`127\.0\.0\.1:(\d+)`)

// python runs a python block with the README's addresses mapped onto the
// servers'.
func (h *readmeHarness) python(t *testing.T, code string) {
	t.Helper()
	interp := os.Getenv("DPSQL_PYTHON")
	if interp == "" {
		interp = "/usr/bin/python3"
	}
	if out, err := exec.Command(interp, "-c", "import pandas, sqlalchemy, pymysql").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("pandas, SQLAlchemy and PyMySQL not importable by %s (apt-get install python3-pandas python3-sqlalchemy python3-pymysql): %v %s", interp, err, out)
		if testenv.CI() {
			t.Fatal("required under CI: " + msg)
		}
		t.Skip(msg)
	}
	code = hostPortRe.ReplaceAllStringFunc(code, func(m string) string {
		return h.server(t, "127.0.0.1", strings.TrimPrefix(m, "127.0.0.1:")).addr
	})
	h.exec(t, "python block", interp, []string{"-c", code}, "", "")
}

// TestReadmeParsing checks the harness's reading of README text: fences,
// markers, inline code that looks like a fence, console prompts, shell
// quoting and expected errors.
func TestReadmeParsing(t *testing.T) {
	text := "intro\n<!-- illustrative: needs a cluster -->\n```sh\nrun --it\n```\n" +
		"- see ```` ```sh ```` blocks\n<!-- file: examples/x.yaml -->\n\n```yaml\na: 1\n```\n" +
		"```console\n$ dpsql union \\\n  --input 'a b.csv'  # comment\noutput line\n```\n" +
		"```sql\nSELECT 1;  -- fine\nSELECT\n  x FROM t; -- ERROR 1054: unknown column\n```\n"
	bs := readmeBlocks(text)
	if len(bs) != 4 {
		t.Fatalf("%d blocks, want 4: %+v", len(bs), bs)
	}
	if !bs[0].illustrative || bs[0].lang != "sh" || bs[0].line != 3 {
		t.Errorf("block 0: %+v", bs[0])
	}
	if bs[1].illustrative || bs[1].file != "examples/x.yaml" || bs[1].body != "a: 1" {
		t.Errorf("block 1: %+v", bs[1])
	}
	cmds := shellCommands(bs[2].body, true)
	if len(cmds) != 1 {
		t.Fatalf("console commands %q", cmds)
	}
	words, err := shellWords(cmds[0])
	if err != nil || strings.Join(words, "|") != "dpsql|union|--input|a b.csv" {
		t.Errorf("words %q, %v", words, err)
	}
	sts := sqlStatements(bs[3].body)
	if len(sts) != 2 || sts[0].wantErr != 0 || sts[1].wantErr != 1054 || !strings.HasPrefix(sts[1].text, "SELECT\n") {
		t.Errorf("statements %+v", sts)
	}
}
