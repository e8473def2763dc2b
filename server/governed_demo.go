package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/demo"
	"github.com/dpsql/dpsql/server/governance"
	"github.com/dpsql/dpsql/server/storage"
)

// The accounts and budget of the embedded default.
const (
	DemoAnalyst = "analyst"
	DemoAdmin   = "admin"
	// DemoBudgetEpsilon and DemoBudgetDelta are the demo analyst's budget
	// on the demo database: fifty releases at the default ε = 1, δ = 1e-6.
	DemoBudgetEpsilon = 50
	DemoBudgetDelta   = 5e-5
)

// Environment variables that fix the embedded default's passwords instead
// of drawing random ones.
const (
	EnvAnalystPassword = "DPSQL_ANALYST_PASSWORD"
	EnvAdminPassword   = "DPSQL_ADMIN_PASSWORD"
)

// DemoOptions configure Demo.
type DemoOptions struct {
	// Listen is host:port on a loopback address (default
	// config.DefaultListen, 127.0.0.1:3306).
	Listen string
	// DataDir holds the ledger (default DefaultDemoDataDir()).
	DataDir string
	// AnalystPassword and AdminPassword, when empty, are drawn at random
	// (crypto/rand, 130 bits).
	AnalystPassword, AdminPassword string
}

// Credentials are the embedded default's accounts. Generated tells whether
// a password was drawn at random (to be printed once) or given.
type Credentials struct {
	AnalystUser, AnalystPassword string
	AdminUser, AdminPassword     string
	AnalystGenerated             bool
	AdminGenerated               bool
}

// DefaultDemoDataDir is where the embedded default keeps its ledger:
// $XDG_STATE_HOME/dpsql/demo, else ~/.local/state/dpsql/demo.
func DefaultDemoDataDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "dpsql", "demo"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for the demo's data directory (%v); give --data-dir", err)
	}
	return filepath.Join(home, ".local", "state", "dpsql", "demo"), nil
}

// CheckDemoAddress checks an address for the embedded default: host:port
// with a loopback host.
func CheckDemoAddress(listen string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("address %q: %v (write HOST:PORT, e.g. 127.0.0.1:3306)", listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("address %q: the embedded default serves this machine only (a loopback address such as 127.0.0.1); to serve a network, write a configuration and use --config", listen)
	}
	return nil
}

// Demo returns the options of the embedded default: the synthetic demo
// database with demo.posts and demo.words protected (privacy unit
// user_id), an analyst with a budget of (DemoBudgetEpsilon,
// DemoBudgetDelta) on it and an administrator, both reachable from this
// machine only (accounts on localhost, mysql_native_password, so that any
// client logs in without TLS), listening on a loopback address only.
func Demo(o DemoOptions) (GovernedOptions, Credentials, error) {
	listen := o.Listen
	if listen == "" {
		listen = config.DefaultListen
	}
	var err error
	if err = CheckDemoAddress(listen); err != nil {
		return GovernedOptions{}, Credentials{}, err
	}
	dataDir := o.DataDir
	if dataDir == "" {
		if dataDir, err = DefaultDemoDataDir(); err != nil {
			return GovernedOptions{}, Credentials{}, err
		}
	}
	if dataDir, err = filepath.Abs(dataDir); err != nil {
		return GovernedOptions{}, Credentials{}, err
	}

	cred := Credentials{AnalystUser: DemoAnalyst, AdminUser: DemoAdmin, AnalystPassword: o.AnalystPassword, AdminPassword: o.AdminPassword}
	if cred.AnalystPassword == "" {
		cred.AnalystPassword, cred.AnalystGenerated = rand.Text(), true
	}
	if cred.AdminPassword == "" {
		cred.AdminPassword, cred.AdminGenerated = rand.Text(), true
	}
	if cred.AnalystPassword == cred.AdminPassword {
		return GovernedOptions{}, Credentials{}, errors.New("the analyst's and the admin's passwords must differ")
	}
	analystHash, err := config.HashPassword(config.NativePassword, cred.AnalystPassword)
	if err != nil {
		return GovernedOptions{}, Credentials{}, err
	}
	adminHash, err := config.HashPassword(config.NativePassword, cred.AdminPassword)
	if err != nil {
		return GovernedOptions{}, Credentials{}, err
	}

	db, _, err := demo.New()
	if err != nil {
		return GovernedOptions{}, Credentials{}, err
	}
	cfg := &config.Config{
		Listen:  listen,
		DataDir: dataDir,
		Accounts: config.Accounts{
			Admins: []config.Admin{{User: DemoAdmin, Host: "localhost", PasswordHash: adminHash.String(), Password: adminHash}},
			Analysts: []config.Analyst{{
				User: DemoAnalyst, Host: "localhost", PasswordHash: analystHash.String(), Password: analystHash,
				Budgets: []config.Budget{{Database: demo.DatabaseName, Epsilon: DemoBudgetEpsilon, Delta: DemoBudgetDelta}},
			}},
		},
	}
	return GovernedOptions{
		Config:    cfg,
		Databases: []*storage.Database{db},
		Protected: []governance.ProtectedTable{
			{Database: demo.DatabaseName, Table: "posts", PrivacyUnit: "user_id", Source: demoSource()},
			{Database: demo.DatabaseName, Table: "words", PrivacyUnit: "user_id", Source: demoSource()},
		},
	}, cred, nil
}
