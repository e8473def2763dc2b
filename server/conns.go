package server

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/netutil"
)

// connGuard keeps connections within Limits: a connection must
// authenticate within HandshakeTimeout; at most MaxPendingHandshakes wait
// for it (the oldest is closed to admit a new one, so that a flood of idle
// sockets cannot lock legitimate clients out); authenticated connections
// are at most MaxConnections, AdminConnections of them kept for
// administrators, and MaxConnectionsPerAccount per account.
//
// The guard keeps a record per connection but hands vitess the accepted
// connection itself: go-mysql-server notices a client that disconnects
// during a query only on a *net.TCPConn (optionally in vitess's
// ConnWithTimeouts), and cancels the query then. The record is released
// when vitess reports the connection closed (closeHandler) or the guard
// closes it.
type connGuard struct {
	lim     Limits
	isAdmin func(user string) bool

	mu      sync.Mutex
	pending []*guardedConn // not authenticated, oldest first
	conns   map[net.Conn]*guardedConn
	authed  int
	perUser map[string]int
}

func newConnGuard(lim Limits, isAdmin func(string) bool) *connGuard {
	if isAdmin == nil {
		isAdmin = func(string) bool { return false }
	}
	return &connGuard{lim: lim, isAdmin: isAdmin, conns: map[net.Conn]*guardedConn{}, perUser: map[string]int{}}
}

// guardedListener accepts connections for a connGuard. Unlike the listener
// of vitess, which stops accepting for good on the first error (a process
// out of file descriptors stopped serving), it retries temporary errors
// with a backoff.
type guardedListener struct {
	net.Listener
	g *connGuard
}

func (l *guardedListener) Accept() (net.Conn, error) {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || !retryable(err) {
				return nil, err
			}
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		return l.g.accept(c), nil
	}
}

// retryable reports whether an Accept error is temporary (too many open
// files, a connection reset before it was accepted, a timeout).
func retryable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

// guardedConn is the guard's record of one connection.
type guardedConn struct {
	net.Conn
	g        *connGuard
	start    time.Time // accepted
	host     string    // the client's address, without its port
	deadline time.Time
	authed   atomic.Bool
	user     string
	released sync.Once
}

// accept registers c as pending and returns c itself. Beyond
// MaxPendingHandshakes in all, it closes one pending connection (see
// evictee): one of c's address when that address holds more than
// MaxPendingHandshakesPerAddress, so that a flood from one address cannot
// take every place from the others; else any. Below MaxPendingHandshakes
// nothing is closed (a connection pool opening 40 connections at once from
// one host is served).
func (g *connGuard) accept(c net.Conn) net.Conn {
	now := time.Now()
	gc := &guardedConn{Conn: c, g: g, start: now, deadline: now.Add(g.lim.HandshakeTimeout), host: hostOf(c.RemoteAddr())}
	_ = c.SetDeadline(gc.deadline)
	var evict *guardedConn
	g.mu.Lock()
	g.pending = append(g.pending, gc)
	g.conns[c] = gc
	sameHost := 0
	for _, p := range g.pending {
		if p.host == gc.host {
			sameHost++
		}
	}
	if len(g.pending) > g.lim.MaxPendingHandshakes {
		evict = g.evictee(gc, g.lim.MaxPendingHandshakesPerAddress > 0 && sameHost > g.lim.MaxPendingHandshakesPerAddress)
	}
	g.mu.Unlock()
	if evict != nil {
		evict.close()
	}
	time.AfterFunc(g.lim.HandshakeTimeout, func() {
		if !gc.authed.Load() {
			gc.close()
		}
	})
	return c
}

// evictee chooses the pending connection to close when newest is one too
// many (among those of its address when sameHost): the oldest whose client
// has not answered the greeting yet (a flood's idle socket), else newest
// itself, so that logins in progress are not evicted. Where the TCP state
// cannot be read, the oldest. A login that has not answered yet can still
// be evicted by a burst from its own address (with "oldest first", an
// unpaced flood of ~10,000/s evicted most logins in progress; a burst from
// another address now leaves them alone: max_pending_handshakes_per_address).
// Call with g.mu held.
func (g *connGuard) evictee(newest *guardedConn, sameHost bool) *guardedConn {
	for _, p := range g.pending[:len(g.pending)-1] {
		if sameHost && p.host != newest.host {
			continue
		}
		spoke, ok := peerSpoke(p.Conn)
		if !ok {
			return p
		}
		if !spoke {
			return p
		}
	}
	return newest
}

// hostOf is the IP of a remote address (the address itself when it has no
// port).
func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// rawConn returns the connection vitess was given for c. vitess wraps it
// in netutil.ConnWithTimeouts when read or write timeouts are configured,
// and replaces it by a *tls.Conn over that when the client asks for TLS
// (mysql.Listener.handle): both are unwrapped, or a TLS connection would be
// unknown to the guard — never counted against the connection limits, and
// closed by the handshake timer however long after authentication.
func rawConn(c *mysql.Conn) net.Conn {
	conn := c.Conn
	for {
		switch w := conn.(type) {
		case netutil.ConnWithTimeouts:
			conn = w.Conn
		case *tls.Conn:
			conn = w.NetConn()
		default:
			return conn
		}
	}
}

// authenticated is called when user authenticated on c: it counts the
// connection, or refuses it (MySQL error 1040 or 1203) when it would exceed
// a limit.
func (g *connGuard) authenticated(c *mysql.Conn, user string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	gc := g.conns[rawConn(c)]
	if gc == nil {
		return nil // not one of ours (a listener given by an embedder)
	}
	admin := g.isAdmin(user)
	switch {
	case g.authed >= g.lim.MaxConnections:
		return mysql.NewSQLError(mysql.ERConCount, "08004", "Too many connections: %d are open (limits.max_connections in the server's configuration)", g.authed)
	case !admin && g.authed >= g.lim.MaxConnections-g.lim.AdminConnections:
		return mysql.NewSQLError(mysql.ERConCount, "08004", "Too many connections: the remaining %d are kept for administrators (limits.max_connections, limits.admin_connections in the server's configuration)", g.lim.MaxConnections-g.authed)
	case g.perUser[user] >= g.lim.MaxConnectionsPerAccount:
		return mysql.NewSQLError(mysql.ERTooManyUserConnections, "42000", "User '%s' already has %d connections (limits.max_connections_per_account in the server's configuration)", user, g.perUser[user])
	}
	g.removePending(gc)
	gc.user = user
	gc.authed.Store(true)
	g.authed++
	g.perUser[user]++
	_ = gc.Conn.SetDeadline(time.Time{})
	return nil
}

func (g *connGuard) removePending(gc *guardedConn) {
	for i, p := range g.pending {
		if p == gc {
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			return
		}
	}
}

// closed releases the record of c, which vitess closed.
func (g *connGuard) closed(c *mysql.Conn) {
	g.mu.Lock()
	gc := g.conns[rawConn(c)]
	g.mu.Unlock()
	if gc != nil {
		gc.release()
	}
}

// release gives back the connection's place, once.
func (c *guardedConn) release() {
	c.released.Do(func() {
		g := c.g
		g.mu.Lock()
		defer g.mu.Unlock()
		if c.authed.Load() {
			g.authed--
			if g.perUser[c.user]--; g.perUser[c.user] <= 0 {
				delete(g.perUser, c.user)
			}
		} else {
			g.removePending(c)
		}
		if g.conns[c.Conn] == c {
			delete(g.conns, c.Conn)
		}
	})
}

// close closes the connection and releases its place.
func (c *guardedConn) close() {
	c.release()
	_ = c.Conn.Close()
}

// closeHandler tells the guard when vitess is done with a connection.
type closeHandler struct {
	mysql.Handler
	g *connGuard
}

func (h closeHandler) ConnectionClosed(c *mysql.Conn) {
	h.g.closed(c)
	h.Handler.ConnectionClosed(c)
}
