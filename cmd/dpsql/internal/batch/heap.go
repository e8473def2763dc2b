package batch

import (
	"os"
	"runtime"

	"github.com/dpsql/dpsql/internal/hugeheap"
)

// hugeInputMin is the input file size from which a batch command asks for
// huge pages: below it the heap stays small, and the two collections that
// the huge pages bring (one at the start, one after grouping) cost more
// than the page faults they save (a 2-row input took 70 instead of 49 ms of
// CPU with them).
const hugeInputMin = 1 << 20

// premapPerByte is how much heap is mapped up front per byte of input,
// up to hugeheap.DefaultPremap: git_python_ecosystem.tsv.gz (10 MB of
// gzip) peaks at about 35 MiB of heap.
const premapPerByte = 4

// A batchHeap is the Go heap setup of a batch command that runs once and
// exits (package hugeheap); the zero value does nothing.
type batchHeap struct{ stop func() }

// startBatchHeap asks for huge pages for the heap of a command that reads
// the file input, if it is large enough. Call stop when the command is
// done.
func startBatchHeap(input string) batchHeap {
	fi, err := os.Stat(input)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < hugeInputMin {
		return batchHeap{}
	}
	premap := int(min(fi.Size()*premapPerByte, hugeheap.DefaultPremap))
	return batchHeap{stop: hugeheap.Start(premap)}
}

// done ends the watcher of Start, if any.
func (h batchHeap) done() {
	if h.stop != nil {
		h.stop()
	}
}

// collectAfterReading runs a collection, when the heap has huge pages,
// after a batch command has read and grouped its input, before the
// release. The blocks and batches of the reading phase are garbage by
// then, and the release's allocations (its histograms and orders) reuse
// their memory instead of growing the heap towards the collector's next
// target, which is where the peak RSS of `dpsql union` was. With huge
// pages, which are resident as a whole, the peak was 0–2 MiB above main's
// without it and is 2–11 MiB below with it (docs/performance.md,
// 27 November 2026).
func (h batchHeap) collectAfterReading() {
	if h.stop != nil {
		runtime.GC()
	}
}
