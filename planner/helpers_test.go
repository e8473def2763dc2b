package planner_test

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/release"
)

// refusedUncharged checks that q was refused with MySQL error 1142 saying
// want, before anything was charged to gov.
func refusedUncharged(t *testing.T, gov *fakeGov, q string, err error, want string) {
	t.Helper()
	testmysql.WantRefused(t, q, err, release.ERTableAccessDenied, want)
	if len(gov.charged) != 0 {
		t.Errorf("%s: charged %d", q, len(gov.charged))
	}
}

// answeredCharged checks that q answered rows (err nil) that flatten to
// want, with the given number of charges to gov.
func answeredCharged(t *testing.T, gov *fakeGov, q string, rows []sql.Row, err error, want string, charges int) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", q, err)
		return
	}
	if got := flat(rows); got != want {
		t.Errorf("%s: got %q, want %q", q, got, want)
	}
	if len(gov.charged) != charges {
		t.Errorf("%s: %d charges, want %d", q, len(gov.charged), charges)
	}
}
