package governance

import (
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/ledger"
)

// ReuseOrDefer implements release.DeferredReuser: ChargeOrReuse in two
// steps, for releases that read their data before they are charged (a
// push-down release charges only once its source has answered). It answers
// reqs from a stored release as ChargeOrReuse does; otherwise it returns a
// new Reuse (holding, like ChargeOrReuse's, the reuse key's flight, so
// that identical requests wait for this one) and charge, which charges
// every request as ChargeOrReuse would and makes Reuse.Keep store the
// result. A caller that never calls charge ends the release with
// Reuse.Done, having charged nothing. The bounds of every request are
// checked first, as ChargeOrReuse does.
func (g *Governor) ReuseOrDefer(ctx *sql.Context, reqs []release.Request) (*release.Reuse, func() error, error) {
	none := func() error { return nil }
	if !g.Governed(ctx) {
		return &release.Reuse{}, none, nil
	}
	for _, r := range reqs {
		if err := g.bounds.check(r); err != nil {
			return nil, nil, err
		}
	}
	key := g.reuseKey(ctx, reqs)
	end := func() {}
	if key != nil && !reqs[0].Reuse.Fresh {
		var err error
		if end, err = g.join(ctx, string(key)); err != nil {
			return nil, nil, err
		}
		done, err := g.enter()
		if err != nil {
			end()
			return nil, nil, err
		}
		s, ok, err := g.ledger.Reuse(background(ctx), key, User(ctx), reqs[0].Database, g.reuse.Window, meta(ctx, reqs[0]))
		done()
		if err != nil {
			end()
			return nil, nil, chargeError(err)
		}
		if ok && len(s.Charges) > 0 {
			end()
			return &release.Reuse{Data: s.Data, At: s.Time, Seq: s.Charges[0].Seq}, none, nil
		}
	}
	u := &release.Reuse{End: end}
	charge := func() error {
		stored := ledger.Stored{Analyst: User(ctx)}
		for _, r := range reqs {
			rec, err := g.charge(ctx, r)
			if err != nil {
				return err
			}
			if stored.Time.IsZero() {
				stored.Time, stored.Database = rec.Time, rec.Balance.Database
			}
			stored.Charges = append(stored.Charges, ledger.StoredCharge{
				Seq: rec.Seq, Function: r.Function, Table: r.Table, Mechanism: r.Mechanism, Epsilon: r.Epsilon, Delta: r.Delta,
			})
		}
		if key != nil && len(stored.Charges) > 0 {
			u.Store = func(data []byte) error {
				done, err := g.enter()
				if err != nil {
					return err
				}
				defer done()
				stored.Data = data
				return g.ledger.Keep(background(ctx), key, stored, g.reuse.Window)
			}
		}
		return nil
	}
	return u, charge, nil
}

var _ release.DeferredReuser = (*Governor)(nil)
