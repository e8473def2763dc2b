package integration

import (
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/dpsql/dpsql/server/demo"
	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// demoWords returns the rows (user, word) of the demo's words table.
func demoWords(t *testing.T) (users, words []string) {
	t.Helper()
	db, _, err := demo.New()
	if err != nil {
		t.Fatal(err)
	}
	if users, words, err = demo.WordRows(db); err != nil {
		t.Fatal(err)
	}
	return users, words
}

// TestDemoTopWordsAccuracy measures target (a) of issue 21 with the real
// pipeline on the real demo rows, averaged over 10 seeds (or
// DPSQL_ACCURACY_SEEDS): COUNT(*) of the
// 20 most frequent words of demo.words at the defaults (ε = 1, δ = 1e-6,
// every bound chosen privately), median relative error against the truth.
// The target is 0.10; the test asserts the measured improvement
// over the bounding of 19c6149's parent (uniform Δ0 sample for the
// aggregates: 0.29 on the run) and logs the numbers.
func TestDemoTopWordsAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("ten releases over the demo's 741k rows")
	}
	users, words := demoWords(t)
	truth := map[string]float64{}
	for _, w := range words {
		truth[w]++
	}
	top := make([]string, 0, len(truth))
	for w := range truth {
		top = append(top, w)
	}
	sort.Slice(top, func(a, b int) bool { return truth[top[a]] > truth[top[b]] })
	top = top[:20]
	seeds := 10
	if n, err := strconv.Atoi(os.Getenv("DPSQL_ACCURACY_SEEDS")); err == nil && n > 0 {
		seeds = n // docs/accuracy.md §5, sixth look: 30 seeds
	}
	var meds []float64
	for s := range seeds {
		o := dpagg.Defaults()
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
		o.Aggregates = []dpagg.Aggregate{{Kind: dpagg.CountRows}}
		p, err := dpagg.New(o)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]dpagg.Value, 1)
		for i := range users {
			if err := p.Add([]byte(users[i]), []byte(words[i]), vals); err != nil {
				t.Fatal(err)
			}
		}
		res, err := p.Release(securerand.NewSeeded(uint64(500 + s)))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, r := range res.Rows {
			got[r.Key] = r.Values[0]
		}
		rel := make([]float64, len(top))
		released := 0
		for i, w := range top {
			if _, ok := got[w]; ok {
				released++
			}
			rel[i] = math.Abs(got[w]-truth[w]) / truth[w]
		}
		slices.Sort(rel)
		m := (rel[9] + rel[10]) / 2
		meds = append(meds, m)
		t.Logf("seed %d: median relative error %.3f, %d of the top 20 released (%s)", s, m, released, res.Chosen)
	}
	slices.Sort(meds)
	mean := 0.0
	for _, m := range meds {
		mean += m / float64(seeds)
	}
	t.Logf("COUNT(*) of the 20 most frequent demo words at the defaults: median relative error, mean over %d seeds %.3f, range [%.3f, %.3f] (target 0.10)", seeds, mean, meds[0], meds[seeds-1])
	// 0.172 before the aggregates were composed with the selection in zCDP
	// and counted under a row budget (docs/privacy.md, "COUNT(*) per key"),
	// 0.118 after (these seeds).
	if mean > 0.14 {
		t.Errorf("mean median relative error %.3f: the bounding regressed (0.118 when measured)", mean)
	}
}
