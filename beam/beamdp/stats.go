package beamdp

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
)

// Stats describes the input and output of a release, from the pipeline's
// counters. Like the core's setunion.Stats it is exact, and for the operator
// who holds the data, never for an analyst.
type Stats struct {
	// Rows is the number of input rows ReadRows read (0 when the input did
	// not come from ReadRows).
	Rows int64 `json:"rows"`
	// Occurrences is the number of (user, item) pairs with a non-empty
	// privacy unit, duplicates included (for text, the tokens).
	Occurrences int64 `json:"occurrences"`
	// Users is the number of distinct privacy units.
	Users int64 `json:"users"`
	// Pairs is the number of distinct (user, item) pairs.
	Pairs int64 `json:"pairs"`
	// DistinctItems is the number of distinct items (for the parallel
	// mechanisms only with Config.CountDistinctItems; 0 otherwise).
	DistinctItems int64 `json:"distinct_items"`
	// Released is the number of released items.
	Released int64 `json:"released"`
}

// StatsOf reads the counters of the Union and ReadRows named name
// (Config.Name, Input.Name; "" for DefaultName) from a finished pipeline. Runners that do not report
// committed metrics are read through their attempted values.
func StatsOf(pr beam.PipelineResult, name string) Stats {
	if name == "" {
		name = DefaultName
	}
	var st Stats
	res := pr.Metrics().Query(func(r metrics.SingleResult) bool { return r.Namespace() == name })
	for _, c := range res.Counters() {
		v := c.Result()
		switch c.Name() {
		case "rows":
			st.Rows += v
		case "occurrences":
			st.Occurrences += v
		case "users":
			st.Users += v
		case "pairs":
			st.Pairs += v
		case "distinct_items":
			st.DistinctItems += v
		case "released":
			st.Released += v
		}
	}
	return st
}
