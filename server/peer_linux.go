//go:build linux

package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// TCP states of Linux (include/net/tcp_states.h) in which the peer has
// closed its end or the connection is gone.
const (
	tcpClose     = 7
	tcpCloseWait = 8
	tcpLastAck   = 9
)

// peerClosed reports whether the client closed its end of the TCP
// connection c (a FIN or a reset was received), from the socket's TCP state;
// data the client sent before closing (COM_QUIT) does not hide it. ok is
// false when c is not TCP or its state cannot be read.
func peerClosed(c net.Conn) (closed, ok bool) {
	info, ok := tcpInfo(c)
	if !ok {
		return false, false
	}
	switch info.State {
	case tcpClose, tcpCloseWait, tcpLastAck:
		return true, true
	}
	return false, true
}

// peerSpoke reports whether the client of c has sent any byte (for a
// connection still in its handshake: whether it answered the greeting).
func peerSpoke(c net.Conn) (spoke, ok bool) {
	info, ok := tcpInfo(c)
	if !ok {
		return false, false
	}
	return info.Bytes_received > 0, true
}

func tcpInfo(c net.Conn) (*unix.TCPInfo, bool) {
	tc, isTCP := tcpConn(c)
	if !isTCP {
		return nil, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, false
	}
	var info *unix.TCPInfo
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || gerr != nil {
		return nil, false
	}
	return info, true
}
