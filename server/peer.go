package server

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/netutil"
)

// peerPoll is how often a running statement checks that its client is
// still connected.
const peerPoll = 500 * time.Millisecond

// tcpConn returns the TCP connection beneath c (vitess's timeouts and TLS
// unwrapped).
func tcpConn(c net.Conn) (*net.TCPConn, bool) {
	for {
		switch x := c.(type) {
		case *net.TCPConn:
			return x, true
		case netutil.ConnWithTimeouts:
			c = x.Conn
		case *tls.Conn:
			c = x.NetConn()
		default:
			return nil, false
		}
	}
}

// cancelOnDisconnect cancels the statement of c when its client closes the
// connection: go-mysql-server's own check covers neither TLS connections
// nor the time a statement spends before its first row (a private release
// is computed then), so every statement is watched here, from start to
// end, until ctx is done.
func cancelOnDisconnect(ctx context.Context, c *mysql.Conn, cancel context.CancelFunc) {
	if _, ok := peerClosed(c.Conn); !ok {
		return
	}
	go func() {
		t := time.NewTicker(peerPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if closed, ok := peerClosed(c.Conn); !ok || closed {
				if closed {
					cancel()
				}
				return
			}
		}
	}()
}
