package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/demo"
)

// datasetSource describes where a dataset's rows come from, for its load
// generation (governance.ProtectedTable.Source, ledger.LoadGeneration): the
// dataset's configuration (file, format, header, NULL text, columns,
// privacy unit) and the identity of its file as the file system reports it
// (path, device, inode, modification and change times). It never reads the
// file and never includes its size: whether a later start is a new
// generation — which an analyst sees, as a release no longer reused — must
// depend on what an administrator did to the file, not on what it holds.
// It is taken before the file is read, so a file changed while it loads is
// a new generation at the next start.
func datasetSource(d config.Dataset) (string, error) {
	cfg, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(d.File)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", d.QualifiedName(), err)
	}
	return fmt.Sprintf("dataset %s; file %s", cfg, fileIdentity(abs, fi)), nil
}

// demoSource is the source of the embedded demo's tables: synthetic data
// that depends only on the generator.
func demoSource() string {
	return fmt.Sprintf("embedded demo data, generator version %d, default configuration", demo.Version)
}
