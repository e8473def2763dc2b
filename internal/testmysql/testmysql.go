// Package testmysql is the client side of dpsql's tests: the MySQL error
// number of an error (from go-sql-driver/mysql or vitess), a self-signed
// certificate for 127.0.0.1 and its go-sql-driver TLS configuration, and
// go-sql-driver connections that close when the test ends. It imports
// nothing of dpsql, so that every test package can use it, the internal
// test packages of the server's parts included; package
// internal/testserver starts the servers these clients talk to.
package testmysql

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	dbsql "database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dolthub/vitess/go/mysql"
	gomysql "github.com/go-sql-driver/mysql"
)

// ErrNo returns the MySQL error number of err: a go-sql-driver
// *mysql.MySQLError's (what a client receives) or a vitess *mysql.SQLError's
// (what an engine returns in process); 0 for nil or any other error.
func ErrNo(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return uint16(se.Num)
	}
	return 0
}

// WantErrNo fails the test (without stopping it) unless err is MySQL error
// code; what names the statement in the failure.
func WantErrNo(t testing.TB, what string, err error, code uint16) {
	t.Helper()
	if got := ErrNo(err); got != code {
		t.Errorf("%s: got %v, want MySQL error %d", what, err, code)
	}
}

// WantRefused fails the test (without stopping it) unless err is MySQL
// error code with a message containing text, and reports whether it was;
// what names the statement in the failure.
func WantRefused(t testing.TB, what string, err error, code uint16, text string) bool {
	t.Helper()
	if got := ErrNo(err); got != code {
		t.Errorf("%s: got %v, want MySQL error %d", what, err, code)
		return false
	}
	if !strings.Contains(err.Error(), text) {
		t.Errorf("%s: %v, want it to say %q", what, err, text)
		return false
	}
	return true
}

// ErrText is "number: message" for a MySQL error from the driver, else
// err's text (for comparing what two clients saw).
func ErrText(err error) string {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return fmt.Sprintf("%d: %s", me.Number, me.Message)
	}
	return err.Error()
}

// Cert is a self-signed certificate for 127.0.0.1 (and localhost), valid
// from an hour ago for a day: the server's side as PEM (for a
// configuration's tls.cert and tls.key) and as a tls.Certificate, and the
// clients' side as a pool trusting it.
type Cert struct {
	CertPEM, KeyPEM string
	TLS             tls.Certificate
	Pool            *x509.CertPool
}

// SelfSigned returns a new self-signed certificate (ECDSA P-256).
func SelfSigned(t testing.TB) Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := Cert{
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})),
		TLS:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Pool:    x509.NewCertPool(),
	}
	c.Pool.AddCert(leaf)
	return c
}

// WriteFiles writes the certificate and its key as PEM files at certPath
// and keyPath.
func (c Cert) WriteFiles(t testing.TB, certPath, keyPath string) {
	t.Helper()
	WriteFile(t, certPath, c.CertPEM)
	WriteFile(t, keyPath, c.KeyPEM)
}

var tlsSeq atomic.Int64

// RegisterTLS registers, until the test ends, a go-sql-driver TLS
// configuration trusting c for 127.0.0.1 and returns its name (for
// Config.TLSConfig or tls= in a DSN).
func (c Cert) RegisterTLS(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("dpsqltest%d", tlsSeq.Add(1))
	if err := gomysql.RegisterTLSConfig(name, &tls.Config{RootCAs: c.Pool, ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gomysql.DeregisterTLSConfig(name) })
	return name
}

// Login is what a client needs to connect: address, account, database (may
// be empty), the name of a registered TLS configuration (empty: no TLS),
// the dial timeout (0: 5 s, generous for a loaded machine; the server is on
// loopback) and the read timeout (0: none). Statements are prepared on the
// server (go-sql-driver's default), so that a session's warnings follow
// its statement.
type Login struct {
	Addr, User, Password, DB string
	TLS                      string
	Timeout, ReadTimeout     time.Duration
}

// Config is l as a go-sql-driver configuration.
func (l Login) Config() *gomysql.Config {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = l.User, l.Password, "tcp", l.Addr, l.DB
	cfg.Timeout, cfg.ReadTimeout = l.Timeout, l.ReadTimeout
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	cfg.TLSConfig = l.TLS
	return cfg
}

// Open opens a connection pool for l (it connects on first use).
func Open(l Login) (*dbsql.DB, error) {
	c, err := gomysql.NewConnector(l.Config())
	if err != nil {
		return nil, err
	}
	return dbsql.OpenDB(c), nil
}

// Connect is Open, failing the test on error, with the pool closed when
// the test ends.
func Connect(t testing.TB, l Login) *dbsql.DB {
	t.Helper()
	db, err := Open(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Session opens one connection (one server session, so that session
// variables and SHOW WARNINGS hold across its statements), closed with its
// pool when the test ends.
func Session(t testing.TB, l Login) *dbsql.Conn {
	t.Helper()
	conn, err := Connect(t, l).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Ping connects as l and runs SELECT 1: nil when l may log in.
func Ping(l Login) error {
	db, err := Open(l)
	if err != nil {
		return err
	}
	defer db.Close()
	var one int
	return db.QueryRow("SELECT 1").Scan(&one)
}

// WriteFile writes content to path (mode 0600), failing the test on error.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
