package server

import (
	"net"

	"github.com/dolthub/vitess/go/mysql"

	gms "github.com/dolthub/go-mysql-server/server"
)

// listenerFactory returns the protocol listener factory of a server: the
// uniform authentication below, and connections kept within the limits of
// g (handshake timeout, pending handshakes, connection counts).
func listenerFactory(g *connGuard) gms.ProtocolListenerFunc {
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
			lc.AuthServer = limitedAuthServer{AuthServer: uniformAuthServer{lc.AuthServer}, g: g}
		}
		return gms.MySQLProtocolListenerFactory(cfg, lc, sel)
	}
}

// limitedAuthServer counts each authenticated connection in its guard,
// refusing it beyond the connection limits.
type limitedAuthServer struct {
	mysql.AuthServer
	g *connGuard
}

func (s limitedAuthServer) AuthMethods() []mysql.AuthMethod {
	methods := s.AuthServer.AuthMethods()
	out := make([]mysql.AuthMethod, len(methods))
	for i, m := range methods {
		out[i] = limitedMethod{AuthMethod: m, g: s.g}
	}
	return out
}

type limitedMethod struct {
	mysql.AuthMethod
	g *connGuard
}

func (m limitedMethod) HandleAuthPluginData(c *mysql.Conn, user string, server, client []byte, addr net.Addr) (mysql.Getter, error) {
	ud, err := m.AuthMethod.HandleAuthPluginData(c, user, server, client, addr)
	if err != nil {
		return nil, err
	}
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
