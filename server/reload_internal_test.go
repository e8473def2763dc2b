package server

import (
	"io"
	"strings"
	"testing"
)

// TestMemoryCheck: a load is stopped with an error naming the limit and the
// fix once the process holds more than limits.max_memory_bytes; no limit,
// no check.
func TestMemoryCheck(t *testing.T) {
	ds := newDatasets(nil, io.Discard, 1)
	err := ds.memoryCheck(65536)
	if err == nil || !strings.Contains(err.Error(), "out of memory") || !strings.Contains(err.Error(), "limits.max_memory_bytes") {
		t.Errorf("over the limit: %v", err)
	}
	if err := newDatasets(nil, io.Discard, 0).memoryCheck(65536); err != nil {
		t.Errorf("no limit: %v", err)
	}
	if err := newDatasets(nil, io.Discard, 1<<50).memoryCheck(65536); err != nil {
		t.Errorf("far below the limit: %v", err)
	}
}
