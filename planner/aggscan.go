package planner

import (
	"fmt"
	"math/rand/v2"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// readAggregates scans the release's rows into pipe: one pass, or two
// when the release chooses clamping bounds privately (the first pass feeds
// the choice, drawn from rand, which fixes how the second clamps). The
// release itself is aggregateSteps' mechanism, with the same rand.
func (r *Release) readAggregates(ctx *sql.Context, pipe *dpagg.Pipeline, rand *rand.Rand) error {
	// A GROUP BY whose aggregates read its one key column alone takes its
	// pairs from the release index (groupindex.go): the same state, so the
	// same release.
	g, indexed := r.groupsFromIndex(ctx)
	if pipe.NeedsValuePass() {
		var err error
		if indexed {
			err = pipe.AddGroupedValues(g)
		} else {
			err = r.scanAggregateRows(ctx, func(_ []byte, row *release.Row, vals []dpagg.Value) {
				_ = pipe.AddValues(row.Unit(), vals)
			})
		}
		if err != nil {
			return err
		}
		if err := pipe.ChooseValueBounds(rand); err != nil {
			return err
		}
	}
	if indexed {
		return pipe.AddGrouped(g)
	}
	return r.scanAggregateRows(ctx, func(key []byte, row *release.Row, vals []dpagg.Value) {
		_ = pipe.Add(row.Unit(), key, vals)
	})
}

// noteChosen tells the analyst, in a Note, which bounds the release chose
// privately (a DP output), if it chose any, and keeps the selection's
// calibration with the chosen Δ0 for noteNoKey.
func (r *Release) noteChosen(ctx *sql.Context, pipe *dpagg.Pipeline, res *dpagg.Result) {
	r.selection = &pipe.Plan().Selection
	if res.Chosen != nil {
		ctx.Session.Warn(&sql.Warning{Level: "Note", Code: mysql.ERUnknownError, Message: fmt.Sprintf(
			"private release on %s.%s: contribution bounds chosen privately from the data (%s); values and rows beyond them were clamped. Set them for exact control: dp_max_groups_contributed, dp_max_rows_per_group, dp_contribution_bounds",
			r.db, r.name, res.Chosen)})
	}
}

// scanAggregateRows runs the release's scan and hands each row's encoded
// group key and aggregate values to add; rows whose key or a value fails
// to evaluate are skipped (a row-wise filter).
func (r *Release) scanAggregateRows(ctx *sql.Context, add func(key []byte, row *release.Row, vals []dpagg.Value)) error {
	enc := keyEncoder{n: r.groupKeys}
	var kbuf []byte
	vals := make([]dpagg.Value, len(r.aggValue))
	return r.scan.Run(ctx, func(row *release.Row) {
		var ok bool
		if kbuf, ok = enc.encode(kbuf[:0], row); !ok {
			return
		}
		if !r.rowValues(row, vals) {
			return // a value failed: the row is skipped
		}
		add(kbuf, row, vals)
	})
}

// rowValues fills vals with the row's aggregate values; ok is false when
// one failed to evaluate or to convert (the row is skipped).
func (r *Release) rowValues(row *release.Row, vals []dpagg.Value) (ok bool) {
	for i, k := range r.aggValue {
		vals[i] = dpagg.Null
		if k < 0 {
			continue
		}
		v, ok := row.Key(k)
		if !ok {
			return false
		}
		if v == nil {
			continue
		}
		if r.aggOpts.Aggregates[i].Kind == dpagg.CountValues {
			vals[i] = dpagg.Float(0) // COUNT(col) counts non-NULL values of any type
			continue
		}
		f, _, err := types.Float64.Convert(row.Context(), v)
		if err != nil {
			return false
		}
		if x, ok := f.(float64); ok {
			vals[i] = dpagg.Float(x)
		}
	}
	return true
}
