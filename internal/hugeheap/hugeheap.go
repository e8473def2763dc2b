// Package hugeheap asks Linux to back the Go heap of a short batch process
// with transparent huge pages (THP), where the system gives them only to
// memory that asks (THP mode "madvise", the common default).
//
// Why: `dpsql union` touches about 40 MiB of fresh heap once, and each 4 KiB
// page costs a page fault, about 7–9 µs on a virtual machine: 11 % of the
// run's CPU went to 13,700 faults (docs/performance.md). A 2 MiB huge page is
// one fault, and it also covers 512 times as much memory per TLB entry, which
// the random probes of the interners' tables and the users' lists feel. Go
// gave its heap huge pages by madvise in Go 1.21.0 and stopped in 1.21.1,
// because a long-lived server's RSS grew when the kernel collapsed sparse
// regions; a batch command that exits after a second does not meet that.
//
// How: the Go heap is anonymous memory the runtime maps in steps of at
// least 4 MiB (one mmap each, a new mapping that does not inherit an
// earlier madvise). Start maps premap bytes up front (one transient
// allocation, freed by the next collection), marks every heap mapping
// MADV_HUGEPAGE, and then, every period, marks the mappings the heap grew
// into since. Memory touched before a mapping was marked keeps its 4 KiB
// pages. The advice changes no byte the program reads, only how the
// kernel backs the pages; a kernel without THP, or in mode "always" or
// "never", is left alone.
//
// Cost: a 2 MiB page is resident as a whole once touched, so the resident
// set can grow by the unused part of the last huge pages of the heap; the
// caller weighs that against the CPU (docs/performance.md). Use it only in
// a process that exits soon, never in the server.
package hugeheap

import "time"

// DefaultPremap is the heap mapped and marked before the first allocation
// that needs it. Memory the heap grows into later is marked only after
// its first pages were touched, and those keep 4 KiB pages: with 16 MiB
// mapped up front, `dpsql union` on git_python_ecosystem (a peak heap of
// about 35 MiB) still took 4,100 page faults on one core; with 32 MiB,
// 1,800–3,100, for 2–5 % less CPU and a peak RSS 3.5 MiB lower (48 MiB
// did no better). The runtime
// zeroes the memory it reuses, and all of the premapped memory counts as
// reused once the transient allocation is freed, so mapping far more than
// the heap will use only costs zeroing.
const DefaultPremap = 32 << 20

// period is how often Start's goroutine looks for heap growth: a growth
// is usually used for tens of milliseconds before it is full.
const period = 2 * time.Millisecond

// Start marks the Go heap for huge pages now and as it grows, until stop is
// called, if the system gives huge pages on request (see the package doc);
// otherwise it does nothing. premap bytes of heap are mapped first (0:
// none). stop waits for the goroutine to end; the marks stay.
func Start(premap int) (stop func()) {
	return start(premap)
}
