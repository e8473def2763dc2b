//go:build !linux

package server

import (
	"fmt"
	"os"
)

// fileIdentity is the file's path and modification time.
func fileIdentity(path string, fi os.FileInfo) string {
	return fmt.Sprintf("%q mtime %d", path, fi.ModTime().UnixNano())
}
