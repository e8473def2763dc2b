package planner_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/functions"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// indexEngine serves visits (as the policy tests' fakeGov protects it),
// seeded releases starting from the same seed, with the release indexes
// of ix (nil: none).
func indexEngine(t *testing.T, visits *storage.Table, gov *fakeGov, ix *release.Indexes) *sqle.Engine {
	t.Helper()
	db := storage.NewDatabase("mydb")
	db.AddTable(visits.WithRowCounts(storage.HiddenCounts).WithScanGuard(release.ScanGuard(gov, "mydb", "visits")))
	pro, err := storage.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(0)
	rnd := func() *rand.Rand { seed++; return securerand.NewSeeded(seed) }
	opts := []planner.PolicyOption{planner.WithRand(rnd)}
	if ix != nil {
		opts = append(opts, planner.WithIndexes(ix))
	}
	e, err := engine.New(engine.Config{Provider: pro, Functions: functions.Config{Rand: rnd, Governor: gov, Indexes: ix},
		Rules: planner.PolicyRules(gov, opts...)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// randomVisits returns visits(user_id, item, n, g, note) with Zipf-like items
// (so that some are released), NULLs, empty strings and strings starting
// with 0x00 or 0x01 (the key encoding's special cases), users' rows in
// runs and scattered.
func randomVisits(t *testing.T, r *rand.Rand, textUnits bool) *storage.Table {
	t.Helper()
	ut := storage.BigInt
	if textUnits {
		ut = storage.Text
	}
	b, err := storage.NewTableBuilder("visits", []storage.Column{
		{Name: "user_id", Type: ut}, {Name: "item", Type: storage.Text}, {Name: "n", Type: storage.BigInt}, {Name: "g", Type: storage.BigInt},
		{Name: "note", Type: storage.Text},
	})
	if err != nil {
		t.Fatal(err)
	}
	nUsers := 300 + r.IntN(700)
	for range 1000 + r.IntN(3000) {
		u := int64(r.IntN(nUsers))
		var unit any = u
		if textUnits {
			unit = fmt.Sprintf("u%d", u)
		}
		for range 1 + r.IntN(8) {
			// A spread of frequencies: many items near the threshold,
			// whose release depends on the random source.
			z := int(150 * r.Float64() * r.Float64())
			var item any = fmt.Sprintf("w%d", z)
			switch z {
			case 0:
				item = nil
			case 1:
				item = "\x01w1"
			case 2:
				item = ""
			}
			var n any = int64(z - 2)
			if z == 3 {
				n = nil
			}
			// A text of a few common words for DP_NGRAMS (NULL with item).
			var note any
			if item != nil {
				note = fmt.Sprintf("%s the w%d and w%d", item, z%5, z%3)
			}
			if err := b.Append(unit, item, n, u%3, note); err != nil {
				t.Fatal(err)
			}
		}
	}
	tbl, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestIndexSameReleases: with a fixed seed, releases answered from the
// release index return exactly the rows of the same releases answered by
// scanning, for SELECT DISTINCT, GROUP BY and DP_SET_UNION over text and
// integer columns (NULLs included), sequential and parallel mechanisms,
// and DP_NGRAMS from the n-gram corpus of a column; and the index was
// used.
func TestIndexSameReleases(t *testing.T) {
	queries := []string{
		"SELECT /*+ SET_VAR(dp_epsilon = 1) */ DISTINCT item FROM visits ORDER BY item",
		"SELECT /*+ SET_VAR(dp_epsilon = 1) SET_VAR(dp_mechanism = 'weighted_gaussian') */ DISTINCT item FROM visits ORDER BY item",
		"SELECT /*+ SET_VAR(dp_epsilon = 1) SET_VAR(dp_mechanism = 'count_laplace') SET_VAR(dp_max_items = 2) */ DISTINCT n FROM visits ORDER BY n",
		"SELECT /*+ SET_VAR(dp_epsilon = 1) */ n FROM visits GROUP BY n ORDER BY n",
		"SELECT DP_SET_UNION(item, user_id, 'epsilon=1') FROM visits",
		"SELECT DP_SET_UNION(item, user_id, 'epsilon=1, mechanism=weighted_gaussian, max_items=3'), DP_SET_UNION(n, user_id, 'epsilon=1, mechanism=dp_sips') FROM visits",
		"SELECT DP_SET_UNION(user_id, user_id, 'epsilon=1') FROM visits",
		// A filter on the privacy unit only: from the index, per user.
		"SELECT /*+ SET_VAR(dp_epsilon = 1) */ DISTINCT item FROM visits WHERE user_id <= 200 ORDER BY item",
		"SELECT /*+ SET_VAR(dp_epsilon = 1) SET_VAR(dp_mechanism = 'weighted_gaussian') SET_VAR(dp_max_items = 3) */ DISTINCT item FROM visits WHERE user_id % 3 = 1 ORDER BY item",
		"SELECT DP_SET_UNION(item, user_id, 'epsilon=1, max_items=3') FROM visits WHERE user_id LIKE '%1%' AND user_id IS NOT NULL",
		"SELECT DP_SET_UNION(n, user_id, 'epsilon=1, mechanism=count_gaussian, max_items=2') FROM visits v WHERE v.user_id > 100",
		// An expression key: from the index of the expression.
		"SELECT DP_SET_UNION(LOWER(SUBSTRING_INDEX(note, ' ', 2)), user_id, 'epsilon=1, max_items=20') AS released FROM visits WHERE user_id > 100",
		"SELECT /*+ SET_VAR(dp_epsilon = 1) */ DISTINCT LOWER(item) FROM visits ORDER BY 1",
		"SELECT /*+ SET_VAR(dp_epsilon = 1) */ DISTINCT CONCAT(item, '-', g) AS k FROM visits WHERE user_id % 2 = 0 ORDER BY k",
		// Not from the index (a filter on another column, two keys, an
		// expression among two keys): the same either way, trivially.
		"SELECT /*+ SET_VAR(dp_epsilon = 1) */ DISTINCT item FROM visits WHERE g = 1 ORDER BY item",
		"SELECT /*+ SET_VAR(dp_epsilon = 1) */ DISTINCT item, g FROM visits ORDER BY item, g",
		"SELECT DP_SET_UNION(item, user_id, 'epsilon=1'), DP_SET_UNION(LOWER(item), user_id, 'epsilon=1') FROM visits",
		// DP_NGRAMS: from the n-gram corpus of the column.
		"SELECT ngram, n FROM DP_NGRAMS('mydb.visits', 'note', 'user_id', 'epsilon=1, delta=1e-5, max_n=3') ORDER BY n, ngram",
		"SELECT ngram, n FROM DP_NGRAMS('mydb.visits', 'note', 'user_id', 'epsilon=2, delta=1e-5, max_n=2, mechanism=weighted_gaussian') ORDER BY n, ngram",
		"SELECT ngram FROM DP_NGRAMS('mydb.visits', 'item', 'user_id', 'epsilon=1, delta=1e-5, max_n=1') ORDER BY ngram",
	}
	sameAsScan(t, rand.New(rand.NewPCG(14, 3)), 8, queries, func(_ int, ix *release.Indexes) {
		if ix.Bytes() == 0 {
			t.Fatal("the index was not used")
		}
	})
}

// sameAsScan runs queries as the analyst on random tables (randomVisits,
// drawn from r; trials of them, 2 under -short: one of each kind) through
// two engines, one that scans and one with release indexes, and fails on
// the first statement whose rows differ; check(trial, ix) looks at the
// indexes after each table. It fails if nothing was released at all (the
// comparison would be vacuous).
func sameAsScan(t *testing.T, r *rand.Rand, trials int, queries []string, check func(trial int, ix *release.Indexes)) {
	t.Helper()
	if testing.Short() {
		trials = 2 // the quick lane: one table of each kind (trial%2)
	}
	released := 0
	for trial := range trials {
		visits := randomVisits(t, r, trial%2 == 1)
		ix := release.NewIndexes(1<<30, t.Logf)
		scanned := indexEngine(t, visits, &fakeGov{budget: 1e9}, nil)
		indexed := indexEngine(t, visits, &fakeGov{budget: 1e9}, ix)
		for _, q := range queries {
			want, err := query(t, scanned, "analyst", q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			got, err := query(t, indexed, "analyst", q)
			if err != nil {
				t.Fatalf("%s (index): %v", q, err)
			}
			if flat(got) != flat(want) {
				t.Fatalf("trial %d: %s\nindex: %s\nscan:  %s", trial, q, flat(got), flat(want))
			}
			released += len(flat(want))
		}
		check(trial, ix)
		scanned.Close()
		indexed.Close()
	}
	if released == 0 {
		t.Fatal("nothing released: the comparison is vacuous")
	}
}
