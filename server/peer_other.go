//go:build !linux

package server

import "net"

// peerClosed is not implemented outside Linux: a statement whose client
// went away runs until it ends or max_execution_time.
func peerClosed(net.Conn) (closed, ok bool) { return false, false }

// peerSpoke is not implemented outside Linux: the guard then evicts the
// oldest pending handshake.
func peerSpoke(net.Conn) (spoke, ok bool) { return false, false }
