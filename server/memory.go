package server

import (
	"bufio"
	"context"
	"errors"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/sirupsen/logrus"
)

// memoryGuard keeps the process alive when statements hold too much memory
// at once, which the per-value limits do not bound (an aggregate over many
// values, a sort of big rows, a release over a huge table): every
// memoryPoll it measures the memory the Go runtime holds; above the limit
// it collects the garbage and measures again, and if the process is still
// above it stops the longest-running statement of a governed session (an
// analyst's) with error 1041 naming the limit. It then waits for that
// statement to end and its memory to be collected before it stops another
// (at most memoryGrace), so that one hog costs one statement, not every
// statement that happens to run beside it. Administrators' statements are
// never stopped.
//
// Why the oldest: the Go runtime does not account memory per goroutine, so
// the guard cannot see which statement holds it; a statement that holds
// hundreds of MiB has been accumulating it, so it has been running longer
// than the short statements started meanwhile (measured: GROUP_CONCAT,
// JSON_ARRAYAGG and sorts of big rows were stopped while a concurrent
// analyst's release was served; see integration.TestResourceAttacks).
//
// Memory is a shared resource, not a per-statement one: a statement may be
// stopped because of another's memory, and a release whose scan grows with
// the table may be stopped on a big table and not on a small one (the size
// of the data, like a release's running time, is not protected; see
// docs/deployment.md#the-privacy-guarantee-of-the-server).
type memoryGuard struct {
	limit uint64
	log   *logrus.Logger

	mu      sync.Mutex
	running map[*watched]struct{}
}

// watched is a running statement of a governed session.
type watched struct {
	start  time.Time
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the statement ends
}

const (
	// memoryPoll is how often the guard measures the process's memory.
	memoryPoll = 50 * time.Millisecond
	// memoryGrace is how long the guard waits for a stopped statement to
	// end before it may stop another.
	memoryGrace = 5 * time.Second
)

// errMemory is the cause of a statement stopped by the memory guard.
var errMemory = errors.New("dpsql: statement stopped by the memory guard")

func newMemoryGuard(limit uint64, log *logrus.Logger) *memoryGuard {
	return &memoryGuard{limit: limit, log: log, running: map[*watched]struct{}{}}
}

// watch registers a governed statement; the returned function unregisters
// it (and must be called once, when the statement ends).
func (m *memoryGuard) watch(cancel context.CancelCauseFunc) func() {
	w := &watched{start: time.Now(), cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.running[w] = struct{}{}
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			delete(m.running, w)
			m.mu.Unlock()
			close(w.done)
		})
	}
}

// run polls until ctx is done.
func (m *memoryGuard) run(ctx context.Context) {
	t := time.NewTicker(memoryPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if memoryInUse() <= m.limit {
			continue
		}
		runtime.GC()
		used := memoryInUse()
		if used <= m.limit {
			continue
		}
		w := m.oldest()
		if w == nil {
			continue
		}
		m.log.Warnf("dpsql: %d MiB in use, above limits.max_memory_bytes (%d MiB): stopping the longest-running analyst statement", used>>20, m.limit>>20)
		w.cancel(errMemory)
		select {
		case <-w.done:
		case <-time.After(memoryGrace):
		case <-ctx.Done():
			return
		}
		runtime.GC()
	}
}

// oldest removes and returns the longest-running statement, or nil.
func (m *memoryGuard) oldest() *watched {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n *watched
	for w := range m.running {
		if n == nil || w.start.Before(n.start) {
			n = w
		}
	}
	if n != nil {
		delete(m.running, n)
	}
	return n
}

// memoryError is the error of a statement the guard stopped.
func (m *memoryGuard) memoryError() error {
	return mysql.NewSQLError(mysql.EROutOfResources, "HY000",
		"Out of memory: the statement was stopped because the server holds more than its limit of %d MiB (limits.max_memory_bytes in the server's configuration); try again, or ask for less at once", m.limit>>20)
}

var memorySamples = []metrics.Sample{
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
}

// memoryInUse is the memory the Go runtime holds from the OS and uses:
// everything it mapped but the heap's free and released pages.
func memoryInUse() uint64 {
	s := make([]metrics.Sample, len(memorySamples))
	copy(s, memorySamples)
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	total, released, free := v(0), v(1), v(2)
	if released+free > total {
		return 0
	}
	return total - released - free
}

// DefaultMaxMemory is the memory limit when the configuration sets none:
// 90% of the Go runtime's soft limit (GOMEMLIMIT) when one is set, else
// 70% of the memory the process may use (its cgroup's memory.max, or the
// machine's MemTotal); 0 (no limit) when none of these is known.
func DefaultMaxMemory() uint64 {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		return uint64(l) / 10 * 9
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			return n / 10 * 7
		}
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			if kb, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
				return kb * 1024 / 10 * 7
			}
		}
	}
	return 0
}
