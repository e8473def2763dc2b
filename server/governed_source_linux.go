//go:build linux

package server

import (
	"fmt"
	"os"
	"syscall"
)

// fileIdentity is the file's path, device, inode, modification and change
// times (the change time cannot be set back by tools that copy times, such
// as cp -p, tar or rsync).
func fileIdentity(path string, fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Sprintf("%q mtime %d", path, fi.ModTime().UnixNano())
	}
	return fmt.Sprintf("%q dev %d inode %d mtime %d ctime %d", path, st.Dev, st.Ino,
		fi.ModTime().UnixNano(), st.Ctim.Sec*1e9+st.Ctim.Nsec)
}
