// Package progress prints status lines while a long operation runs: nothing
// for the first two seconds, then one line a second, and a closing line if
// any was printed. The batch commands, the data loader and the benchmark
// share it.
package progress

import (
	"fmt"
	"io"
	"time"
)

// Reporter prints the status of one operation until stopped.
type Reporter struct {
	stop, done chan struct{}
}

// Start reports what status returns, prefixed by label, to w (nothing if w
// is nil). status is called from another goroutine.
func Start(w io.Writer, label string, status func() string) *Reporter {
	r := &Reporter{stop: make(chan struct{}), done: make(chan struct{})}
	if w == nil {
		close(r.done)
		return r
	}
	start := time.Now()
	go func() {
		defer close(r.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		printed := false
		for {
			select {
			case <-r.stop:
				if printed {
					fmt.Fprintf(w, "%s: %s, done in %.1fs\n", label, status(), time.Since(start).Seconds())
				}
				return
			case <-t.C:
				if time.Since(start) >= 2*time.Second {
					fmt.Fprintf(w, "%s: %s (%.0fs)\n", label, status(), time.Since(start).Seconds())
					printed = true
				}
			}
		}
	}()
	return r
}

// Stop ends the reporting; no line is printed after it returns. Calling it
// again is harmless.
func (r *Reporter) Stop() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// Bytes formats a byte count (KiB, MiB, GiB).
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
