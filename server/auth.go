package server

import (
	"github.com/dolthub/vitess/go/mysql"

	gms "github.com/dolthub/go-mysql-server/server"
)

// uniformAuthListener is go-mysql-server's protocol listener with an
// authentication server that refuses unknown user names the way it
// refuses wrong passwords. go-mysql-server v0.20.0 (through vitess) answers
// a user name no account has with error 2012 "No authentication methods
// available", and a wrong password with 1045 "Access denied", which tells
// anyone who can connect which account names exist. Here an unknown user
// is offered the first auth method (mysql_native_password), whose
// validation then fails with 1045 like a wrong password.
func uniformAuthListener(cfg gms.Config, lc mysql.ListenerConfig, sel gms.ServerEventListener) (gms.ProtocolListener, error) {
	if lc.AuthServer != nil {
		lc.AuthServer = uniformAuthServer{lc.AuthServer}
	}
	return gms.MySQLProtocolListenerFactory(cfg, lc, sel)
}

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
