package server

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
)

// SetSessionVariable implements sql.Session: it records that the client
// SET the variable, so that the analyst's explicit values take
// precedence over a protected table's configured defaults, while values
// the session merely started with (the globals) do not
// (dpvars.VariableSetter).
func (s *session) SetSessionVariable(ctx *sql.Context, name string, value any) error {
	if err := s.BaseSession.SetSessionVariable(ctx, name, value); err != nil {
		return err
	}
	s.mu.Lock()
	if s.set == nil {
		s.set = map[string]bool{}
	}
	s.set[strings.ToLower(name)] = true
	s.mu.Unlock()
	return nil
}

// VariableSet reports whether the client SET the session variable.
func (s *session) VariableSet(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set[strings.ToLower(name)]
}
