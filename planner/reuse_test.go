package planner_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/release"
)

// reuseGov is fakeGov with an in-memory store of releases by specification
// (release.Reuser), so that the planner's hooks are tested without a
// ledger.
type reuseGov struct {
	*fakeGov
	stored map[string][]byte
	specs  []string // the specification of every ChargeOrReuse
}

func (g *reuseGov) ChargeOrReuse(ctx *sql.Context, reqs []release.Request) (*release.Reuse, error) {
	spec := reqs[0].Reuse.Spec
	g.specs = append(g.specs, spec)
	if data, ok := g.stored[spec]; ok && spec != "" && !reqs[0].Reuse.Fresh {
		return &release.Reuse{Data: data, At: time.Unix(0, 0), Seq: 1}, nil
	}
	if err := release.Charge(ctx, g.fakeGov, reqs); err != nil {
		return nil, err
	}
	return &release.Reuse{Store: func(data []byte) error { g.stored[spec] = data; return nil }}, nil
}

func newReuseEngine(t *testing.T) (*sqle.Engine, *reuseGov) {
	t.Helper()
	g := &reuseGov{fakeGov: &fakeGov{budget: 1000}, stored: map[string][]byte{}}
	return buildPolicyEngine(t, g, true), g
}

// session runs statements on one session and returns the rows and
// warnings of the last.
func session(t *testing.T, e *sqle.Engine, stmts ...string) ([]sql.Row, []*sql.Warning, error) {
	t.Helper()
	ctx := engine.NewContext(context.Background(), "analyst", "mydb")
	var rows []sql.Row
	var err error
	for _, q := range stmts {
		ctx = ctx.WithQuery(q)
		ctx.ClearWarnings()
		var it sql.RowIter
		if _, it, _, err = e.Query(ctx, q); err == nil {
			rows, err = sql.RowIterToRows(ctx, it)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return rows, ctx.Session.Warnings(), err
}

// reusedNote reports whether the warnings hold the Note of a reused
// release (beside it, a release that released no key also says so).
func reusedNote(w []*sql.Warning) bool {
	return slices.ContainsFunc(w, func(w *sql.Warning) bool {
		return w.Code == release.NoteReused && w.Level == "Note" && strings.Contains(w.Message, "no charge")
	})
}

// TestReuseKey: what the planner treats as the same release (and so
// reuses) and what not. A release is what is read, how, with which
// options; not the operators above it nor the statement's spelling.
func TestReuseKey(t *testing.T) {
	groups := [][]string{
		{
			"SELECT DISTINCT item FROM visits",
			"select   distinct ITEM from VISITS",
			"SELECT DISTINCT item FROM visits LIMIT 1",
			"SELECT DISTINCT item AS x FROM visits ORDER BY x DESC",
			"SELECT DISTINCT v.item FROM visits v",
			"SELECT * FROM (SELECT DISTINCT item FROM visits) AS s WHERE item <> 'x'",
			"SELECT item FROM visits GROUP BY item",
		},
		{"SELECT DISTINCT item FROM visits WHERE g = 1", "SELECT DISTINCT item FROM visits WHERE (g = 1)"},
		{"SELECT DISTINCT item FROM visits WHERE g = 1.0"},
		{"SELECT DISTINCT item FROM visits WHERE g = '1'"},
		{"SELECT DISTINCT item FROM visits WHERE g = 2"},
		{"SELECT DISTINCT item, g FROM visits"},
		{"SELECT DISTINCT g, item FROM visits"},
		{"SELECT DISTINCT UPPER(item) FROM visits"},
		{"SELECT /*+ SET_VAR(dp_epsilon = 0.5) */ DISTINCT item FROM visits"},
		{"SELECT /*+ SET_VAR(dp_max_items = 3) */ DISTINCT item FROM visits"},
		{"SELECT DP_SET_UNION(item, user_id) FROM visits"},
		{"SELECT DP_SET_UNION(item, user_id), DP_SET_UNION(UPPER(item), user_id) FROM visits"},
		// The same aggregate twice is one aggregate of the release.
		{"SELECT item, COUNT(*) FROM visits GROUP BY item", "SELECT item, COUNT(*) AS n FROM visits GROUP BY item ORDER BY n", "SELECT item, COUNT(*), COUNT(*) FROM visits GROUP BY item"},
		{"SELECT item, COUNT(*), COUNT(DISTINCT user_id) FROM visits GROUP BY item"},
	}
	e, g := newReuseEngine(t)
	seen := map[string]int{}
	for gi, group := range groups {
		for qi, q := range group {
			g.specs = nil
			_, w, err := session(t, e, q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if len(g.specs) != 1 || g.specs[0] == "" {
				t.Fatalf("%s: specifications %q", q, g.specs)
			}
			spec := g.specs[0]
			prev, ok := seen[spec]
			switch {
			case qi == 0 && ok:
				t.Errorf("%s: the same release as group %d (%s)", q, prev, groups[prev][0])
			case qi > 0 && prev != gi:
				t.Errorf("%s: not the release of %s", q, group[0])
			}
			seen[spec] = gi
			if reusedNote(w) != (qi > 0) {
				t.Errorf("%s: reused note %v", q, w)
			}
		}
	}
	// Session settings are part of a release only where its evaluation
	// reads them (TestReuseKeyCanonical): sql_mode is read at parse time
	// only, so the same statement under another one is the same release.
	g.specs = nil
	if _, w, err := session(t, e, "SET sql_mode = 'TRADITIONAL'", "SELECT DISTINCT item FROM visits"); err != nil || !reusedNote(w) {
		t.Errorf("under another sql_mode: %v, warnings %v", err, w)
	}
}

// TestReuseSameRows: a reused release is the first one, row for row, for
// every kind of release; dp_reuse = OFF makes a new, charged one.
func TestReuseSameRows(t *testing.T) {
	e, g := newReuseEngine(t)
	for _, q := range []string{
		"SELECT DISTINCT item, g FROM visits ORDER BY item, g",
		"SELECT item, COUNT(*) AS n, AVG(g) AS a FROM visits GROUP BY item ORDER BY item",
		"SELECT UPPER(item) AS u, COUNT(*) FROM visits GROUP BY UPPER(item) ORDER BY u",
		"SELECT DP_SET_UNION(item, user_id) AS a, DP_SET_UNION(CONCAT(item, g), user_id) AS b FROM visits",
		"SELECT * FROM DP_NGRAMS('mydb.visits', 'item', 'user_id', 'max_n=1') ORDER BY ngram",
	} {
		before := len(g.charged)
		r1, w1, err := session(t, e, "SET dp_contribution_bounds = '0,2'", q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		r2, w2, err := session(t, e, "SET dp_contribution_bounds = '0,2'", q)
		if err != nil {
			t.Fatal(err)
		}
		if reusedNote(w1) || !reusedNote(w2) || len(g.charged) == before {
			t.Errorf("%s: warnings %v then %v, charges %d", q, w1, w2, len(g.charged)-before)
		}
		charged := len(g.charged)
		if flat(r1) != flat(r2) || len(r1) == 0 {
			t.Errorf("%s: reused rows differ or are empty:\n%s\n%s", q, flat(r1), flat(r2))
		}
		if len(g.charged) != charged {
			t.Errorf("%s: the reused release was charged", q)
		}
		_, w3, err := session(t, e, "SET dp_contribution_bounds = '0,2'", "SET dp_reuse = OFF", q)
		if err != nil || reusedNote(w3) || len(g.charged) == charged {
			t.Errorf("%s with dp_reuse = OFF: %v, warnings %v, charged %d", q, err, w3, len(g.charged)-charged)
		}
	}
}
