package release

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitBuilds: WaitBuilds returns only once a build under way has
// ended, or with the context's error while it runs.
func TestWaitBuilds(t *testing.T) {
	ix := NewIndexes(1<<20, nil)
	finish := make(chan struct{})
	build := func() (any, int64, string, error) {
		<-finish
		return nil, 0, "", errors.New("not built")
	}
	if e := ix.entry(indexKey{db: "d", table: "t", unit: "u", key: "k"}, 1, "d.t.k", 0, startBuild(build)); e == nil {
		t.Fatal("no build started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := ix.WaitBuilds(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitBuilds during a build: %v, want the context's deadline", err)
	}
	close(finish)
	if err := ix.WaitBuilds(context.Background()); err != nil {
		t.Fatalf("WaitBuilds: %v", err)
	}
	var none *Indexes
	if err := none.WaitBuilds(ctx); err != nil {
		t.Fatalf("nil Indexes: %v", err)
	}
}
