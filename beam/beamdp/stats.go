package beamdp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func init() {
	register.DoFn4x1[context.Context, int, func(*[]byte) bool, func(*[]byte) bool, error](&writeStatsFn{})
}

// Stats describes the input and output of a release. Like the core's
// setunion.Stats it is exact, and for the operator who holds the data,
// never for an analyst: it is not differentially private.
type Stats struct {
	// Rows is the number of input rows ReadRows read, rows without a
	// privacy unit included and headers excluded (0 when the input did not
	// come from ReadRows).
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

// The names of the partial counts in a statistics PCollection.
const (
	statRows          = "rows"
	statOccurrences   = "occurrences"
	statUsers         = "users"
	statPairs         = "pairs"
	statDistinctItems = "distinct_items"
	statReleased      = "released"
)

// emitStat emits the partial count *n under name, if it is not 0, and
// resets it: the DoFns count in fields during a bundle and emit in
// FinishBundle, so that a statistic costs one element per bundle.
func emitStat(stat func(string, int64), name string, n *int64) {
	if *n != 0 {
		stat(name, *n)
		*n = 0
	}
}

// add adds the partial count v of the statistic name to st.
func (st *Stats) add(name string, v int64) {
	switch name {
	case statRows:
		st.Rows += v
	case statOccurrences:
		st.Occurrences += v
	case statUsers:
		st.Users += v
	case statPairs:
		st.Pairs += v
	case statDistinctItems:
		st.DistinctItems += v
	case statReleased:
		st.Released += v
	}
}

// StatsName is the name of the file WriteStats writes for the output
// prefix of a release: PREFIX-stats.json.
func StatsName(prefix string) string { return prefix + "-stats.json" }

// WriteStats writes the statistics of a release to the file path (any Beam
// filesystem) as one JSON object, the fields of Stats. parts are the
// statistics PCollections of ReadRows and Union (KV<string, int64> partial
// counts); their sum is the file's content.
//
// The statistics are part of the pipeline's output, computed from the same
// elements as the release and written by the pipeline itself, so the file
// is complete whenever the pipeline succeeded. (Beam metrics are not: a
// runner may report them late, partially or not at all — prism v2.77.0
// loses counts when it splits a bundle — and the Beam model makes no
// promise for them.)
//
// The partial counts reach the writer through a join (gather), not as a
// side input, so the file holds their whole sum.
func WriteStats(s beam.Scope, path string, parts ...beam.PCollection) {
	s = s.Scope("beamdp.WriteStats")
	filesystem.ValidateScheme(path)
	blocks := beam.ParDo(s, &statBlocksFn{}, beam.Flatten(s, parts...))
	beam.ParDo0(s, &writeStatsFn{Path: path}, gather(s, blocks))
}

// writeStatsFn sums the gathered statistics blocks and writes the sums.
type writeStatsFn struct {
	Path string `json:"path"`
}

func (fn *writeStatsFn) ProcessElement(ctx context.Context, _ int, _ func(*[]byte) bool, blocks func(*[]byte) bool) error {
	var st Stats
	if err := eachBlock(blocks, st.addBlock); err != nil {
		return err
	}
	return writeFile(ctx, fn.Path, func(w *bufio.Writer) error { return json.NewEncoder(w).Encode(st) })
}

// ReadStats reads the statistics WriteStats wrote to path, after the
// pipeline has finished.
func ReadStats(ctx context.Context, path string) (Stats, error) {
	var st Stats
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return st, err
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, path)
	if err != nil {
		return st, fmt.Errorf("reading the statistics: %w", err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return st, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s is not a statistics file of WriteStats: %w", path, err)
	}
	return st, nil
}
