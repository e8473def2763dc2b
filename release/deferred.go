package release

import "github.com/dolthub/go-mysql-server/sql"

// DeferredReuser is implemented by governors that can look a release up
// for reuse without charging it, and charge it later: ReuseOrDefer answers
// reqs from a stored release, or returns a new Reuse and the function that
// charges them. A push-down release uses it to charge only once its source
// has answered completely (docs/privacy.md, push-down section).
type DeferredReuser interface {
	ReuseOrDefer(ctx *sql.Context, reqs []Request) (*Reuse, func() error, error)
}

// ReuseOrDefer is ChargeOrReuse in two steps (DeferredReuser): it answers
// reqs from a stored release (adding the Note NoteReused), or returns a new
// Reuse and charge, which the caller calls once it has read its data and
// before it releases anything. A governor without DeferredReuser is
// charged by charge as Charge does (nothing is stored for reuse); a nil
// gov charges nothing. The caller ends a new release with Reuse.Done,
// charged or not.
func ReuseOrDefer(ctx *sql.Context, gov Governor, reqs []Request) (u *Reuse, charge func() error, err error) {
	if gov == nil {
		return &Reuse{}, func() error { return nil }, nil
	}
	dr, ok := gov.(DeferredReuser)
	if !ok {
		return &Reuse{}, func() error { return Charge(ctx, gov, reqs) }, nil
	}
	u, charge, err = dr.ReuseOrDefer(ctx, reqs)
	if err != nil {
		return nil, nil, err
	}
	if u.Reused() && ctx != nil && ctx.Session != nil {
		ctx.Session.Warn(&sql.Warning{Level: "Note", Code: NoteReused, Message: ReusedNote(u.At, u.Seq)})
	}
	return u, charge, nil
}
