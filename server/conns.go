package server

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dolthub/vitess/go/mysql"
)

// connGuard keeps connections within Limits: a connection must
// authenticate within HandshakeTimeout; at most MaxPendingHandshakes wait
// for it (the oldest is closed to admit a new one, so that a flood of idle
// sockets cannot lock legitimate clients out); authenticated connections
// are at most MaxConnections, AdminConnections of them kept for
// administrators, and MaxConnectionsPerAccount per account.
type connGuard struct {
	lim     Limits
	isAdmin func(user string) bool

	mu      sync.Mutex
	pending []*guardedConn // not authenticated, oldest first
	byAddr  map[string]*guardedConn
	authed  int
	perUser map[string]int
}

func newConnGuard(lim Limits, isAdmin func(string) bool) *connGuard {
	if isAdmin == nil {
		isAdmin = func(string) bool { return false }
	}
	return &connGuard{lim: lim, isAdmin: isAdmin, byAddr: map[string]*guardedConn{}, perUser: map[string]int{}}
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

// guardedConn is a connection of a connGuard. Until it authenticates, its
// deadlines cannot be later than the handshake deadline.
type guardedConn struct {
	net.Conn
	g        *connGuard
	deadline time.Time
	authed   atomic.Bool
	user     string
	closed   sync.Once
}

// accept registers c as pending, closing the oldest pending connection
// beyond MaxPendingHandshakes.
func (g *connGuard) accept(c net.Conn) *guardedConn {
	gc := &guardedConn{Conn: c, g: g, deadline: time.Now().Add(g.lim.HandshakeTimeout)}
	_ = c.SetDeadline(gc.deadline)
	var evict *guardedConn
	g.mu.Lock()
	g.pending = append(g.pending, gc)
	g.byAddr[c.RemoteAddr().String()] = gc
	if len(g.pending) > g.lim.MaxPendingHandshakes {
		evict = g.pending[0]
	}
	g.mu.Unlock()
	if evict != nil {
		evict.Close()
	}
	time.AfterFunc(g.lim.HandshakeTimeout, func() {
		if !gc.authed.Load() {
			gc.Close()
		}
	})
	return gc
}

// authenticated is called when user authenticated on the connection from
// addr: it counts the connection, or refuses it (MySQL error 1040 or 1203)
// when it would exceed a limit.
func (g *connGuard) authenticated(addr net.Addr, user string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	gc := g.byAddr[addr.String()]
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

// SetDeadline implements net.Conn, keeping the handshake deadline.
func (c *guardedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }

// SetReadDeadline implements net.Conn, keeping the handshake deadline.
func (c *guardedConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }

// SetWriteDeadline implements net.Conn, keeping the handshake deadline.
func (c *guardedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }

func (c *guardedConn) clamp(t time.Time) time.Time {
	if c.authed.Load() {
		return t
	}
	if t.IsZero() || t.After(c.deadline) {
		return c.deadline
	}
	return t
}

// Close implements net.Conn and releases the connection's place.
func (c *guardedConn) Close() error {
	c.closed.Do(func() {
		g := c.g
		g.mu.Lock()
		if c.authed.Load() {
			g.authed--
			if g.perUser[c.user]--; g.perUser[c.user] <= 0 {
				delete(g.perUser, c.user)
			}
		} else {
			g.removePending(c)
		}
		if g.byAddr[c.RemoteAddr().String()] == c {
			delete(g.byAddr, c.RemoteAddr().String())
		}
		g.mu.Unlock()
	})
	return c.Conn.Close()
}
