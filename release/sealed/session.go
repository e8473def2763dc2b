package sealed

import (
	"context"
	"errors"
	"io"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/sirupsen/logrus"
)

// errSealed is what a write to the sealed session returns. No allowed
// function writes; the session refuses anyway (defence in depth), and the
// error only skips the row.
var errSealed = errors.New("sealed evaluation: the session cannot be changed from inside a private release")

// session is the session of a sealed evaluation: a private copy of the
// analyst's system variables (so that collations, sql_mode, time_zone and
// div_precision_increment behave as in the analyst's session), no user
// variables, and no way out. Warnings are dropped as they are raised (so
// they neither reach the analyst nor accumulate over a scan); the last
// query information (LAST_INSERT_ID, ROW_COUNT, FOUND_ROWS) and status
// variables are never recorded; writes to variables, stored-procedure
// parameters and locks fail.
type session struct {
	*sql.BaseSession
	// left is what a sized call may still build in the current row while
	// metered (gmsfix.RowBudget, set by the Evaluator per call).
	left    int
	metered bool
}

// RowBudget returns what the call being evaluated may still build.
func (s *session) RowBudget() (int, bool) { return s.left, s.metered }

var _ sql.Session = (*session)(nil)

// discardLog is the sealed session's logger: a function that logs (go-
// mysql-server's regexp leak handler does) must not write row values to the
// server's log either.
var discardLog = func() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	l.SetLevel(logrus.PanicLevel)
	return logrus.NewEntry(l)
}()

// newSession copies parent's client and system variables into a fresh
// sealed session. parent may be nil (tests, ungoverned engines).
func newSession(parent *sql.Context, maxValueBytes int) *session {
	var client sql.Client
	var addr string
	if parent != nil && parent.Session != nil {
		client, addr = parent.Session.Client(), parent.Session.Address()
	}
	base := sql.NewBaseSessionWithClientServer(addr, client, 0)
	base.SetLogger(discardLog)
	s := &session{BaseSession: base}
	if sql.SystemVariables == nil {
		return s // no registry (bare test engines): nothing to copy
	}
	ctx := sql.NewContext(context.Background(), sql.WithSession(s))
	if parent != nil && parent.Session != nil {
		for name, v := range parent.Session.GetAllSessionVariables() {
			// A variable that does not take its own value back (none
			// should) keeps the global default.
			_ = base.InitSessionVariable(ctx, name, v)
		}
		if db := parent.Session.GetCurrentDatabase(); db != "" {
			base.SetCurrentDatabase(db)
		}
	}
	// max_allowed_packet is the release's value limit, as a session sees
	// it (LPAD, RPAD and REPLACE are bounded by it through gmsfix.Guarded).
	_ = base.InitSessionVariable(ctx, "max_allowed_packet", int64(maxValueBytes))
	return s
}

// Warn drops the warning.
func (s *session) Warn(*sql.Warning) {}

// Warnings returns none.
func (s *session) Warnings() []*sql.Warning { return nil }

// WarningCount returns 0.
func (s *session) WarningCount() uint16 { return 0 }

// SetLastQueryInfoInt ignores LAST_INSERT_ID, ROW_COUNT and FOUND_ROWS.
func (s *session) SetLastQueryInfoInt(string, int64) {}

// SetLastQueryInfoString ignores the last query information.
func (s *session) SetLastQueryInfoString(string, string) {}

// SetUserVariable refuses.
func (s *session) SetUserVariable(*sql.Context, string, any, sql.Type) error { return errSealed }

// SetSessionVariable refuses.
func (s *session) SetSessionVariable(*sql.Context, string, any) error { return errSealed }

// SetStatusVariable ignores the write.
func (s *session) SetStatusVariable(*sql.Context, string, any) error { return nil }

// IncrementStatusVariable ignores the write.
func (s *session) IncrementStatusVariable(*sql.Context, string, int) {}

// SetStoredProcParam refuses.
func (s *session) SetStoredProcParam(string, any) error { return errSealed }

// AddLock refuses.
func (s *session) AddLock(string) error { return errSealed }

// PersistGlobal refuses.
func (s *session) PersistGlobal(*sql.Context, string, any) error { return errSealed }

// RemovePersistedGlobal refuses.
func (s *session) RemovePersistedGlobal(string) error { return errSealed }

// RemoveAllPersistedGlobals refuses.
func (s *session) RemoveAllPersistedGlobals() error { return errSealed }

// SetCurrentDatabase ignores the change.
func (s *session) SetCurrentDatabase(string) {}

// UseDatabase refuses.
func (s *session) UseDatabase(*sql.Context, sql.Database) error { return errSealed }

// StartTransaction refuses.
func (s *session) StartTransaction(*sql.Context, sql.TransactionCharacteristic) (sql.Transaction, error) {
	return nil, errSealed
}
