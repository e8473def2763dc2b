package engine_test

import (
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/internal/testengine"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// defaultsEngine is governedEngine with configured defaults for
// mydb.notes, as the governed server gives them from the table's and its
// columns' dp: sections: the table's ε = 2, δ = 1e-7, mechanism
// weighted_gaussian and Δ0 = 7; the column uname's Δ0 = 1.
func defaultsEngine(t *testing.T) (*sqle.Engine, *testengine.FakeGov) {
	t.Helper()
	return defaultsEngineWith(t, map[string]any{dpvars.VarEpsilon: 2.0, dpvars.VarDelta: 1e-7, dpvars.VarMechanism: "weighted_gaussian",
		dpvars.VarMaxGroups: int64(7), dpvars.VarMaxItems: int64(7)})
}

// defaultsEngineWith is defaultsEngine with the table's defaults vars.
func defaultsEngineWith(t *testing.T, vars map[string]any) (*sqle.Engine, *testengine.FakeGov) {
	t.Helper()
	reads := new(atomic.Int64)
	gov := &testengine.FakeGov{
		Analysts: map[string]bool{"alice": true},
		Units:    map[string]string{"mydb.notes": "user_id"},
		Reads:    reads,
	}
	d := &dpvars.TableDefaults{
		Vars:    vars,
		Columns: map[string]dpvars.ColumnDefaults{"uname": {MaxGroups: 1}},
	}
	defaults := func(db, table string) *dpvars.TableDefaults {
		if strings.EqualFold(db+"."+table, "mydb.notes") {
			return d
		}
		return nil
	}
	seeded := func() *rand.Rand { return securerand.NewSeeded(42) }
	e, err := engine.New(engine.Config{
		Provider:  testengine.CountingProvider{Provider: testengine.NgramsProvider(t, release.ScanGuard(gov, "mydb", "notes")), Reads: reads},
		Functions: functions.Config{Rand: seeded, Governor: gov, Defaults: defaults},
		Rules:     planner.PolicyRules(gov, planner.WithRand(seeded), planner.WithTableDefaults(defaults)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, gov
}

// TestSetUnionAndNgramsTakeConfiguredDefaults (issue 21): DP_SET_UNION
// and DP_NGRAMS take the configured defaults with the precedence of
// GROUP BY and SELECT DISTINCT — the call's options and the statement's
// hints, then the analyst's SET, then the item column's configuration,
// then the table's, then the server default — read from what each
// release is charged and from DP_EXPLAIN's source.* rows.
func TestSetUnionAndNgramsTakeConfiguredDefaults(t *testing.T) {
	cases := []struct {
		name  string
		stmts []string
		eps   float64
		delta float64
		mech  string
	}{
		{"set union: table", []string{"SELECT DP_SET_UNION(body, user_id) FROM notes"}, 2, 1e-7, "weighted_gaussian"},
		{"set union: options string", []string{"SELECT DP_SET_UNION(body, user_id, 'epsilon=0.5, mechanism=dp_sips') FROM notes"}, 0.5, 1e-7, "dp_sips"},
		{"set union: hint", []string{"SELECT /*+ SET_VAR(dp_delta = 1e-8) */ DP_SET_UNION(body, user_id) FROM notes"}, 2, 1e-8, "weighted_gaussian"},
		{"set union: session", []string{"SET dp_epsilon = 0.7", "SELECT DP_SET_UNION(body, user_id) FROM notes"}, 0.7, 1e-7, "weighted_gaussian"},
		{"ngrams: table", []string{"SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id')"}, 2, 1e-7, "weighted_gaussian"},
		{"ngrams: options string", []string{"SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'epsilon=0.5, max_n=2')"}, 0.5, 1e-7, "weighted_gaussian"},
		{"ngrams: session", []string{"SET dp_mechanism = 'policy_gaussian_l2'", "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id')"}, 2, 1e-7, "policy_gaussian_l2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, gov := defaultsEngine(t)
			ctx := engine.NewContext(t.Context(), "alice", "mydb")
			for _, q := range c.stmts {
				if _, err := runIn(ctx, e, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if len(gov.Charges) != 1 {
				t.Fatalf("%d charges", len(gov.Charges))
			}
			ch := gov.Charges[0]
			if ch.Epsilon != c.eps || ch.Delta != c.delta || ch.Mechanism != c.mech {
				t.Errorf("charged ε = %v, δ = %v, mechanism %s; want %v, %v, %s", ch.Epsilon, ch.Delta, ch.Mechanism, c.eps, c.delta, c.mech)
			}
		})
	}
}

// TestExplainSourcesOfSetUnionAndNgrams: DP_EXPLAIN says where each option
// of DP_SET_UNION and DP_NGRAMS came from; an item that is a configured
// column takes the column's Δ0 over the table's.
func TestExplainSourcesOfSetUnionAndNgrams(t *testing.T) {
	e, _ := defaultsEngine(t)
	ctx := engine.NewContext(t.Context(), "alice", "mydb")
	if _, err := runIn(ctx, e, "SET dp_delta = 1e-8"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"SELECT DP_SET_UNION(body, user_id, ''epsilon=0.5'') FROM notes", []string{
			"source.epsilon=statement", "source.delta=session", "source.mechanism=table configuration", "source.max_items=table configuration", "max_items=7"}},
		{"SELECT DP_SET_UNION(uname, user_id) AS a, DP_SET_UNION(body, user_id) AS b FROM notes", []string{
			"call_1.source.max_items=column configuration", "call_1.max_items=1", "call_2.source.max_items=table configuration", "call_2.max_items=7",
			"call_1.source.epsilon=table configuration", "call_2.source.delta=session"}},
		{"SELECT * FROM DP_NGRAMS(''notes'', ''body'', ''user_id'', ''mechanism=dp_sips'')", []string{
			"source.epsilon=table configuration", "source.delta=session", "source.mechanism=statement", "source.max_items=table configuration"}},
	} {
		rows, err := runIn(ctx, e, "SELECT parameter, value FROM DP_EXPLAIN('"+c.query+"')")
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		got := map[string]bool{}
		for _, r := range rows {
			got[r[0].(string)+"="+r[1].(string)] = true
		}
		for _, w := range c.want {
			if !got[w] {
				t.Errorf("%s: no %s in %v", c.query, w, rows)
			}
		}
	}
}

// TestNgramsConfiguredMechanismItCannotUse: a table's configured
// mechanism that n-gram extraction cannot use is refused before any
// charge, with an error that names the configuration and says what to
// pass; an administrator's (ungoverned) DP_NGRAMS takes no configured
// defaults, as an ungoverned DP_SET_UNION takes none.
func TestNgramsConfiguredMechanismItCannotUse(t *testing.T) {
	e, gov := defaultsEngineWith(t, map[string]any{dpvars.VarMechanism: "count_laplace"})
	ctx := engine.NewContext(t.Context(), "alice", "mydb")
	_, err := runIn(ctx, e, "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id')")
	if err == nil || !strings.Contains(err.Error(), "the configured mechanism of mydb.notes (its dp: section) is count_laplace") || !strings.Contains(err.Error(), "'mechanism=dp_sips'") {
		t.Fatalf("got %v", err)
	}
	if _, err := runIn(ctx, e, "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id', 'mechanism=dp_sips')"); err != nil {
		t.Fatal(err)
	}
	if len(gov.Charges) != 1 || gov.Charges[0].Mechanism != "dp_sips" {
		t.Fatalf("charges %+v", gov.Charges)
	}
	admin := engine.NewContext(t.Context(), "root", "mydb")
	if _, err := runIn(admin, e, "SELECT * FROM DP_NGRAMS('notes', 'body', 'user_id')"); err != nil {
		t.Fatalf("administrator: %v", err)
	}
}

// runIn runs q in the session of ctx, with q as the context's query text.
func runIn(ctx *sql.Context, e *sqle.Engine, q string) ([]sql.Row, error) {
	qctx := ctx.WithQuery(q)
	_, it, _, err := e.Query(qctx, q)
	if err != nil {
		return nil, err
	}
	return sql.RowIterToRows(qctx, it)
}
