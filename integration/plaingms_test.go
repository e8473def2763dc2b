package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"

	"github.com/dpsql/dpsql/integration/clients"
)

// The plain go-mysql-server v0.20.0 that the client harnesses are validated
// against until the governed dpsql server exists: a memory provider with one
// database, a small table, a SELECT-only account with a password, optional
// TLS with a self-signed certificate. Nothing of dpsql is in it.

const (
	plainDB       = "shop"
	plainUser     = "tester"
	plainPassword = "t3st-Pa55"
)

// plainSetup builds the database as root. The rows exercise what client
// output formats must carry: NULL, non-ASCII text, a tab and a newline inside
// a value, a decimal and a datetime.
var plainSetup = []string{
	"CREATE TABLE items (id INT NOT NULL PRIMARY KEY, name VARCHAR(64) NOT NULL, price DECIMAL(10,2), note TEXT, added DATETIME NOT NULL)",
	"INSERT INTO items VALUES (1, 'apple', 1.50, NULL, '2024-01-02 03:04:05'), " +
		"(2, 'crème brûlée', 7.25, 'tab\there', '2024-02-03 04:05:06'), " +
		"(3, 'kiwi', NULL, 'line1\nline2', '2024-03-04 05:06:07')",
	"CREATE USER '" + plainUser + "'@'%' IDENTIFIED BY '" + plainPassword + "'",
	"GRANT SELECT ON " + plainDB + ".* TO '" + plainUser + "'@'%'",
}

type plainOptions struct {
	TLS        bool // offer TLS (self-signed certificate; Target.CAFile names its PEM)
	RequireTLS bool // refuse clients without TLS
	View       bool // add a view, which makes go-mysql-server v0.20.0 panic on Connector/J's getTables query (GMS_NOTES §7.1)
}

// startPlainGMS starts the server on a loopback port for the test's lifetime
// and returns how to reach it as the SELECT-only account.
func startPlainGMS(t testing.TB, o plainOptions) clients.Target {
	t.Helper()
	db := memory.NewDatabase(plainDB)
	pro := memory.NewDBProvider(db)
	engine := sqle.NewDefault(pro)
	mdb := engine.Analyzer.Catalog.MySQLDb
	mdb.SetPersister(&mysql_db.NoopPersister{})
	mdb.AddRootAccount()

	ctx := sql.NewContext(context.Background(), sql.WithSession(memory.NewSession(
		sql.NewBaseSessionWithClientServer("localhost", sql.Client{User: "root", Address: "localhost"}, 1), pro)))
	ctx.SetCurrentDatabase(plainDB)
	setup := plainSetup
	if o.View {
		setup = append(setup[:len(setup):len(setup)], "CREATE VIEW cheap_items AS SELECT id, name FROM items WHERE price < 5")
	}
	for _, q := range setup {
		_, iter, _, err := engine.Query(ctx, q)
		if err != nil {
			t.Fatalf("setup %q: %v", q, err)
		}
		if _, err := sql.RowIterToRows(ctx, iter); err != nil {
			t.Fatalf("setup %q: %v", q, err)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Protocol: "tcp", Address: ln.Addr().String(), Listener: ln}
	target := clients.Target{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port,
		User: plainUser, Password: plainPassword, Database: plainDB}
	if o.TLS {
		cert, pemFile := plainSelfSignedCert(t)
		cfg.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		target.TLS, target.CAFile = true, pemFile
		cfg.RequireSecureTransport = o.RequireTLS
	}
	srv, err := server.NewServer(cfg, engine, sql.NewContext, memory.NewSessionBuilder(pro), nil)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(func() {
		srv.Close()
		engine.Close()
	})
	return target
}

// plainSelfSignedCert makes a certificate for 127.0.0.1 and writes it as PEM (the
// CA file clients verify against).
func plainSelfSignedCert(t testing.TB) (tls.Certificate, string) {
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
	p := filepath.Join(t.TempDir(), "server-ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, p
}
