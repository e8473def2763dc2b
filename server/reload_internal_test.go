package server

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/server/config"
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

// TestDSNFileWarning: a DSN file others may read is reported, one only its
// owner may read is not.
func TestDSNFileWarning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pg.dsn")
	if err := os.WriteFile(path, []byte("postgres://u:p@h/db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Dataset{Database: "shop", Table: "t", Source: &config.Source{Driver: "postgres", DSNFile: path}}
	if w := dsnFileWarning(cfg); !strings.Contains(w, "chmod 600") || strings.Contains(w, "u:p") {
		t.Errorf("mode 0644: %q", w)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if w := dsnFileWarning(cfg); w != "" {
		t.Errorf("mode 0600: %q", w)
	}
}
