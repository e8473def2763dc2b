package integration

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testenv"
)

// pythonRunner returns the pandas runner on Debian's interpreter
// (DPSQL_PYTHON overrides it), skipping (failing under CI) when pandas,
// SQLAlchemy or PyMySQL cannot be imported.
func pythonRunner(t *testing.T) clients.Python {
	t.Helper()
	externalClient(t, "Python (pandas, PyMySQL)")
	interp := os.Getenv("DPSQL_PYTHON")
	if interp == "" {
		interp = clients.DefaultPython
	}
	p := clients.Python{Interpreter: interp}
	if out, err := p.Check(context.Background()); err != nil {
		msg := fmt.Sprintf("pandas, SQLAlchemy and PyMySQL not importable by %s (apt-get install python3-pandas "+
			"python3-sqlalchemy python3-pymysql; .ci/run installs them): %v %s", interp, err, out)
		if testenv.CI() {
			t.Fatal("required under CI: " + msg)
		}
		t.Skip(msg)
	} else {
		t.Logf("pandas, SQLAlchemy, PyMySQL: %s", out)
	}
	return p
}
