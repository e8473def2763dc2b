// Package server runs dpsql's engine (package engine) as a MySQL-protocol
// server (NewServer: statement, connection and memory guards), and
// assembles the governed server from a configuration (NewGoverned: ledger,
// datasets, accounts, budgets, analyst rules; Demo for the embedded
// default of `dpsql serve`).
//
// NewEngine is engine.New with the server's limits applied: any program
// embedding go-mysql-server can reuse it with its own DatabaseProvider.
package server

import (
	"context"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/planner"
)

// Config configures NewEngine.
type Config struct {
	// Provider serves the databases. Nil means an empty storage.Provider.
	// Any sql.DatabaseProvider works (go-mysql-server's memory provider
	// included; its tables then need memory.Session sessions).
	Provider sql.DatabaseProvider
	// Functions configures the DP functions (tests inject seeded
	// randomness there; leave it zero in production).
	Functions functions.Config
	// Rules are analyzer rules installed after dpsql's own (planner.Rules).
	Rules []planner.Rule
	// Checks are parser checks run after dpsql's own (planner.CallCheck).
	Checks []planner.Check
	// Engine is passed to sqle.New (nil for the defaults).
	Engine *sqle.Config
	// Limits: the engine applies MaxStringBytes to every function's
	// result and MaxInList to IN lists (zero fields: DefaultLimits).
	Limits Limits
}

// NewEngine returns engine.New's engine over cfg.Provider with cfg's rules
// and checks, every function's string result bounded by
// cfg.Limits.MaxStringBytes and IN lists beyond cfg.Limits.MaxInList
// refused by the parser (Limits.InListCheck, before cfg.Checks).
func NewEngine(cfg Config) (*sqle.Engine, error) {
	lim := cfg.Limits.WithDefaults()
	return engine.New(engine.Config{
		Provider:       cfg.Provider,
		Functions:      cfg.Functions,
		Rules:          cfg.Rules,
		Checks:         append([]planner.Check{lim.InListCheck}, cfg.Checks...),
		Engine:         cfg.Engine,
		MaxStringBytes: lim.MaxStringBytes,
	})
}

// NewContext returns a query context with a new session of user (empty for
// a local, accountless caller) whose current database is db (may be
// empty); it is engine.NewContext:
//
//	ctx := server.NewContext(context.Background(), "", "demo")
//	schema, iter, _, err := e.Query(ctx, "SELECT DP_SET_UNION(word, user_id) FROM words")
func NewContext(parent context.Context, user, db string) *sql.Context {
	return engine.NewContext(parent, user, db)
}
