package server

import (
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
)

// session is a connection's session: go-mysql-server's, with the bytes its
// user variables hold bounded by Limits.MaxUserVariableBytes. User
// variables outlive the statement that sets them, so an analyst could
// otherwise grow the process one SET @vN = REPEAT(…) at a time (measured:
// 72–79 variables of 16 MB ended the process under a 3 GiB address-space
// limit).
type session struct {
	*sql.BaseSession
	maxUserVars int

	mu    sync.Mutex
	sizes map[string]int // bytes held per variable (lower-cased name)
	total int
	set   map[string]bool // session variables the client SET (explicit.go)
}

// SetUserVariable implements sql.Session: it refuses, with error 1041
// naming the limit, a value that would take the session's user variables
// above their bound; the variable keeps its previous value.
func (s *session) SetUserVariable(ctx *sql.Context, name string, value any, typ sql.Type) error {
	n := valueBytes(value)
	key := strings.ToLower(name)
	s.mu.Lock()
	if s.sizes == nil {
		s.sizes = map[string]int{}
	}
	total := s.total - s.sizes[key] + n
	if s.maxUserVars > 0 && total > s.maxUserVars {
		s.mu.Unlock()
		return mysql.NewSQLError(mysql.EROutOfResources, "HY000",
			"Out of memory: user variables of this session would hold %d bytes, above limits.max_user_variable_bytes (%d) in the server's configuration; SET unused variables to NULL",
			total, s.maxUserVars)
	}
	s.mu.Unlock()
	if err := s.BaseSession.SetUserVariable(ctx, name, value, typ); err != nil {
		return err
	}
	s.mu.Lock()
	s.total = s.total - s.sizes[key] + n
	s.sizes[key] = n
	s.mu.Unlock()
	return nil
}

// valueBytes is roughly what a user variable's value holds.
func valueBytes(v any) int {
	switch v := v.(type) {
	case string:
		return len(v) + 16
	case []byte:
		return len(v) + 24
	default:
		return 16
	}
}
