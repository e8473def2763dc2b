package hugeheap

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// heapSpan bounds where Go's heap is looked for: the runtime reserves it
// in 64 MiB-aligned arenas from a random base upward, so a batch
// command's heap mappings lie within heapSpan bytes above the arena of its
// first heap object. Thread stacks and C memory are mapped elsewhere (near
// the top of the address space), so they are not marked: a huge page on a
// thread's stack would cost 2 MiB of resident memory for a few KiB used.
const (
	arenaBytes = 64 << 20
	heapSpan   = 4 << 30
)

// probe is a heap object whose address tells where the heap is.
var probe *[64]byte

// modeFile says the system's THP mode: "[madvise]" when huge pages are
// given only to memory that asks.
const modeFile = "/sys/kernel/mm/transparent_hugepage/enabled"

func start(premap int) (stop func()) {
	mode, err := os.ReadFile(modeFile)
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		return func() {}
	}
	probe = new([64]byte) // a global, so that it is on the heap
	lo := uintptr(unsafe.Pointer(probe)) &^ (arenaBytes - 1)
	a := &adviser{lo: lo, hi: lo + heapSpan, done: map[uintptr]uintptr{}}
	if premap > 0 {
		// A large allocation maps fresh heap without touching it. Once
		// advise has seen its mapping, a collection (of a heap that is
		// still small) frees it, so that the next allocations land in
		// the marked memory rather than above it.
		b := make([]byte, premap)
		a.advise()
		runtime.KeepAlive(b)
		runtime.GC()
	} else {
		a.advise()
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.watch(quit)
	}()
	return func() { close(quit); wg.Wait() }
}

// An adviser marks the anonymous read-write mappings in [lo, hi)
// MADV_HUGEPAGE; done holds those it marked, start → end.
type adviser struct {
	lo, hi uintptr
	done   map[uintptr]uintptr
}

// watch calls advise whenever the runtime's mapped memory grew by 1 MiB
// or more since the last call, until quit is closed.
func (a *adviser) watch(quit <-chan struct{}) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	last := s[0].Value.Uint64()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
		}
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v >= last+1<<20 {
			last = v
			a.advise()
		}
	}
}

// advise marks every mapping of /proc/self/maps in [lo, hi) that is
// anonymous, private and read-write, and not marked before with the same
// bounds. Errors are ignored: the advice is a hint.
func (a *adviser) advise() {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for line := range bytes.Lines(maps) {
		start, end, ok := anonRW(line)
		if !ok || start < a.lo || end > a.hi || a.done[start] == end {
			continue
		}
		a.done[start] = end
		// The raw call takes the bounds as numbers: the range is the
		// runtime's memory, never dereferenced here.
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, end-start, syscall.MADV_HUGEPAGE)
	}
}

// anonRW parses a line of /proc/self/maps, "start-end perms offset dev
// inode [path]", and reports the bounds of an anonymous private read-write
// mapping (inode 0, no path).
func anonRW(line []byte) (start, end uintptr, ok bool) {
	f := bytes.Fields(line)
	if len(f) != 5 || string(f[1]) != "rw-p" || string(f[4]) != "0" {
		return 0, 0, false
	}
	r := bytes.IndexByte(f[0], '-')
	if r < 0 {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(string(f[0][:r]), 16, 64)
	e, err2 := strconv.ParseUint(string(f[0][r+1:]), 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}
