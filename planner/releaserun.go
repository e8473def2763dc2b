package planner

import (
	"math/rand/v2"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// The Release node's parts of release.Run: how its rows are read (a sealed
// scan, the release index, or a push-down source: pushdown.go) and which
// mechanism releases them (set union per builder, or the dpagg pipeline).
// release.Run owns the order: charge or reuse, read, mechanism, keep.

// run makes the release (release.Run) and turns the released set into
// rows. A new and a reused release give the same core form
// (release.Released), so a reused answer is the first one, bit for bit.
func (r *Release) run(ctx *sql.Context) ([]sql.Row, error) {
	if err := r.fillPublic(ctx); err != nil { // public data only, before any charge
		return nil, err
	}
	s := release.Steps{What: "private release", Gov: r.gov, Requests: r.requests(ctx), Check: r.checkStored}
	if r.push != nil {
		s.ReadFirst, s.ReadFailed = true, r.pushSourceFailed // pushdown.go
	}
	var err error
	if r.mode == aggregateRows {
		err = r.aggregateSteps(&s)
	} else {
		err = r.setSteps(&s)
	}
	if err != nil {
		return nil, err
	}
	core, err := release.Run(ctx, s)
	if err != nil {
		return nil, err
	}
	return r.rows(ctx, core)
}

// rows turns a released set into the node's rows.
func (r *Release) rows(ctx *sql.Context, core release.Released) ([]sql.Row, error) {
	switch r.mode {
	case setUnions:
		row := make(sql.Row, len(core.Sets))
		for i, items := range core.Sets {
			arr := make([]any, len(items))
			for j, s := range items {
				arr[j] = s
			}
			row[i] = types.JSONDocument{Val: arr}
		}
		return []sql.Row{row}, nil
	case aggregateRows:
		rows, err := r.aggregateRows(ctx, core.Rows)
		if err == nil && len(rows) == 0 {
			r.noteNoKey(ctx) // global.go
		}
		return rows, err
	}
	released := core.Sets[0] // sorted by encoded key
	rows := make([]sql.Row, 0, len(released))
	keys := make(sql.Row, r.scan.Keys())
	for _, k := range released {
		if err := decodeKey(ctx, r.scan, r.scan.Keys(), k, keys); err != nil {
			return nil, err
		}
		row := make(sql.Row, len(r.out))
		for i, ki := range r.out {
			if ki >= 0 { // -1: a hidden column, NULL
				row[i] = keys[ki]
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		r.noteNoKey(ctx) // global.go
	}
	return rows, nil
}

// checkStored checks that a reused release has the shape this node
// releases (release.Steps.Check).
func (r *Release) checkStored(core release.Released) error {
	switch r.mode {
	case distinctRows:
		if len(core.Sets) != 1 {
			return release.ErrWrongShape
		}
	case setUnions:
		if len(core.Sets) != len(r.calls) {
			return release.ErrWrongShape
		}
	case aggregateRows:
		for _, row := range core.Rows {
			if n := len(r.aggValue); len(row.Values) != n && len(row.Values) != 3*n { // 3n: with intervals (interval.go)
				return release.ErrWrongShape
			}
		}
	}
	return nil
}

// newRand returns the release's random source (seeded in tests).
func (r *Release) newRand() *rand.Rand {
	if r.rnd == nil {
		return securerand.New()
	}
	return r.rnd()
}

// setSteps fills s for a DISTINCT or DP_SET_UNION node: one builder per
// release, read from the index, a scan or the push-down source, released
// one after the other. Options that make no builder fail before anything
// is charged.
func (r *Release) setSteps(s *release.Steps) error {
	opts := r.options()
	builders := make([]*setunion.Builder, len(opts))
	for i, o := range opts {
		b, err := setunion.NewBuilder(o)
		if err != nil {
			return err
		}
		builders[i] = b
	}
	if r.push != nil {
		s.Read = r.pushSetsRead(builders) // pushdown.go
	} else {
		s.Read = func(ctx *sql.Context) error { return r.readSets(ctx, opts, builders) }
	}
	s.Mechanism = func(ctx *sql.Context) (release.Released, error) {
		core := release.Released{Sets: make([][]string, len(builders))}
		for i, b := range builders {
			// ReleaseContext stops at max_execution_time, KILL or a
			// client that left (dp_sips with many rounds runs for
			// seconds).
			res, err := b.ReleaseContext(ctx, r.newRand())
			if err != nil {
				return release.Released{}, err
			}
			core.Sets[i] = res.Items
		}
		return core, nil
	}
	return nil
}

// readSets fills the builders: a release that reads whole plain columns
// takes their grouped pairs from the release index (the same pairs, so the
// same release; see release.Indexes); the others scan.
func (r *Release) readSets(ctx *sql.Context, opts []setunion.Options, builders []*setunion.Builder) error {
	switch {
	case r.fromIndexes(ctx, opts, builders):
		return nil
	case r.mode == setUnions:
		units := make([]unitCache, len(builders))
		return r.scan.Run(ctx, func(row *release.Row) {
			for i, b := range builders {
				if item, ok := row.KeyText(i); ok {
					b.AddID(units[i].id(b, row.Unit()), item)
				}
			}
		})
	}
	enc := keyEncoder{n: r.scan.Keys()}
	var unit unitCache
	var kbuf []byte
	return r.scan.Run(ctx, func(row *release.Row) {
		var ok bool
		if kbuf, ok = enc.encode(kbuf[:0], row); ok {
			builders[0].AddID(unit.id(builders[0], row.Unit()), kbuf)
		}
	})
}

// aggregateSteps fills s for a release of DP aggregates: each row's group
// key and values go into the dpagg pipeline (one pass, or two when the
// clamping bounds are chosen privately: aggscan.go, pushdown.go), which
// then releases. A pipeline that cannot be made fails before anything is
// charged.
func (r *Release) aggregateSteps(s *release.Steps) error {
	pipe, err := dpagg.New(r.aggOpts)
	if err == nil {
		err = r.setPublicKeys(pipe) // publickeys.go
	}
	if err != nil {
		return err
	}
	if r.push != nil {
		s.Read, s.Mechanism = r.pushAggregateSteps(pipe) // pushdown.go
		return nil
	}
	var rand *rand.Rand
	s.Read = func(ctx *sql.Context) error {
		rand = r.newRand()
		return r.readAggregates(ctx, pipe, rand) // aggscan.go
	}
	s.Mechanism = func(ctx *sql.Context) (release.Released, error) {
		return r.releasePipe(ctx, pipe, rand, withIntervals) // interval.go
	}
	return nil
}

// releasePipe releases pipe's groups with rand, tells the analyst which
// bounds were chosen privately (noteChosen), and returns the released rows
// in the core form, each with values(row) as its values.
func (r *Release) releasePipe(ctx *sql.Context, pipe *dpagg.Pipeline, rand *rand.Rand, values func(dpagg.Row) []float64) (release.Released, error) {
	res, err := pipe.ReleaseContext(ctx, rand)
	if err != nil {
		return release.Released{}, err
	}
	r.noteChosen(ctx, pipe, res)
	core := release.Released{Rows: make([]release.ReleasedRow, len(res.Rows))}
	for i, rr := range res.Rows {
		core.Rows[i] = release.ReleasedRow{Key: rr.Key, Values: values(rr)}
	}
	return core, nil
}
