package server

import (
	"context"
	"fmt"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// statementTimeout is the running time a governed session's statement may
// take, and what bounds it.
type statementTimeout struct {
	d time.Duration
	// session is true when the session's max_execution_time, below the
	// configured limit, sets it.
	session bool
}

type timeoutKey struct{}

// effectiveTimeout is the time a statement may run: the configured
// limit, or the session's max_execution_time (milliseconds, MySQL's
// variable; 0: none) when the statement is a SELECT and the session's is
// smaller. MySQL applies max_execution_time to read-only SELECT
// statements only, so that SET max_execution_time = 0 always runs.
func effectiveTimeout(configured time.Duration, sessionMillis int64, isSelect bool) statementTimeout {
	if !isSelect || sessionMillis <= 0 {
		return statementTimeout{d: configured}
	}
	if s := time.Duration(sessionMillis) * time.Millisecond; s < configured && s/time.Millisecond == time.Duration(sessionMillis) {
		return statementTimeout{d: s, session: true}
	}
	return statementTimeout{d: configured}
}

// isSelect reports whether a statement's text starts (after comments and
// parentheses) with SELECT or WITH.
func isSelect(query string) bool {
	tkn := ast.NewStringTokenizer(query)
	for {
		typ, _ := tkn.Scan()
		switch typ {
		case '(', ast.COMMENT:
			continue
		case ast.SELECT, ast.WITH:
			return true
		}
		return false
	}
}

// sessionMaxExecutionTime returns the max_execution_time of connection
// id's session (0 when there is none).
func (g *statementGuard) sessionMaxExecutionTime(id uint32) int64 {
	if g.sessions == nil {
		return 0
	}
	var ms int64
	_ = g.sessions(func(s sql.Session) (bool, error) {
		if s.ID() != id {
			return false, nil
		}
		// The session's own context: sql.NewEmptyContext would build a base
		// session (maps of every variable) per statement to read one.
		v, err := s.GetSessionVariable(sql.NewContext(context.Background(), sql.WithSession(s)), "max_execution_time")
		if err == nil {
			ms, _ = toInt64(v)
		}
		return true, nil
	})
	return ms
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		return int64(min(x, 1<<62)), true
	}
	return 0, false
}

// message is the text of MySQL's error 3024 for a statement stopped at
// timeout t, naming what set it.
func (t statementTimeout) message(configured time.Duration) string {
	if t.session {
		return fmt.Sprintf("Query execution was interrupted, maximum statement execution time exceeded (%s: the session's max_execution_time; limits.max_execution_time in the server's configuration caps it at %s)", t.d, configured)
	}
	return fmt.Sprintf("Query execution was interrupted, maximum statement execution time exceeded (%s; limits.max_execution_time in the server's configuration)", t.d)
}

// timeoutOf returns the statement timeout deadline stored in ctx (the
// configured limit when none is).
func timeoutOf(ctx context.Context, configured time.Duration) statementTimeout {
	if t, ok := ctx.Value(timeoutKey{}).(statementTimeout); ok {
		return t
	}
	return statementTimeout{d: configured}
}
