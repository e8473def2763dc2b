package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestEffectiveTimeout: a governed SELECT stops at the session's
// max_execution_time when it is below the configured limit, which caps it
// otherwise; other statements (SET max_execution_time = 0 itself) keep the
// configured limit.
func TestEffectiveTimeout(t *testing.T) {
	cfg := 10 * time.Second
	for _, c := range []struct {
		ms     int64
		sel    bool
		want   time.Duration
		byUser bool
	}{
		{0, true, cfg, false},
		{2000, true, 2 * time.Second, true},
		{2000, false, cfg, false},
		{60_000, true, cfg, false},
		{-5, true, cfg, false},
		{1 << 62, true, cfg, false},
	} {
		got := effectiveTimeout(cfg, c.ms, c.sel)
		if got.d != c.want || got.session != c.byUser {
			t.Errorf("max_execution_time %d, select %v: %+v, want %v (session %v)", c.ms, c.sel, got, c.want, c.byUser)
		}
	}
	for q, want := range map[string]bool{
		"SELECT 1": true, "  /* c */ select 1": true, "(SELECT 1)": true, "WITH x AS (SELECT 1) SELECT * FROM x": true,
		"SET max_execution_time = 0": false, "SHOW TABLES": false, "": false,
	} {
		if isSelect(q) != want {
			t.Errorf("isSelect(%q) = %v", q, !want)
		}
	}
}
