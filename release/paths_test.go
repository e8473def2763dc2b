package release

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"

	"github.com/dpsql/dpsql/release/sealed"
)

// userCtx returns a context of a session of account user.
func userCtx(user string, id uint32) *sql.Context {
	s := sql.NewBaseSessionWithClientServer("test", sql.Client{User: user, Address: "localhost"}, id)
	return sql.NewContext(context.Background(), sql.WithSession(s))
}

// TestIndexesPerAccount: an expression's index is the account's own. B's
// first release of an expression A has indexed builds B's own (the path
// is the same as without A's); B's builds and evictions never drop A's
// index; each account's reservations stay within its quota.
func TestIndexesPerAccount(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	tbl := randomTable(t, r, false)
	a, b := userCtx("alice", 1), userCtx("bob", 2)
	scanOf := func(ctx *sql.Context, key sql.Expression) *Scan {
		_, s := scanPairsIn(t, ctx, tbl, key, nil, false, sealed.Limits{})
		return s
	}
	lower := function.NewLower(column(tbl, "s"))
	upper := function.NewUpper(column(tbl, "s"))
	bound, ok := exprIndexBound(tbl, "uid", lower, sealed.Limits{})
	if !ok {
		t.Fatal("no bound")
	}
	// Room for one reservation per account.
	ix := NewIndexes((bound+4096)*3/2*exprShare*2, t.Logf)
	ix.Govern(2)
	xa, ok := scanOf(a, lower).Indexed(a, ix, 0)
	if !ok {
		t.Fatal("alice: no index")
	}
	xb, ok := scanOf(b, lower).Indexed(b, ix, 0)
	if !ok || xb == xa {
		t.Fatalf("bob read alice's index (ok=%v)", ok)
	}
	// bob's next expression evicts bob's own index, not alice's.
	if _, ok := scanOf(b, upper).Indexed(b, ix, 0); !ok {
		t.Fatal("bob: no index of upper")
	}
	if again, ok := scanOf(a, lower).Indexed(a, ix, 0); !ok || again != xa {
		t.Fatal("bob's build evicted alice's index")
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for acct, used := range ix.exprUsed {
		if used > ix.quota() {
			t.Errorf("account %s holds %d bytes, over its quota %d", acct, used, ix.quota())
		}
	}
	if n := len(ix.entries); n != 2 {
		t.Errorf("%d entries, want alice's lower and bob's upper", n)
	}
}

// TestIndexesPrebuilt: on the governed server a release never builds a
// column's index or a corpus (whether one is warm would show that another
// analyst asked for it); the server's own builds (Prebuild) make them, and
// releases read them once built.
func TestIndexesPrebuilt(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	tbl := randomTable(t, r, false)
	ctx := userCtx("alice", 1)
	ix := NewIndexes(1<<30, t.Logf)
	ix.Govern(1)
	_, col := scanPairs(t, tbl, "s", nil, false)
	if _, ok := col.IndexedPairs(ctx, ix, 0, DistinctView); ok || len(ix.entries) != 0 {
		t.Fatal("a release built a column's index")
	}
	ix.Prebuild([]PrebuildTable{{DB: "db", Name: "t", Table: tbl, UnitCol: "uid"}})
	<-ix.Prebuilt()
	if _, ok := col.IndexedPairs(ctx, ix, 0, DistinctView); !ok {
		t.Fatal("no column index after Prebuild")
	}
	if p := ix.Paths(); p.Index != 1 || p.Scan != 1 {
		t.Fatalf("paths %+v, want one scan then one index", p)
	}
	ix.Close()
}
