package progress

import (
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestQuietWhenShort(t *testing.T) {
	var b syncBuf
	r := Start(&b, "job", func() string { return "x" })
	r.Stop()
	r.Stop()
	if b.String() != "" {
		t.Errorf("printed %q for a short job", b.String())
	}
	Start(nil, "job", func() string { return "x" }).Stop()
}

func TestReportsLongJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("waits two seconds")
	}
	var b syncBuf
	r := Start(&b, "job", func() string { return "half" })
	// The first line is due after two seconds; a loaded machine may run
	// the reporter's goroutine late, so wait for the line itself (up to a
	// minute) rather than a fixed time.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(b.String(), "job: half (") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	r.Stop()
	out := b.String()
	if !strings.Contains(out, "job: half (") || !strings.Contains(out, "job: half, done in") {
		t.Errorf("output %q", out)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{5: "5 B", 2048: "2.0 KiB", 3 << 20: "3.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
