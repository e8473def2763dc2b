package release

import "context"

// WaitBuilds blocks until every index build under way when it is called
// has ended (built, refused, failed or stopped), or until ctx ends, whose
// error it then returns. A build runs in a goroutine of its own, outside
// the statement that started it, and may outlive that statement; callers
// that count goroutines or memory after a statement (tests, an operator's
// shutdown) wait for it here. Builds started after the call are not
// waited for.
func (ix *Indexes) WaitBuilds(ctx context.Context) error {
	if ix == nil {
		return nil
	}
	ix.mu.Lock()
	var pending []chan struct{}
	for _, e := range ix.entries {
		select {
		case <-e.done:
		default:
			pending = append(pending, e.done)
		}
	}
	ix.mu.Unlock()
	for _, done := range pending {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
