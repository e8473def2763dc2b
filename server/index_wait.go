package server

import "context"

// WaitIndexBuilds blocks until every release index build under way has
// ended, or ctx ends (release.Indexes.WaitBuilds). A build runs outside the
// statement that started it and may outlive it (a client that left, a
// killed statement), so a caller that counts the server's goroutines after
// a statement waits for the builds first.
func (g *Governed) WaitIndexBuilds(ctx context.Context) error {
	return g.indexes.WaitBuilds(ctx)
}
