package ledger

import (
	"errors"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Group commit
//
// Every charge (ChargeCost), reuse record (Reuse) and stored release (Keep)
// is a bbolt write transaction synced to disk (fdatasync) before the call
// returns. Under concurrent releases most of their cost was the sync, once
// per call. group runs the transactions of callers that arrive while a
// commit is under way together, in one transaction and one sync: the first
// caller to find no commit under way leads, takes every waiting call, runs
// their functions in arrival order inside one bolt.Tx, commits (and syncs),
// and hands each caller its own result; calls that arrived during that
// commit form the next group. A lone call is committed at once (no delay is
// added to wait for company).
//
// Durability: a caller returns only after the commit of the transaction
// that holds its writes has returned, and bbolt's Commit writes the dirty
// pages, then the meta page, syncing each (the ledger never sets NoSync): a
// charge is on disk before ChargeCost returns, hence before the release is
// computed and long before its answer is sent, exactly as with one
// transaction per charge. A crash during a group's commit loses the whole
// group, and none of its callers has returned: no answer left for a charge
// that is not on disk.
//
// Isolation: the functions of a group run one after the other in one
// transaction, each seeing the writes of those before it, so a group is
// equivalent to the same transactions run serially in arrival order (which
// is one of the orders the single writer could have chosen): each budget
// check sees every earlier charge, and no account can be overspent.
//
// A function that fails (a refused charge, a corrupt record, a panic)
// aborts its group's transaction, which changes nothing on disk. It is then
// taken out and run again alone (bolt.DB.Update, as before group commit),
// so its caller gets the error of its own transaction on the ledger as it
// stands; the rest of the group is run again without it. A function may
// therefore run more than once: each must compute everything it returns
// from the transaction it is given (as bolt.DB.Batch requires too).
//
// Privacy: a group is made of whichever statements of any analyst reach the
// ledger at about the same time; what it writes is what those transactions
// wrote one by one (public amounts, the statements' metadata), and whether
// a call shares a commit depends on the timing of other statements, not on
// any protected row.
type group struct {
	db *bolt.DB

	mu      sync.Mutex
	cond    *sync.Cond
	pending []*groupCall
	leading bool // a leader is committing a group

	// commits and calls count the transactions committed and the calls
	// they held (read by tests once the callers have returned).
	commits, calls int
}

// groupCall is one caller's transaction function and, once done, its
// result.
type groupCall struct {
	fn   func(*bolt.Tx) error
	done bool
	solo bool // its function failed in a group: the caller runs it alone
	err  error
}

func newGroup(db *bolt.DB) *group {
	g := &group{db: db}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// update runs fn in a write transaction committed (and synced) before it
// returns, possibly together with the transactions of concurrent callers:
// bolt.DB.Update with group commit. fn may be called more than once.
func (g *group) update(fn func(*bolt.Tx) error) error {
	c := &groupCall{fn: fn}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	for g.leading && !c.done {
		g.cond.Wait()
	}
	if !c.done {
		// Lead: commit every waiting call, this one among them.
		calls := g.pending
		g.pending = nil
		g.leading = true
		g.mu.Unlock()
		g.commit(calls)
		g.mu.Lock()
		for _, d := range calls {
			d.done = true
		}
		g.leading = false
		g.cond.Broadcast()
	}
	g.mu.Unlock()
	if c.solo {
		return g.db.Update(fn)
	}
	return c.err
}

// commit runs calls in one transaction; a call whose function fails is
// marked to run alone and the others are run again without it. It sets
// every call's result; update then marks them done under g.mu, and each
// caller reads its result after that.
func (g *group) commit(calls []*groupCall) {
	g.calls += len(calls)
	for len(calls) > 0 {
		g.commits++
		failed := -1
		err := g.db.Update(func(tx *bolt.Tx) error {
			for i, c := range calls {
				if err := call(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			calls[failed].solo = true
			calls = append(calls[:failed:failed], calls[failed+1:]...)
			continue
		}
		// Success, or an error of bbolt itself (the commit or the sync
		// failed): every call of the group gets it.
		for _, c := range calls {
			c.err = err
		}
		return
	}
}

// errPanic marks a function of a group that panicked; it is then run alone
// in its caller's goroutine, where the panic happens again as it would
// without group commit.
var errPanic = errors.New("ledger: panic in a transaction of a group")

// call runs fn on tx, turning a panic into errPanic so that the leader
// survives another caller's panic.
func call(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	return fn(tx)
}
