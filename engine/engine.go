// Package engine assembles dpsql's go-mysql-server engine: New is the one
// constructor that installs everything dpsql adds to go-mysql-server
// v0.20.0 — the DP_SET_UNION aggregate and the planner rules that make it
// an aggregate, the DP_NGRAMS and DP_EXPLAIN table functions, the parser
// guard, the linear-time LIKE, the guarded scalar functions and the dp_*
// system variables — so that any program embedding go-mysql-server can
// reuse it with its own DatabaseProvider. The package server adds the
// MySQL-protocol server, its limits and the governed server on top; the
// tests of planner and release build their engines here, without the
// server.
package engine

import (
	"context"
	"fmt"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/gmsfix"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/server/storage"
)

// DefaultMaxStringBytes is the bound on a function's string result of an
// engine whose Config sets none (4 MiB).
const DefaultMaxStringBytes = 4 << 20

// Config configures New.
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
	// MaxStringBytes bounds every function's string result (0:
	// DefaultMaxStringBytes).
	MaxStringBytes int
}

// New returns a go-mysql-server engine over cfg.Provider with dpsql's
// SQL extension installed:
//
//   - the dp_* system variables (registered once per process, before any
//     session exists: sessions snapshot the registry when created);
//   - DP_SET_UNION in the engine's function registry;
//   - the table functions DP_NGRAMS and DP_EXPLAIN, when cfg.Provider implements
//     sql.TableFunctionProvider (the analyzer then uses the provider copy
//     that WithTableFunctions returns; table functions registered on the
//     original provider afterwards are not seen). Lookups are as
//     case-insensitive as the provider makes them: storage.Provider's are,
//     go-mysql-server's memory provider's are not;
//   - planner.Rules() followed by cfg.Rules in a fresh analyzer (one
//     analyzer per engine: sqle.New panics when given an analyzer twice),
//     then go-mysql-server's LIKE replaced by a linear-time one and every
//     scalar function call guarded (gmsfix.Guarded: a panic is an error, a
//     string beyond cfg.MaxStringBytes is NULL with warning 1301, and
//     REPEAT, SPACE, LPAD, RPAD, REPLACE and CONCAT do not even build it,
//     nor REGEXP_REPLACE beyond it);
//   - a planner.GuardParser running cfg.Checks as the engine's and the
//     analyzer's parser.
func New(cfg Config) (*sqle.Engine, error) {
	dpvars.RegisterSystemVariables()
	pro := cfg.Provider
	if pro == nil {
		p, err := storage.NewProvider()
		if err != nil {
			return nil, err
		}
		pro = p
	}
	ctx := sql.NewEmptyContext()
	// DP_EXPLAIN plans queries with the engine being built.
	var engine *sqle.Engine
	analyze := func(ctx *sql.Context, query string) (sql.Node, error) { return engine.AnalyzeQuery(ctx, query) }
	if tfp, ok := pro.(sql.TableFunctionProvider); ok {
		// WithTableFunctions returns a copy (go-mysql-server's memory
		// provider and storage.Provider alike): the copy is what the
		// analyzer must use.
		if _, exists := tfp.TableFunction(ctx, functions.NgramsName); exists {
			return nil, fmt.Errorf("engine: the provider already defines the table function %s; let engine.New install it", functions.NgramsName)
		}
		np, err := tfp.WithTableFunctions(functions.NgramsTableFunction(cfg.Functions), planner.ExplainFunction(cfg.Functions.Governor, analyze))
		if err != nil {
			return nil, fmt.Errorf("engine: installing %s: %w", functions.NgramsName, err)
		}
		dp, ok := np.(sql.DatabaseProvider)
		if !ok {
			return nil, fmt.Errorf("engine: %T.WithTableFunctions returned %T, which is not a sql.DatabaseProvider", pro, np)
		}
		pro = dp
	}
	maxString := cfg.MaxStringBytes
	if maxString <= 0 {
		maxString = DefaultMaxStringBytes
	}
	rules := append(planner.Rules(), cfg.Rules...)
	rules = append(rules,
		planner.Rule{ID: planner.RuleIDBase + 90, Name: "linear_like", Batch: planner.PreAnalyze, Apply: gmsfix.ReplaceLike},
		planner.Rule{ID: planner.RuleIDBase + 91, Name: "guard_functions", Batch: planner.PostAnalyze, Apply: gmsfix.GuardFunctions(maxString)},
	)
	b, err := planner.Install(analyzer.NewBuilder(pro), rules)
	if err != nil {
		return nil, err
	}
	a := b.Build()
	if _, exists := a.Catalog.Function(ctx, functions.SetUnionName); exists {
		return nil, fmt.Errorf("engine: the provider already defines %s; let engine.New install it", functions.SetUnionName)
	}
	a.Catalog.RegisterFunction(ctx, functions.SetUnionFunction(cfg.Functions))
	a.Catalog.RegisterFunction(ctx, functions.QuantileFunctions()...)
	a.Catalog.RegisterFunction(ctx, functions.IntervalFunctions()...)
	parser := planner.NewGuardParser(sql.GlobalParser, cfg.Checks...)
	a.Parser = parser
	e := sqle.New(a, cfg.Engine)
	e.Parser = parser
	engine = e
	return e, nil
}

// NewContext returns a query context for e with a new session of user
// (empty for a local, accountless caller) whose current database is db
// (may be empty). Use it to run queries on an embedded engine:
//
//	ctx := engine.NewContext(context.Background(), "", "demo")
//	schema, iter, _, err := e.Query(ctx, "SELECT DP_SET_UNION(word, user_id) FROM words")
func NewContext(parent context.Context, user, db string) *sql.Context {
	dpvars.RegisterSystemVariables()
	sess := sql.NewBaseSessionWithClientServer("localhost", sql.Client{User: user, Address: "localhost"}, 1)
	ctx := sql.NewContext(parent, sql.WithSession(sess))
	if db != "" {
		ctx.SetCurrentDatabase(db)
	}
	return ctx
}
