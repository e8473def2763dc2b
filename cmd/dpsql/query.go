package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/demo"
	"github.com/dpsql/dpsql/server/storage"
)

func init() {
	commands["query"] = command{Summary: "run SQL on the embedded engine (demo data and loaded files) and exit", Run: runQuery}
}

// loadFlags collects repeated --load NAME=FILE flags.
type loadFlags []string

func (l *loadFlags) String() string     { return strings.Join(*l, " ") }
func (l *loadFlags) Set(s string) error { *l = append(*l, s); return nil }

// dataFlags are the flags query and serve share: what data to serve.
type dataFlags struct {
	loads  loadFlags
	noDemo bool
	quiet  bool
}

const defaultLoadDB = "data"

func (d *dataFlags) register(fs *flag.FlagSet) {
	fs.Var(&d.loads, "load", "load a file as a table: [DB.]TABLE[(COLUMN [TYPE], …)]=FILE; DB defaults to \""+defaultLoadDB+"\"; repeatable. Formats by name: .tsv, .csv, .jsonl/.ndjson/.json (JSON lines), .parquet; .gz allowed except for Parquet. Without a column list a TSV/CSV header row is detected, JSON lines take the first object's keys, Parquet its columns; types (BIGINT, DOUBLE, DATE, DATETIME, TEXT) are inferred")
	fs.BoolVar(&d.noDemo, "no-demo", false, "do not create the demo database")
	fs.BoolVar(&d.quiet, "quiet", false, "no progress or load messages on stderr (nor, for query, the notice that it runs ungoverned)")
}

// provider builds the storage: the demo database unless --no-demo, and
// every --load. It reports what it did on stderr.
func (d *dataFlags) provider(stderr io.Writer) (*storage.Provider, string, error) {
	p, err := storage.NewProvider()
	if err != nil {
		return nil, "", err
	}
	var info io.Writer = stderr
	if d.quiet {
		info = io.Discard
	}
	current := ""
	if !d.noDemo {
		db, st, err := demo.New()
		if err != nil {
			return nil, "", err
		}
		if err := p.AddDatabase(db); err != nil {
			return nil, "", err
		}
		fmt.Fprintf(info, "demo database: SYNTHETIC corpus, %s (tables demo.posts, demo.words)\n", st)
		current = demo.DatabaseName
	}
	for i, l := range d.loads {
		spec, err := storage.ParseLoadSpec(l, defaultLoadDB)
		if err != nil {
			return nil, "", usageError{Err: err}
		}
		db, ok := p.Lookup(spec.Database)
		if !ok {
			db = storage.NewDatabase(spec.Database)
			if err := p.AddDatabase(db); err != nil {
				return nil, "", usageError{Err: fmt.Errorf("--load %s: %w", l, err)}
			}
		}
		if _, dup := db.Table(spec.Table); dup {
			return nil, "", usageError{Err: fmt.Errorf("--load %s: table %s.%s is loaded twice", l, spec.Database, spec.Table)}
		}
		var progress io.Writer = stderr
		if d.quiet {
			progress = nil
		}
		t, li, err := storage.LoadFile(spec.Table, spec.Path, "", storage.LoadOptions{Columns: spec.Columns, Progress: progress})
		if err != nil {
			return nil, "", fmt.Errorf("%w (to fix the types, declare them: --load '%s.%s(col TYPE, …)=%s')", err, spec.Database, spec.Table, spec.Path)
		}
		if err := db.AddTable(t); err != nil {
			return nil, "", err
		}
		cols := make([]string, len(li.Columns))
		for k, c := range li.Columns {
			cols[k] = c.Name + " " + c.Type.String()
		}
		header := "no header row"
		if li.Header {
			header = "first row was the header"
		}
		fmt.Fprintf(info, "loaded %s.%s(%s) from %s: %d rows in %.1fs (%s)\n",
			spec.Database, spec.Table, strings.Join(cols, ", "), spec.Path, li.Rows, li.Duration.Seconds(), header)
		if i == 0 {
			current = spec.Database
		}
	}
	return p, current, nil
}

func runQuery(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("query", stderr)
	var data dataFlags
	data.register(fs)
	expr := fs.String("e", "", "SQL to run (statements separated by ;)")
	file := fs.String("f", "", "file of SQL statements to run (- for stdin)")
	format := fs.String("format", "table", "output format: table, tsv or json (one JSON object per row)")
	dbName := fs.String("db", "", "current database (default: the first --load's database, else demo)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpsql query (-e SQL | -f FILE) [--load [DB.]TABLE=FILE …] [--format table|tsv|json] [--db NAME]")
		fmt.Fprintln(stderr, "\nRuns SQL on the embedded engine, UNGOVERNED: the demo database plus any loaded files, every statement")
		fmt.Fprintln(stderr, "as written on the raw data, with no accounts and no budget; only DP_SET_UNION and DP_NGRAMS calls are")
		fmt.Fprintln(stderr, "differentially private (a notice on stderr says so at every run, unless --quiet). Example:")
		fmt.Fprintln(stderr, "  dpsql query -e \"SELECT DP_SET_UNION(word, user_id) FROM demo.words\"\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*expr == "") == (*file == "") {
		return usagef("give exactly one of -e SQL and -f FILE")
	}
	switch *format {
	case "table", "tsv", "json":
	default:
		return usagef("unknown --format %q: use table, tsv or json", *format)
	}
	script := *expr
	if *file != "" {
		var b []byte
		var err error
		if *file == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(*file)
		}
		if err != nil {
			return err
		}
		script = string(b)
	}
	stmts, err := ast.SplitStatementToPieces(script)
	if err != nil {
		return usagef("cannot split the SQL into statements: %v", err)
	}

	if !data.quiet {
		fmt.Fprint(stderr, ungovernedBanner)
	}
	p, current, err := data.provider(stderr)
	if err != nil {
		return err
	}
	if *dbName != "" {
		if _, ok := p.Lookup(*dbName); !ok {
			return usagef("--db %s: no such database", *dbName)
		}
		current = *dbName
	}
	e, err := server.NewEngine(server.Config{Provider: p})
	if err != nil {
		return err
	}
	defer e.Close()

	out := bufio.NewWriterSize(stdout, 1<<16)
	defer out.Flush()
	ctx := server.NewContext(context.Background(), "", current)
	n := 0
	for _, stmt := range stmts {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if n > 0 && *format == "table" {
			out.WriteByte('\n')
		}
		n++
		if err := runStatement(ctx, e, stmt, *format, out); err != nil {
			out.Flush()
			return err
		}
	}
	return nil
}

// ungovernedBanner is what `dpsql query` prints first on stderr (unless
// --quiet): its results are raw, unlike the governed server's.
const ungovernedBanner = "dpsql query: UNGOVERNED — no accounts, no privacy budget: every statement runs as written on the raw data\n" +
	"  (SELECT DISTINCT returns every value, COUNT the exact count). Only DP_SET_UNION(…) and DP_NGRAMS(…) calls are\n" +
	"  differentially private. For private answers only, run the governed server (dpsql serve) and connect as an analyst.\n"

// runStatement runs one statement and writes its result.
func runStatement(ctx *sql.Context, e interface {
	Query(*sql.Context, string) (sql.Schema, sql.RowIter, *sql.QueryFlags, error)
}, stmt, format string, w *bufio.Writer) error {
	schema, iter, _, err := e.Query(ctx.WithQuery(stmt), stmt)
	if err != nil {
		return sqlError(err)
	}
	if types.IsOkResultSchema(schema) || len(schema) == 0 {
		// SET, USE and other statements without a result set.
		for {
			if _, err := iter.Next(ctx); err != nil {
				if !errors.Is(err, io.EOF) {
					iter.Close(ctx)
					return sqlError(err)
				}
				break
			}
		}
		if err := iter.Close(ctx); err != nil {
			return sqlError(err)
		}
		if format == "table" {
			w.WriteString("Query OK\n")
		}
		return nil
	}
	if format == "tsv" {
		names := make([]string, len(schema))
		for i, c := range schema {
			names[i] = tsvEscape(c.Name)
		}
		w.WriteString(strings.Join(names, "\t"))
		w.WriteByte('\n')
	}
	var rows [][]cell
	for {
		row, err := iter.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			iter.Close(ctx)
			return sqlError(err)
		}
		cells := make([]cell, len(schema))
		for i, c := range schema {
			if i < len(row) {
				cells[i] = render(ctx, c.Type, row[i])
			}
		}
		if format == "table" {
			rows = append(rows, cells)
			continue
		}
		writeRow(w, format, schema, cells)
	}
	if err := iter.Close(ctx); err != nil {
		return sqlError(err)
	}
	if format == "table" {
		writeTable(w, schema, rows)
	}
	return nil
}

// sqlError formats an engine error like the mysql client does.
func sqlError(err error) error {
	se := sql.CastSQLError(err)
	return fmt.Errorf("ERROR %d (%s): %s", se.Num, se.State, se.Message)
}

// cell is a rendered value: its text (the MySQL wire form), whether it is
// NULL, and how it goes into JSON.
type cell struct {
	text string
	null bool
	json json.RawMessage
}

func render(ctx *sql.Context, t sql.Type, v any) cell {
	if v == nil {
		return cell{null: true, text: "NULL", json: json.RawMessage("null")}
	}
	s := fmt.Sprint(v)
	if sv, err := t.SQL(ctx, nil, v); err == nil {
		s = sv.ToString()
	}
	c := cell{text: s}
	switch {
	case types.IsJSON(t):
		if json.Valid([]byte(s)) {
			c.json = json.RawMessage(s)
		}
	case types.IsInteger(t) || types.IsFloat(t) || types.IsDecimal(t):
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			c.json = json.RawMessage(s)
		}
	}
	if c.json == nil {
		b, _ := json.Marshal(s)
		c.json = b
	}
	return c
}

func writeRow(w *bufio.Writer, format string, schema sql.Schema, cells []cell) {
	if format == "json" {
		w.WriteByte('{')
		for i, c := range schema {
			if i > 0 {
				w.WriteByte(',')
			}
			k, _ := json.Marshal(c.Name)
			w.Write(k)
			w.WriteByte(':')
			w.Write(cells[i].json)
		}
		w.WriteString("}\n")
		return
	}
	for i, c := range cells {
		if i > 0 {
			w.WriteByte('\t')
		}
		if c.null {
			w.WriteString(`\N`)
			continue
		}
		w.WriteString(tsvEscape(c.text))
	}
	w.WriteByte('\n')
}

// tsvEscaper escapes like mysql --batch: backslash, tab, newline, NUL.
var tsvEscaper = strings.NewReplacer("\\", `\\`, "\t", `\t`, "\n", `\n`, "\x00", `\0`)

func tsvEscape(s string) string { return tsvEscaper.Replace(s) }

// writeTable draws rows as the mysql client does.
func writeTable(w *bufio.Writer, schema sql.Schema, rows [][]cell) {
	if len(rows) == 0 {
		w.WriteString("Empty set\n")
		return
	}
	width := make([]int, len(schema))
	for i, c := range schema {
		width[i] = utf8.RuneCountInString(c.Name)
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c.text))
		}
	}
	line := func() {
		for _, n := range width {
			w.WriteByte('+')
			w.WriteString(strings.Repeat("-", n+2))
		}
		w.WriteString("+\n")
	}
	numeric := make([]bool, len(schema))
	for i, c := range schema {
		numeric[i] = types.IsNumber(c.Type)
	}
	cellLine := func(texts []string, header bool) {
		for i, s := range texts {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(s))
			if numeric[i] && !header {
				fmt.Fprintf(w, "| %s%s ", pad, s)
			} else {
				fmt.Fprintf(w, "| %s%s ", s, pad)
			}
		}
		w.WriteString("|\n")
	}
	line()
	names := make([]string, len(schema))
	for i, c := range schema {
		names[i] = c.Name
	}
	cellLine(names, true)
	line()
	for _, r := range rows {
		texts := make([]string, len(r))
		for i, c := range r {
			texts[i] = c.text
		}
		cellLine(texts, false)
	}
	line()
	fmt.Fprintf(w, "%d row%s in set\n", len(rows), plural(len(rows)))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
