// Package clients runs SQL through real MySQL client programs and drivers —
// go-sql-driver/mysql, the MariaDB `mysql` command line client, MariaDB
// Connector/J over JDBC, pandas over SQLAlchemy and PyMySQL, and Node's
// mysql2 — and returns what each client reported, statement by statement, so
// that Go tests can assert on results as users of those clients see them.
//
// External clients receive a [Request] as JSON on standard input (so the
// password stays off the command line) and print a [Response] as JSON.
package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Target says where and as whom a client connects.
type Target struct {
	Host     string
	Port     int
	User     string
	Password string
	Database string // "" connects without a default database
	TLS      bool   // require TLS
	CAFile   string // PEM file that verifies the server certificate; "" with TLS accepts any certificate
}

// Addr returns host:port.
func (t Target) Addr() string { return fmt.Sprintf("%s:%d", t.Host, t.Port) }

// Statement is one step a client runs on its single connection, in order, so
// that session settings carry over from one statement to the next.
type Statement struct {
	// SQL is the statement text; "?" marks parameters of a prepared statement.
	SQL string `json:"sql,omitempty"`
	// Prepared runs SQL as a prepared statement with Args bound: server-side
	// (COM_STMT_PREPARE/EXECUTE) for go-sql-driver with interpolateParams=false,
	// Connector/J with useServerPrepStmts=true and mysql2's execute; PyMySQL
	// has no server-side statements and interpolates Args client-side. The
	// mysql command line client cannot prepare and reports an error result.
	Prepared bool  `json:"prepared,omitempty"`
	Args     []any `json:"args,omitempty"`
	// ClientSide makes a prepared statement client-side in Connector/J
	// (the driver interpolates the arguments into the text); an argument
	// "date:YYYY-MM-DD" is bound there as a java.sql.Date. Other clients
	// ignore both.
	ClientSide bool `json:"client_side,omitempty"`
	// Meta names a JDBC DatabaseMetaData method instead of SQL (JDBC only):
	// getCatalogs, getSchemas, getTables(catalog, schemaPattern, tablePattern,
	// types), getColumns(catalog, schemaPattern, tablePattern, columnPattern),
	// getPrimaryKeys(catalog, schema, table), getIndexInfo(catalog, schema,
	// table), getImportedKeys(catalog, schema, table). Args are its arguments:
	// strings or nil, and for getTables' types a []string or nil.
	Meta string `json:"meta,omitempty"`
	// Warnings asks for the statement's warnings and notes (SHOW WARNINGS
	// on the same connection right after it; the mysql command line
	// client's --show-warnings) in [Result.Warnings].
	Warnings bool `json:"warnings,omitempty"`
}

// Query is a statement run over the text protocol.
func Query(sql string) Statement { return Statement{SQL: sql} }

// WithWarnings is s asking for its warnings and notes.
func (s Statement) WithWarnings() Statement {
	s.Warnings = true
	return s
}

// Prepare is a prepared statement with its arguments.
func Prepare(sql string, args ...any) Statement {
	return Statement{SQL: sql, Prepared: true, Args: args}
}

// Meta is a JDBC DatabaseMetaData call.
func Meta(method string, args ...any) Statement { return Statement{Meta: method, Args: args} }

func (s Statement) String() string {
	switch {
	case s.Meta != "":
		return fmt.Sprintf("DatabaseMetaData.%s%v", s.Meta, s.Args)
	case s.Prepared:
		return fmt.Sprintf("prepared %q %v", s.SQL, s.Args)
	}
	return strconv.Quote(s.SQL)
}

// Result is what a client reported for one statement: an error, or columns
// and rows (values as the client renders them to text; nil is SQL NULL).
// Statements without a result set have no columns.
type Result struct {
	Columns []string    `json:"columns,omitempty"`
	Types   []string    `json:"types,omitempty"` // column type names where the client exposes them
	Rows    [][]*string `json:"rows,omitempty"`
	Error   *Error      `json:"error,omitempty"`
	// Warnings are the statement's warnings and notes, when the statement
	// asked for them.
	Warnings []Warning `json:"warnings,omitempty"`
}

// Warning is one row of SHOW WARNINGS as a client reported it.
type Warning struct {
	Level   string `json:"level"` // "Note", "Warning" or "Error"
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Cells returns the rows with NULL written as "NULL".
func (r Result) Cells() [][]string {
	out := make([][]string, len(r.Rows))
	for i, row := range r.Rows {
		out[i] = make([]string, len(row))
		for j, v := range row {
			if v == nil {
				out[i][j] = "NULL"
			} else {
				out[i][j] = *v
			}
		}
	}
	return out
}

// Column returns the values of the named column (case-insensitive), NULL as
// "NULL"; nil if there is no such column.
func (r Result) Column(name string) []string {
	for j, c := range r.Columns {
		if strings.EqualFold(c, name) {
			var out []string
			for _, row := range r.Cells() {
				out = append(out, row[j])
			}
			return out
		}
	}
	return nil
}

// Error is a MySQL error as a client reported it. Code is the MySQL error
// number (0 when the client gave none, for example for a driver-side error).
type Error struct {
	Code    int    `json:"code"`
	State   string `json:"state,omitempty"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Code == 0 {
		return e.Message
	}
	return fmt.Sprintf("Error %d (%s): %s", e.Code, e.State, e.Message)
}

// Runner runs statements through one client. A returned error means the
// client could not run at all; when it could not connect, the error is an
// [*Error] carrying the client's report (errors.As finds it).
type Runner interface {
	Name() string
	Run(ctx context.Context, t Target, stmts []Statement) ([]Result, error)
}

// Request is the JSON an external client program reads on standard input.
type Request struct {
	Host       string      `json:"host"`
	Port       int         `json:"port"`
	User       string      `json:"user"`
	Password   string      `json:"password"`
	Database   string      `json:"database"`
	TLS        bool        `json:"tls"`
	CAFile     string      `json:"ca_file,omitempty"`
	Statements []Statement `json:"statements"`
}

// Response is the JSON an external client program prints.
type Response struct {
	ConnectError *Error   `json:"connect_error,omitempty"`
	Results      []Result `json:"results"`
}

func newRequest(t Target, stmts []Statement) Request {
	return Request{Host: t.Host, Port: t.Port, User: t.User, Password: t.Password, Database: t.Database,
		TLS: t.TLS, CAFile: t.CAFile, Statements: stmts}
}

// runJSON runs cmd with the request on standard input and decodes its
// response.
func runJSON(cmd *exec.Cmd, req Request) ([]Result, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	runErr := cmd.Run()
	var resp Response
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("%s: %v; no JSON response (%v); stdout: %s; stderr: %s",
			cmd.Path, runErr, err, clip(stdout.String()), clip(stderr.String()))
	}
	if resp.ConnectError != nil {
		return nil, resp.ConnectError
	}
	if runErr != nil {
		return nil, fmt.Errorf("%s: %v; stderr: %s", cmd.Path, runErr, clip(stderr.String()))
	}
	if len(resp.Results) != len(req.Statements) {
		return nil, fmt.Errorf("%s: %d results for %d statements; stderr: %s",
			cmd.Path, len(resp.Results), len(req.Statements), clip(stderr.String()))
	}
	return resp.Results, nil
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "…"
	}
	return s
}

func str(s string) *string { return &s }
