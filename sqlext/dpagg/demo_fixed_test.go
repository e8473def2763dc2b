package dpagg

import (
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/dpsql/dpsql/server/demo"
	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestDemoFixedCountBounds runs the default COUNT(*) release of the demo's
// words (integration's TestDemoTopWordsAccuracy: ε = 1, δ = 1e-6, every
// bound chosen, the same seeds) with the chosen (Δ0_a, m) replaced by fixed
// values after the choice's tests ran, and logs the median relative error
// of the 20 most frequent words: how close the real release comes to the
// oracle's valley (docs/accuracy.md §5, "Fifth look") if the choice landed
// there, i.e. what any choice rule could reach with this bounding. Run with
// DPSQL_ORACLE=1 (and DPSQL_FIXED="16:32,16:23,…" to pick the cells).
func TestDemoFixedCountBounds(t *testing.T) {
	if os.Getenv("DPSQL_ORACLE") == "" {
		t.Skip("set DPSQL_ORACLE=1 for the real release at fixed (Δ0_a, m) on the demo")
	}
	users, words := demoWordRows(t)
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
	cells := [][2]int{{16, 23}, {16, 32}, {32, 16}}
	if v := os.Getenv("DPSQL_FIXED"); v != "" {
		cells = nil
		for _, f := range splitComma(v) {
			var a, b int
			for i := range f {
				if f[i] == ':' {
					a, _ = strconv.Atoi(f[:i])
					b, _ = strconv.Atoi(f[i+1:])
				}
			}
			cells = append(cells, [2]int{a, b})
		}
	}
	defer func() { fixedCountBounds = nil }()
	for _, cell := range cells {
		fixedCountBounds = &cell
		const seeds = 10
		var mean float64
		var meds []float64
		for s := range seeds {
			o := Defaults()
			o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
			o.Aggregates = []Aggregate{{Kind: CountRows}}
			p, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]Value, 1)
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
			for i, w := range top {
				rel[i] = math.Abs(got[w]-truth[w]) / truth[w]
			}
			slices.Sort(rel)
			m := (rel[9] + rel[10]) / 2
			meds = append(meds, m)
			mean += m / seeds
			if s == 0 {
				t.Logf("(Δ0_a, m) = %v, seed 0: %s", cell, res.Chosen)
			}
		}
		slices.Sort(meds)
		t.Logf("(Δ0_a, m) = %v fixed after the choice: median relative error, mean over 10 seeds %.3f, range [%.3f, %.3f]", cell, mean, meds[0], meds[len(meds)-1])
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// demoWordRows returns the demo's words table as (user, word) rows.
func demoWordRows(t *testing.T) (users, words []string) {
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
