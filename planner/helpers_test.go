package planner_test

import (
	"testing"

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
