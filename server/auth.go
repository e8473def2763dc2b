package server

import (
	"errors"
	"fmt"
	"net"

	"github.com/dolthub/vitess/go/mysql"

	gms "github.com/dolthub/go-mysql-server/server"
)

// listenerFactory returns the protocol listener factory of a server: the
// uniform authentication below, and connections kept within the limits of
// g (handshake timeout, pending handshakes, connection counts). loginHint
// is appended to refused logins on connections without TLS
// (ServerConfig.LoginHint).
func listenerFactory(g *connGuard, loginHint string, th *throttle) gms.ProtocolListenerFunc {
	return func(cfg gms.Config, lc mysql.ListenerConfig, sel gms.ServerEventListener) (gms.ProtocolListener, error) {
		if lc.Listener == nil {
			l, err := net.Listen(lc.Protocol, lc.Address)
			if err != nil {
				return nil, err
			}
			lc.Listener = l
		}
		lc.Listener = &guardedListener{Listener: lc.Listener, g: g}
		lc.MaxConns = 0 // counted by g, after authentication
		lc.Handler = closeHandler{Handler: lc.Handler, g: g}
		if lc.AuthServer != nil {
			lc.AuthServer = limitedAuthServer{AuthServer: uniformAuthServer{lc.AuthServer}, g: g, hint: loginHint, th: th}
		}
		return gms.MySQLProtocolListenerFactory(cfg, lc, sel)
	}
}

// limitedAuthServer counts each authenticated connection in its guard,
// refusing it beyond the connection limits, and explains refused logins
// on connections without TLS with hint.
type limitedAuthServer struct {
	mysql.AuthServer
	g    *connGuard
	hint string
	th   *throttle // nil: no login throttling
}

func (s limitedAuthServer) AuthMethods() []mysql.AuthMethod {
	methods := s.AuthServer.AuthMethods()
	out := make([]mysql.AuthMethod, len(methods))
	for i, m := range methods {
		out[i] = limitedMethod{AuthMethod: m, g: s.g, hint: s.hint, th: s.th}
	}
	return out
}

type limitedMethod struct {
	mysql.AuthMethod
	g    *connGuard
	hint string
	th   *throttle
}

// HandleAuthPluginData checks a login: refused at once, without checking
// the password, while its address or its account name is in back-off
// (throttle); otherwise checked, a refusal counted against both.
func (m limitedMethod) HandleAuthPluginData(c *mysql.Conn, user string, server, client []byte, addr net.Addr) (mysql.Getter, error) {
	host := hostOf(c.RemoteAddr())
	if wait := m.th.blocked(user, host); wait > 0 {
		denied := mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError, "access denied")
		return nil, m.explainWith(c, user, client, denied, blockedMessage(wait))
	}
	ud, err := m.AuthMethod.HandleAuthPluginData(c, user, server, client, addr)
	if err != nil {
		var se *mysql.SQLError
		if errors.As(err, &se) && se.Num == mysql.ERAccessDeniedError {
			m.th.failed(user, host)
		}
		return nil, m.explain(c, user, client, err)
	}
	m.th.succeeded(user, host)
	if err := m.g.authenticated(c, user); err != nil {
		return nil, err
	}
	return ud, nil
}

// uniformAuthServer is an authentication server that refuses unknown user
// names the way it refuses wrong passwords. go-mysql-server v0.20.0 (through vitess) answers
// a user name no account has with error 2012 "No authentication methods
// available", and a wrong password with 1045 "Access denied", which tells
// anyone who can connect which account names exist. Here an unknown user
// is offered the first auth method (mysql_native_password), whose
// validation then fails with 1045 like a wrong password.
type uniformAuthServer struct{ mysql.AuthServer }

// AuthMethods implements mysql.AuthServer: the first method also takes
// users that no method handles.
func (s uniformAuthServer) AuthMethods() []mysql.AuthMethod {
	methods := s.AuthServer.AuthMethods()
	if len(methods) == 0 {
		return methods
	}
	out := append([]mysql.AuthMethod(nil), methods...)
	out[0] = unknownUserMethod{AuthMethod: methods[0], all: methods}
	return out
}

type unknownUserMethod struct {
	mysql.AuthMethod
	all []mysql.AuthMethod
}

func (m unknownUserMethod) HandleUser(c *mysql.Conn, user string) bool {
	if m.AuthMethod.HandleUser(c, user) {
		return true
	}
	for _, o := range m.all[1:] {
		if o.HandleUser(c, user) {
			return false // a known user of another method
		}
	}
	return true // unknown: validation will refuse it with 1045
}

// explain rewrites a refused login (1045) in MySQL's words, "Access denied
// for user 'u'@'host' (using password: YES)", and on a connection without
// TLS appends the server's hint. Both depend only on what the client sent
// and on the connection, never on whether the account exists or which
// plugin it uses: an unknown user, a wrong password and an account that
// needs TLS get the same message.
func (m limitedMethod) explain(c *mysql.Conn, user string, client []byte, err error) error {
	return m.explainWith(c, user, client, err, "")
}

// explainWith is explain, with extra appended to the message (before the
// hint).
func (m limitedMethod) explainWith(c *mysql.Conn, user string, client []byte, err error, extra string) error {
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Num != mysql.ERAccessDeniedError {
		return err
	}
	host := "unknown"
	if a := c.RemoteAddr(); a != nil {
		if h, _, splitErr := net.SplitHostPort(a.String()); splitErr == nil {
			host = h
		}
	}
	password := "NO"
	if len(client) > 0 && !(len(client) == 1 && client[0] == 0) {
		password = "YES"
	}
	msg := fmt.Sprintf("Access denied for user '%s'@'%s' (using password: %s)", user, host, password)
	if extra != "" {
		msg += "; " + extra
	}
	if m.hint != "" && !c.TLSEnabled() && !c.IsUnixSocket() {
		msg += "; " + m.hint
	}
	return mysql.NewSQLError(se.Num, se.State, "%s", msg)
}
