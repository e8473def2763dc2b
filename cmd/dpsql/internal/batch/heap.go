package batch

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/dpsql/dpsql/internal/hugeheap"
)

// batchGCPercent is the collector's target for a batch command that asks
// for huge pages, unless GOGC is set: a huge page is resident as a whole,
// which raised the peak RSS of `dpsql union` on git_python_ecosystem by
// about 2 MiB; collecting at 60 % growth instead of 100 % takes it back,
// for 12 collections instead of 9 and about 1 % more CPU
// (docs/performance.md, 27 November 2026). At 80 % the peak was still
// 0–2 MiB above main's in sets of 10 runs.
const batchGCPercent = 60

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

// collectAfterReading runs a collection after a batch command has read and
// grouped its input, before the release. The blocks and batches of the
// reading phase are garbage by then, and the release's allocations (its
// histograms and orders) reuse their memory instead of growing the heap
// towards the collector's next target, which is where the peak RSS of
// `dpsql union` was: 1–2.6 MiB lower with it in sets of 8 runs, for one
// collection of the grouped lists (docs/performance.md, 27 November 2026).
func collectAfterReading() { runtime.GC() }
