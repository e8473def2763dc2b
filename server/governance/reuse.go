package governance

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/ledger"
)

// Scope says whose earlier releases a request may reuse.
type Scope string

const (
	// ScopeAnalyst: an analyst reuses only their own releases.
	ScopeAnalyst Scope = "analyst"
	// ScopeDatabase: an analyst reuses the releases of every analyst with
	// a budget on the same database. The analysts of a database then pool
	// their releases: what one of them learns is bounded by the sum of the
	// budgets of those whose releases they reuse, not by their own budget
	// alone (post-processing holds for the group); a reuse Note also tells
	// an analyst that someone ran the same release, and when.
	ScopeDatabase Scope = "database"
)

// Reuse configures release reuse (release.Reuser): an identical release
// request within Window of the original is answered with the stored result,
// at no charge, marked as reused (a Note, and DP_AUDIT).
//
// Identical means: the same release specification (release.ReuseKey.Spec:
// the table, the bound filter and keys, the evaluation settings and the
// mechanism's options in full — not the statement's text, so that ORDER BY,
// LIMIT, aliases and whitespace above a release do not matter), the same
// table version (its load generation and privacy unit) and the same scope:
// the same analyst, or with ScopeDatabase any analyst with a budget on the
// database. Every input of this decision is independent of the protected
// rows, so reuse is post-processing of the stored release (see package
// release, "Release reuse", and server/ledger's reuse.go).
type Reuse struct {
	Enabled bool
	// Window is how long after the original a release may be reused (> 0
	// when Enabled).
	Window time.Duration
	// Scope is ScopeAnalyst ("" means ScopeAnalyst) or ScopeDatabase.
	Scope Scope
}

// DefaultReuse is what a configuration without a reuse section gets:
// enabled, for 24 hours, per analyst.
func DefaultReuse() Reuse { return Reuse{Enabled: true, Window: 24 * time.Hour, Scope: ScopeAnalyst} }

func (r Reuse) validate() error {
	if !r.Enabled {
		return nil
	}
	if r.Window <= 0 {
		return fmt.Errorf("governance: release reuse needs a window > 0, got %v", r.Window)
	}
	switch r.Scope {
	case "", ScopeAnalyst, ScopeDatabase:
		return nil
	}
	return fmt.Errorf("governance: release reuse scope must be %q or %q, got %q", ScopeAnalyst, ScopeDatabase, r.Scope)
}

// reuseKey is the ledger key of the release of reqs (one release node), or
// nil when it cannot be reused: reuse off, no specification, or requests
// that do not share one table and specification. It hashes the scope, the
// table, its version and the specification, each length-prefixed.
func (g *Governor) reuseKey(ctx *sql.Context, reqs []release.Request) []byte {
	if !g.reuse.Enabled || len(reqs) == 0 {
		return nil
	}
	first := reqs[0]
	if first.Reuse.Spec == "" {
		return nil
	}
	for _, r := range reqs[1:] {
		if r.Reuse != first.Reuse || !strings.EqualFold(r.Database, first.Database) || !strings.EqualFold(r.Table, first.Table) {
			return nil
		}
	}
	version, ok := g.version(first.Database, first.Table)
	if !ok {
		return nil
	}
	scope := "database"
	if g.reuse.Scope != ScopeDatabase {
		scope = "analyst " + User(ctx)
	}
	h := sha256.New()
	for _, part := range []string{"dpsql release reuse 1", scope, strings.ToLower(first.Database), strings.ToLower(first.Table), version, first.Reuse.Spec} {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(part)))])
		h.Write([]byte(part))
	}
	return h.Sum(nil)
}

// reusable reports whether r, a request of a governed session, would be
// answered from a stored release now (advisory, like Check).
func (g *Governor) reusable(ctx *sql.Context, r release.Request) bool {
	_, ok := g.storedFor(ctx, r)
	return ok
}

// storedFor returns the stored release that would answer r now, if any
// (advisory: it changes nothing).
func (g *Governor) storedFor(ctx *sql.Context, r release.Request) (ledger.Stored, bool) {
	if r.Reuse.Fresh {
		return ledger.Stored{}, false
	}
	key := g.reuseKey(ctx, []release.Request{r})
	if key == nil {
		return ledger.Stored{}, false
	}
	s, ok, err := g.ledger.Lookup(key, User(ctx), r.Database, g.reuse.Window)
	return s, err == nil && ok && len(s.Charges) > 0
}

// ChargeOrReuse implements release.Reuser. For a governed session and a
// reusable release it answers reqs from the release stored under their key
// (recording the reuse in the audit trail, charging nothing) unless the
// statement asks for a new one (dp_reuse = OFF); otherwise it charges every
// request as Charge does and returns a Reuse that stores the result. The
// bounds of every request are checked first either way, so a request the
// configuration refuses is refused whether or not it could be reused.
func (g *Governor) ChargeOrReuse(ctx *sql.Context, reqs []release.Request) (*release.Reuse, error) {
	if !g.Governed(ctx) {
		return &release.Reuse{}, nil
	}
	for _, r := range reqs {
		if err := g.bounds.check(r); err != nil {
			return nil, err
		}
	}
	key := g.reuseKey(ctx, reqs)
	end := func() {}
	if key != nil && !reqs[0].Reuse.Fresh {
		var err error
		if end, err = g.join(ctx, string(key)); err != nil {
			return nil, err
		}
		done, err := g.enter()
		if err != nil {
			end()
			return nil, err
		}
		s, ok, err := g.ledger.Reuse(background(ctx), key, User(ctx), reqs[0].Database, g.reuse.Window, meta(ctx, reqs[0]))
		done()
		if err != nil {
			end()
			return nil, chargeError(err)
		}
		if ok && len(s.Charges) > 0 {
			end()
			return &release.Reuse{Data: s.Data, At: s.Time, Seq: s.Charges[0].Seq}, nil
		}
	}
	stored, err := g.chargeAll(ctx, reqs)
	if err != nil {
		end()
		return nil, err
	}
	return &release.Reuse{End: end, Store: g.storer(ctx, key, stored)}, nil
}

var _ release.Reuser = (*Governor)(nil)

// flight is a new reusable release being made: identical requests wait for
// it (join) and then reuse what it stored, instead of being charged for a
// second, identical release.
type flight struct {
	done    chan struct{}
	session uint32
}

// join waits until no other session makes the release of key, then makes
// this request the one that does; end, called once the release has ended
// (release.Reuse.Done), lets the next waiter look for the stored result.
// A request of the session that is making it already (two identical
// releases of one statement that the statement's memo did not merge) does
// not wait, which would never end. Whether a request waits depends on other
// requests and the clock only: like reuse itself, nothing of the protected
// rows.
func (g *Governor) join(ctx *sql.Context, key string) (end func(), err error) {
	var sess uint32
	if ctx.Session != nil {
		sess = ctx.Session.ID()
	}
	for {
		g.flightMu.Lock()
		f := g.flights[key]
		switch {
		case f == nil:
			f = &flight{done: make(chan struct{}), session: sess}
			if g.flights == nil {
				g.flights = map[string]*flight{}
			}
			g.flights[key] = f
			g.flightMu.Unlock()
			var once sync.Once
			return func() {
				once.Do(func() {
					g.flightMu.Lock()
					if g.flights[key] == f {
						delete(g.flights, key)
					}
					g.flightMu.Unlock()
					close(f.done)
				})
			}, nil
		case f.session == sess:
			g.flightMu.Unlock()
			return func() {}, nil
		}
		g.flightMu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// chargeAll charges reqs in order and returns the record a stored release
// keeps of them (its time and database are the first charge's).
func (g *Governor) chargeAll(ctx *sql.Context, reqs []release.Request) (ledger.Stored, error) {
	stored := ledger.Stored{Analyst: User(ctx)}
	for _, r := range reqs {
		rec, err := g.charge(ctx, r)
		if err != nil {
			return stored, err
		}
		if stored.Time.IsZero() {
			stored.Time, stored.Database = rec.Time, rec.Balance.Database
		}
		stored.Charges = append(stored.Charges, ledger.StoredCharge{
			Seq: rec.Seq, Function: r.Function, Table: r.Table, Mechanism: r.Mechanism, Epsilon: r.Epsilon, Delta: r.Delta,
		})
	}
	return stored, nil
}

// storer returns the function that keeps a release's data under key with
// the charges in stored, or nil when nothing is to be kept (no key, or no
// charge).
func (g *Governor) storer(ctx *sql.Context, key []byte, stored ledger.Stored) func([]byte) error {
	if key == nil || len(stored.Charges) == 0 {
		return nil
	}
	return func(data []byte) error {
		done, err := g.enter()
		if err != nil {
			return err
		}
		defer done()
		stored.Data = data
		return g.ledger.Keep(background(ctx), key, stored, g.reuse.Window)
	}
}
