package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	gms "github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dpsql/dpsql/dpvars"
)

// DefaultAddress is where the server listens unless told otherwise: the
// loopback interface only, since the local server has no accounts.
const DefaultAddress = "127.0.0.1:3306"

// MySQLVersion is the server version reported in the handshake and by
// @@version (go-mysql-server's defaults disagree with each other).
const MySQLVersion = "8.0.33"

// ServerConfig configures NewServer.
type ServerConfig struct {
	// Address to listen on (host:port); DefaultAddress if empty.
	Address string
	// Listener, if set, is used instead of listening on Address (tests
	// pass a listener on 127.0.0.1:0).
	Listener net.Listener
	// DefaultDatabase is the current database of a connection that names
	// none (empty: none).
	DefaultDatabase string
	// DefaultDatabaseFor, when set, gives the current database of a
	// connection that names none, by user name (overriding
	// DefaultDatabase; "" for none).
	DefaultDatabaseFor func(user string) string
	// TLSConfig enables TLS (needed for caching_sha2_password logins);
	// nil: no TLS.
	TLSConfig *tls.Config
	// RequireSecureTransport refuses connections without TLS.
	RequireSecureTransport bool
	// Limits bound statements, accounts and connections (zero fields:
	// DefaultLimits; MaxExecutionTime applies to governed users only).
	Limits Limits
	// Governed reports whether a user's statements are bounded in time
	// (analysts); nil: none are.
	Governed func(user string) bool
	// IsAdmin reports whether a user may use the connections kept for
	// administrators; nil: nobody.
	IsAdmin func(user string) bool
	// ConnReadTimeout closes connections idle that long and also bounds the
	// time to the next row of a result (0: no limit, the default, since a
	// release computes before its first row).
	ConnReadTimeout time.Duration
	// VersionComment is @@version_comment (default "dpsql").
	VersionComment string
	// LoginHint is appended to the message of every refused login (1045)
	// on a connection without TLS, for every user alike: it must say
	// nothing about any one account (for example: "accounts that use
	// caching_sha2_password log in only over TLS").
	LoginHint string
	// LoginThrottle is the back-off of failed logins (zero fields:
	// DefaultLoginThrottle); nil: none (the governed server always sets
	// one, from its configuration's login_throttle).
	LoginThrottle *LoginThrottle
	// ServerPaths are directories and files of the server that governed
	// users' error messages must not show (replaced by "<server path>").
	ServerPaths []string
}

// Server is a MySQL-protocol server around an engine.
type Server struct {
	s    *gms.Server
	e    *sqle.Engine
	addr string
	// stopMemory stops the memory guard (nil without one).
	stopMemory context.CancelFunc
}

// NewServer prepares a server for e; Start runs it. The dp_* variables are
// registered (before the first session exists) and @@version and
// @@version_comment are set, process-wide.
func NewServer(e *sqle.Engine, cfg ServerConfig) (*Server, error) {
	dpvars.RegisterSystemVariables()
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	if cfg.Listener != nil {
		cfg.Address = cfg.Listener.Addr().String()
	}
	comment := cfg.VersionComment
	if comment == "" {
		comment = "dpsql"
	}
	if err := sql.SystemVariables.AssignValues(map[string]any{
		"version":         MySQLVersion,
		"version_comment": comment,
	}); err != nil {
		return nil, err
	}
	if cfg.RequireSecureTransport && cfg.TLSConfig == nil {
		return nil, fmt.Errorf("server: RequireSecureTransport needs a TLSConfig")
	}
	lim := cfg.Limits.WithDefaults()
	var ic gms.InterceptorChain
	guard := newStatementGuard(lim, cfg.Governed, nil)
	guard.paths = newPathScrubber(cfg.ServerPaths)
	ic.WithInterceptor(guard)
	ic.WithInterceptor(bigQuerySyntax{}) // bigquery.go
	gcfg := gms.Config{
		Protocol:               "tcp",
		Address:                cfg.Address,
		Listener:               cfg.Listener,
		Version:                MySQLVersion,
		ConnReadTimeout:        cfg.ConnReadTimeout,
		TLSConfig:              cfg.TLSConfig,
		RequireSecureTransport: cfg.RequireSecureTransport,
		// Unknown user names are refused like wrong passwords (1045);
		// connections are kept within the limits.
		ProtocolListenerFactory: listenerFactory(newConnGuard(lim, cfg.IsAdmin), cfg.LoginHint, newThrottle(cfg.LoginThrottle)),
		Options:                 []gms.Option{ic.Option()},
	}
	defaultDB := cfg.DefaultDatabaseFor
	if defaultDB == nil {
		defaultDB = func(string) string { return cfg.DefaultDatabase }
	}
	s, err := gms.NewServer(gcfg, e, sql.NewContext, sessionBuilder(defaultDB, e.ProcessList, lim.MaxUserVariableBytes), nil)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Address, err)
	}
	srv := &Server{s: s, e: e, addr: s.Listener.Addr().String()}
	guard.sessions = s.SessionManager().Iter
	if guard.mem != nil {
		ctx, stop := context.WithCancel(context.Background())
		srv.stopMemory = stop
		go guard.mem.run(ctx)
	}
	return srv, nil
}

// sessionBuilder makes plain sessions for the user the connection
// authenticated as (the local server has no accounts: whatever user a
// client names is accepted), and records the user in the process list:
// go-mysql-server v0.20.0 leaves every connection there as "unauthenticated
// user", so that ownership checks (KILL of one's own connection, SHOW
// PROCESSLIST of one's own) could not work.
func sessionBuilder(defaultDB func(user string) string, pl sql.ProcessList, maxUserVars int) gms.SessionBuilder {
	return func(_ context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
		client := sql.Client{Capabilities: conn.Capabilities}
		if u, ok := conn.UserData.(sql.MysqlConnectionUser); ok {
			client.User, client.Address = u.User, u.Host
		}
		sess := sql.NewBaseSessionWithClientServer(addr, client, conn.ConnectionID)
		if db := defaultDB(client.User); db != "" {
			sess.SetCurrentDatabase(db)
		}
		if pl != nil {
			pl.ConnectionReady(sess)
		}
		return &session{BaseSession: sess, maxUserVars: maxUserVars}, nil
	}
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// Start accepts connections until Close.
func (s *Server) Start() error { return s.s.Start() }

// Close stops accepting connections and closes the listener. Clients that
// are connected are disconnected when the process ends; Shutdown waits for
// them.
func (s *Server) Close() error {
	if s.stopMemory != nil {
		s.stopMemory()
	}
	return s.s.Close()
}

// shutdownReplyGrace is how long Shutdown lets a connection whose
// statement has just ended write its reply before it disconnects it.
const shutdownReplyGrace = 500 * time.Millisecond

// Shutdown stops the server gracefully: it stops accepting connections,
// disconnects idle clients at once, lets running statements finish for up
// to timeout (disconnecting each client as its statement ends), then
// cancels the statements still running and disconnects their clients, and
// waits briefly for the connections to wind down. It returns the number of
// statements it had to cancel.
//
// A statement's process leaves the Query state when go-mysql-server has
// handed over its last rows, before vitess writes the end of the result
// to the client: a connection seen running is therefore disconnected only
// once it has been seen idle for shutdownReplyGrace, so that the reply of
// a statement that has just finished is not cut off ("invalid connection"
// at the client, seen on a loaded machine).
func (s *Server) Shutdown(timeout time.Duration) (canceled int, err error) {
	err = s.Close()
	sm := s.s.SessionManager()
	deadline := time.Now().Add(timeout)
	idleSince := map[uint32]time.Time{} // connections seen running: when they were first seen idle again
	for {
		running := 0
		now := time.Now()
		for _, p := range s.e.ProcessList.Processes() {
			if p.Command == sql.ProcessCommandQuery {
				running++
				idleSince[p.Connection] = time.Time{}
				continue
			}
			if since, ran := idleSince[p.Connection]; ran {
				if since.IsZero() {
					idleSince[p.Connection] = now
					running++
					continue
				}
				if now.Sub(since) < shutdownReplyGrace && now.Before(deadline) {
					running++
					continue
				}
			}
			sm.KillConnection(p.Connection)
		}
		if running == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range s.e.ProcessList.Processes() {
		if p.Command == sql.ProcessCommandQuery {
			canceled++
		}
		s.e.ProcessList.Kill(p.Connection)
		sm.KillConnection(p.Connection)
	}
	done := make(chan struct{})
	go func() {
		sm.WaitForClosedConnections()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	return canceled, err
}
