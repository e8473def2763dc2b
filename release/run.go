package release

import (
	"errors"
	"fmt"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

// Steps are the parts of one release that depend on its kind (the
// planner's SELECT DISTINCT, GROUP BY and DP_SET_UNION, DP_NGRAMS, a
// push-down release): how its rows are read and which mechanism releases
// them. Run owns the order in which they happen, for every kind.
type Steps struct {
	// What names the release in errors ("private release", "DP_NGRAMS").
	What string
	// Gov and Requests are the charge (Governor, Request). A nil Gov
	// charges nothing and stores nothing (an ungoverned engine, or a
	// DP_NGRAMS call over an unprotected table).
	Gov      Governor
	Requests []Request
	// Read feeds the release's rows to the mechanism's state: a sealed
	// scan, the release index or corpus (chosen inside Read, after the
	// charge; paths.go), or a push-down source.
	Read func(ctx *sql.Context) error
	// ReadFirst reads before charging (a push-down release): see Run.
	ReadFirst bool
	// ReadFailed, if set, replaces the error of a ReadFirst read that was
	// not stopped by the analyst's limits (nothing is charged then): a
	// push-down source's failure becomes the generic ErrPushdownSource.
	ReadFailed func(err error) error
	// Mechanism releases what Read fed it, in the core form that is
	// stored for reuse.
	Mechanism func(ctx *sql.Context) (Released, error)
	// Check, if set, checks that a stored release has the shape this
	// release makes (a different shape under the same key would be a bug).
	Check func(Released) error
}

// Run makes one release, or answers it from a stored one, in one order
// for every kind of release (docs/privacy.md §12 and §17):
//
//   - a release that scans (ReadFirst false): ChargeOrReuse — a stored
//     release is returned, at no charge, and nothing is read; otherwise
//     every request is charged durably before the first protected row is
//     read (a refused charge reads and releases nothing) — then Read, then
//     Mechanism. A read stopped by the analyst's limits was charged, as
//     any failure after the charge is.
//   - a push-down release (ReadFirst): ReuseOrDefer looks for a stored
//     release without charging; otherwise Read reads the source
//     completely, then the requests are charged, then Mechanism runs. A
//     read that fails charges nothing (ReadFailed says what the analyst is
//     told), except one stopped by the analyst's own limits (ctx done:
//     max_execution_time, KILL, a client that left, the memory guard),
//     which is charged and returns ctx's error: that charge then does not
//     depend on how long the source took, which depends on the data.
//
// A new release is kept for reuse (Reuse.Keep) and then ended
// (Reuse.Done), kept or failed, so that identical requests waiting for it
// go on. Both a new and a stored release are returned in their core form,
// so that callers decode a reused answer as the first one, bit for bit.
func Run(ctx *sql.Context, s Steps) (Released, error) {
	u, charge, err := s.chargeOrDefer(ctx)
	if err != nil {
		return Released{}, err
	}
	if u.Reused() {
		return s.stored(u)
	}
	defer u.Done() // after Keep, or on failure
	if err := s.Read(ctx); err != nil {
		if !s.ReadFirst {
			return Released{}, err
		}
		if cerr := ctx.Err(); cerr != nil {
			// Stopped by the analyst's own limits: charged, as a
			// scanning release is before its scan.
			if err := charge(); err != nil {
				return Released{}, err
			}
			return Released{}, cerr
		}
		if s.ReadFailed != nil {
			err = s.ReadFailed(err)
		}
		return Released{}, err
	}
	if err := charge(); err != nil {
		return Released{}, err
	}
	core, err := s.Mechanism(ctx)
	if err != nil {
		return Released{}, err
	}
	u.Keep(core)
	return core, nil
}

// chargeOrDefer is the first step of Run: ChargeOrReuse, whose charge is
// already made (charge does nothing), or for ReadFirst ReuseOrDefer, whose
// charge is returned for later. A nil Gov charges nothing.
func (s Steps) chargeOrDefer(ctx *sql.Context) (*Reuse, func() error, error) {
	none := func() error { return nil }
	switch {
	case s.Gov == nil:
		return &Reuse{}, none, nil
	case s.ReadFirst:
		return ReuseOrDefer(ctx, s.Gov, s.Requests)
	}
	u, err := ChargeOrReuse(ctx, s.Gov, s.Requests)
	return u, none, err
}

// stored decodes a reused release and checks its shape.
func (s Steps) stored(u *Reuse) (Released, error) {
	var core Released
	err := core.UnmarshalBinary(u.Data)
	if err == nil && s.Check != nil {
		err = s.Check(core)
	}
	if err != nil {
		return Released{}, fmt.Errorf("%s: the stored release of %s (audit record %d) cannot be read (%v); SET dp_reuse = OFF for a new release",
			s.What, u.At.UTC().Format(time.RFC3339), u.Seq, err)
	}
	return core, nil
}

// ErrWrongShape is what a Steps.Check returns for a stored release of
// another shape.
var ErrWrongShape = errors.New("wrong shape")
