package batch

import (
	"runtime"

	"github.com/dpsql/dpsql/internal/hugeheap"
)

// batchHeap prepares the Go heap of a batch command that runs once and
// exits: huge pages for the heap (package hugeheap). Call the returned
// function when the command is done.
func batchHeap() (done func()) {
	return hugeheap.Start(hugeheap.DefaultPremap)
}

// collectAfterReading runs a collection after a batch command has read and
// grouped its input, before the release. The blocks and batches of the
// reading phase are garbage by then, and the release's allocations (its
// histograms and orders) reuse their memory instead of growing the heap
// towards the collector's next target, which is where the peak RSS of
// `dpsql union` was. With huge pages, which are resident as a whole, the
// peak was 0–2 MiB above main's without it and is 3–9 MiB below with it
// (docs/performance.md, 27 November 2026).
func collectAfterReading() { runtime.GC() }
