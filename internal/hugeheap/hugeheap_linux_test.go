package hugeheap

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// TestStartMarksHeap checks that after Start, on a system in THP mode
// "madvise", the mapping that holds a new heap object is marked for huge
// pages ("hg" in its VmFlags), both one mapped up front and one the heap
// grew into later, and that nothing outside the heap's span is.
func TestStartMarksHeap(t *testing.T) {
	mode, err := os.ReadFile(modeFile)
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		t.Skipf("THP mode is not madvise: %q", mode)
	}
	stop := Start(DefaultPremap)
	defer stop()
	early := make([]byte, 1<<20)
	if !marked(t, uintptr(unsafe.Pointer(&early[0]))) {
		t.Errorf("the premapped heap is not marked for huge pages")
	}
	// Grow the heap well past the premap and wait for the watcher.
	var keep [][]byte
	for range 12 {
		keep = append(keep, make([]byte, 4<<20))
	}
	late := keep[len(keep)-1]
	for range 500 {
		if marked(t, uintptr(unsafe.Pointer(&late[0]))) {
			break
		}
		runtime.Gosched()
		sleep()
	}
	if !marked(t, uintptr(unsafe.Pointer(&late[0]))) {
		t.Errorf("heap mapped after Start is not marked for huge pages")
	}
	runtime.KeepAlive(keep)
}

// marked reports whether the mapping of /proc/self/smaps that holds addr
// has the VmFlag hg (MADV_HUGEPAGE).
func marked(t *testing.T, addr uintptr) bool {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for line := range bytes.Lines(smaps) {
		if lo, hi, ok := bounds(line); ok {
			in = lo <= addr && addr < hi
			continue
		}
		if in && bytes.HasPrefix(line, []byte("VmFlags:")) {
			return bytes.Contains(line, []byte(" hg"))
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return false
}

func bounds(line []byte) (lo, hi uintptr, ok bool) {
	f := bytes.Fields(line)
	if len(f) < 5 {
		return 0, 0, false
	}
	r := bytes.IndexByte(f[0], '-')
	if r < 0 {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(string(f[0][:r]), 16, 64)
	e, err2 := strconv.ParseUint(string(f[0][r+1:]), 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}

func TestAnonRW(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{"2de2800000-2de3000000 rw-p 00000000 00:00 0 \n", true},
		{"2de0000000-2de2800000 ---p 00000000 00:00 0 \n", false},
		{"4521f000-45240000 rw-p 00000000 00:00 0                                  [heap]\n", false},
		{"02a50000-04167000 rw-p 02650000 fe:00 10543682                           /tmp/dpsql\n", false},
	} {
		lo, hi, ok := anonRW([]byte(c.line))
		if ok != c.ok {
			t.Errorf("anonRW(%q) ok = %v, want %v", c.line, ok, c.ok)
		}
		if ok && fmt.Sprintf("%x-%x", lo, hi) != "2de2800000-2de3000000" {
			t.Errorf("anonRW(%q) = %x-%x", c.line, lo, hi)
		}
	}
}

func sleep() { <-time.After(period) }
