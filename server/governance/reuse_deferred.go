package governance

import (
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release"
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
		stored, err := g.chargeAll(ctx, reqs) // reuse.go
		if err != nil {
			return err
		}
		u.Store = g.storer(ctx, key, stored)
		return nil
	}
	return u, charge, nil
}

var _ release.DeferredReuser = (*Governor)(nil)
