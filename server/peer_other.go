//go:build !linux

package server

import "net"

// peerClosed is not implemented outside Linux: a statement whose client
// went away runs until it ends or max_execution_time.
func peerClosed(net.Conn) (closed, ok bool) { return false, false }
