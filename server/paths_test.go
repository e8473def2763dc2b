package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
)

// TestGovernedErrorsHideServerPaths: an error a governed user receives
// (a ledger failure names its file) shows no server path, as a MySQL error
// or as text; an administrator's keeps it, and an analyst's own values
// that merely look like paths are kept.
func TestGovernedErrorsHideServerPaths(t *testing.T) {
	dataDir := t.TempDir()
	g := newStatementGuard(DefaultLimits().WithDefaults(), func(u string) bool { return u == "alice" }, nil)
	g.paths = newPathScrubber([]string{dataDir, "relative/ignored"})
	ledgerFile := filepath.Join(dataDir, "ledger.db")
	for _, err := range []error{
		fmt.Errorf("privacy budget ledger: write %s: no space left on device", ledgerFile),
		mysql.NewSQLError(mysql.ERUnknownError, "HY000", "ledger: %s is damaged", ledgerFile),
	} {
		got := g.finish(context.Background(), &mysql.Conn{User: "alice"}, err)
		if strings.Contains(got.Error(), dataDir) || !strings.Contains(got.Error(), "<server path>") {
			t.Errorf("analyst sees %q", got)
		}
		var se *mysql.SQLError
		if !errors.As(got, &se) || se.Num != mysql.ERUnknownError {
			t.Errorf("analyst's error %v is not MySQL error 1105", got)
		}
		if admin := g.finish(context.Background(), &mysql.Conn{User: "admin"}, err); !strings.Contains(admin.Error(), dataDir) {
			t.Errorf("administrator sees %q, want the path", admin)
		}
	}
	own := mysql.NewSQLError(1062, "23000", "Duplicate entry '/common/1'")
	if got := g.finish(context.Background(), &mysql.Conn{User: "alice"}, own); got.Error() != own.Error() {
		t.Errorf("an analyst's value changed: %q", got)
	}
}
