package batch

import (
	"os"
	"runtime/debug"

	"github.com/dpsql/dpsql/internal/hugeheap"
)

// batchGCPercent is the collector's target for a batch command that asks
// for huge pages, unless GOGC is set: a huge page is resident as a whole,
// which raised the peak RSS of `dpsql union` on git_python_ecosystem by
// about 2.5 MiB; collecting at 80 % growth instead of 100 % takes it back
// for no measurable CPU (docs/performance.md, 27 November 2026).
const batchGCPercent = 80

// batchHeap prepares the Go heap of a batch command that runs once and
// exits: huge pages for the heap (package hugeheap) and a collector target
// that keeps the peak memory where it was with 4 KiB pages. Call the
// returned function when the command is done.
func batchHeap() (done func()) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(batchGCPercent)
	}
	return hugeheap.Start(hugeheap.DefaultPremap)
}
