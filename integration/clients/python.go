package clients

import (
	"context"
	_ "embed"
	"os/exec"
)

//go:embed python/dpsql_pandas.py
var pythonSource string

// DefaultPython is Debian's interpreter, which has the python3-pandas,
// python3-sqlalchemy and python3-pymysql packages. A `python3` found first on
// PATH may be another installation (pyenv, a virtualenv) without them, and
// PyPI is out of reach, so the runner does not use PATH.
const DefaultPython = "/usr/bin/python3"

// Python runs statements through pandas.read_sql over SQLAlchemy with
// PyMySQL (python/dpsql_pandas.py), as a notebook user would. PyMySQL has no
// server-side prepared statements: "?" parameters are bound client-side.
// PyMySQL falls back to a clear-text connection when the server does not
// offer TLS, so a TLS target proves nothing unless the server requires TLS.
type Python struct {
	Interpreter string // "" is DefaultPython
}

func (Python) Name() string { return "pandas/SQLAlchemy/PyMySQL" }

func (p Python) interpreter() string {
	if p.Interpreter == "" {
		return DefaultPython
	}
	return p.Interpreter
}

// Check reports whether the interpreter can import pandas, SQLAlchemy and
// PyMySQL, with its error output if not.
func (p Python) Check(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, p.interpreter(), "-c",
		"import pandas, sqlalchemy, pymysql; print(pandas.__version__, sqlalchemy.__version__, pymysql.__version__)").CombinedOutput()
	return string(out), err
}

func (p Python) Run(ctx context.Context, t Target, stmts []Statement) ([]Result, error) {
	cmd := exec.CommandContext(ctx, p.interpreter(), "-I", "-c", pythonSource)
	return runJSON(cmd, newRequest(t, stmts))
}
