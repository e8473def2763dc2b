package beamdp

import (
	"fmt"
	"testing"

	"github.com/dpsql/dpsql/beam/internal/skewed"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// TestStatsComplete checks that the statistics of a release are exact
// whatever the runner does with its bundles. Prism splits a bundle that
// makes no visible progress for two of its 100 ms ticks (a shard's policy
// runs in one call; any stage stalls on a busy machine) and runs the parts
// at once; statistics read from Beam metrics then lost whole parts
// (TestParallelMatchesCore once saw "counter says 97 released, file has
// 320"). Several releases, parallel and sharded, run on 120,000 users in
// one pipeline, twice; each one's statistics must equal the core's
// statistics of the input and its released count the lines of its file.
func TestStatsComplete(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 20 s pipeline test")
	}
	dir := t.TempDir()
	glob, want, rows, err := skewed.Write(dir, 4, 120_000)
	if err != nil {
		t.Fatal(err)
	}
	wantStats := Stats{Rows: rows, Occurrences: want.Occurrences, Users: int64(want.Users), Pairs: want.Pairs, DistinctItems: int64(want.DistinctItems)}
	var branches []branch
	for _, c := range []struct {
		m      setunion.Mechanism
		shards int
	}{{setunion.PolicyGaussianL2, 2}, {setunion.PolicyGaussianL2, 3}, {setunion.GreedyFrequency, 2}, {setunion.GreedyFrequency, 4},
		{setunion.PolicyLaplace, 2}, {setunion.PolicyLaplace, 3}, {setunion.WeightedGaussian, 1}, {setunion.DPSIPS, 1}} {
		o := setunion.Defaults()
		o.Mechanism = c.m
		branches = append(branches, branch{name: fmt.Sprintf("%s-S%d", c.m, c.shards), cfg: Config{Options: o, Shards: c.shards, CountDistinctItems: true}})
	}
	for rep := range 2 {
		res := runBranches(t, Input{Glob: glob, UserColumn: 1, ItemColumn: 2}, branches)
		for _, b := range branches {
			got := res[b.name].stats
			w := wantStats
			w.Released = int64(len(res[b.name].items))
			got.Rows = rows // not in the branch's namespace
			if got != w {
				t.Errorf("run %d, %s: statistics %+v, want %+v", rep, b.name, got, w)
			}
		}
	}
}
