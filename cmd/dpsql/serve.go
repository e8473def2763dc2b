package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/ledger"
)

func init() {
	commands["serve"] = command{Summary: "run the governed MySQL-protocol server (a configuration, or the built-in demo on localhost)", Run: runServe}
}

// serveStop, when closed, stops a running serve command like Ctrl-C (for
// tests; nil otherwise).
var serveStop chan struct{}

// serveFlags are the flags of the serve command.
type serveFlags struct {
	config          string
	addr            string
	dataDir         string
	shutdownTimeout time.Duration
	verbose         bool
	ungoverned      bool
	data            dataFlags
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	var f serveFlags
	f.register(fs, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.verbose {
		logrus.SetLevel(logrus.InfoLevel)
	} else {
		logrus.SetLevel(logrus.ErrorLevel)
	}
	logrus.SetOutput(stderr)
	if f.ungoverned {
		if f.config != "" || f.dataDir != "" {
			return usagef("--ungoverned takes neither --config nor --data-dir: it has no accounts and no ledger")
		}
		return runUngoverned(f, stderr)
	}
	var loads bool
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "load", "no-demo", "quiet":
			loads = true
		}
	})
	if loads {
		return usagef("--load, --no-demo and --quiet belong to --ungoverned; the governed server loads the datasets of its --config")
	}

	start := time.Now()
	embedded := f.config == ""
	opts, cred, err := governedOptions(f)
	if err != nil {
		return err
	}
	opts.Log = stderr
	s, err := server.NewGoverned(opts)
	if err != nil {
		if opts.Listener != nil {
			opts.Listener.Close()
		}
		return startError(err, embedded, f.config)
	}
	host, port, _ := net.SplitHostPort(s.Addr())
	fmt.Fprintf(stderr, "dpsql: listening on %s (governed; started in %.1fs)\n", s.Addr(), time.Since(start).Seconds())
	if embedded {
		printDemoBanner(stderr, opts, cred, host, port)
	} else if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && opts.Config.TLS == nil {
		fmt.Fprintf(stderr, "WARNING: %s is reachable from the network without TLS: passwords (mysql_native_password) and results travel in clear text; configure tls:\n", s.Addr())
	}
	fmt.Fprintln(stderr, "Stop with Ctrl-C (running statements get", f.shutdownTimeout, "to finish).")
	return serveUntilStopped(s, f.shutdownTimeout, stderr)
}

// register adds the flags of `dpsql serve` to fs.
func (f *serveFlags) register(fs *flag.FlagSet, stderr io.Writer) {
	fs.StringVar(&f.config, "config", "", "YAML configuration of the governed server (datasets, accounts, budgets, TLS, data_dir); see examples/dpsql.yaml. Without it: the embedded demo on localhost")
	fs.StringVar(&f.addr, "addr", "", "address to listen on, host:port (default: the configuration's listen, else "+config.DefaultListen+")")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory of the privacy-budget ledger (embedded demo: default $XDG_STATE_HOME/dpsql/demo or ~/.local/state/dpsql/demo; with --config: instead of the file's data_dir); one server at a time")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long running statements may finish before they are canceled")
	fs.BoolVar(&f.verbose, "verbose", false, "log connections and failed queries")
	fs.BoolVar(&f.ungoverned, "ungoverned", false, "run the local single-user server instead: no accounts, no protected tables, no budgets (with --load, --no-demo)")
	f.data.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpsql [serve] [--config FILE] [--addr HOST:PORT] [--data-dir DIR]")
		fmt.Fprintln(stderr, "       dpsql serve --ungoverned [--addr HOST:PORT] [--load [DB.]TABLE=FILE …] [--no-demo]")
		fmt.Fprintln(stderr, "\nStarts the governed MySQL-compatible server: administrators run any SQL; analysts read public tables")
		fmt.Fprintln(stderr, "and obtain only differentially private releases over protected tables, each charged to their privacy")
		fmt.Fprintln(stderr, "budget in a ledger on disk. Without --config it serves the synthetic demo database on 127.0.0.1 with")
		fmt.Fprintln(stderr, "an analyst and an admin account whose random passwords are printed once at start (set")
		fmt.Fprintf(stderr, "%s / %s to choose them).\n\nflags:\n", server.EnvAnalystPassword, server.EnvAdminPassword)
		fs.PrintDefaults()
	}
}

// governedOptions returns the governed server's options: the embedded demo
// (listening already, so that a port in use fails before the demo data is
// generated, with its generated credentials) or the --config file with the
// flags that override it.
func governedOptions(f serveFlags) (server.GovernedOptions, server.Credentials, error) {
	var (
		opts server.GovernedOptions
		cred server.Credentials
	)
	if f.config != "" {
		cfg, err := config.Load(f.config)
		if err != nil {
			return opts, cred, err
		}
		if f.dataDir != "" {
			if cfg.DataDir, err = filepath.Abs(f.dataDir); err != nil {
				return opts, cred, usagef("--data-dir %q: %v", f.dataDir, err)
			}
		}
		if f.addr != "" {
			if _, _, err := net.SplitHostPort(f.addr); err != nil {
				return opts, cred, usagef("--addr %q: %v (write HOST:PORT, e.g. 127.0.0.1:3306)", f.addr, err)
			}
			cfg.Listen = f.addr
		}
		opts.Config = cfg
		return opts, cred, nil
	}
	addr := cmp.Or(f.addr, config.DefaultListen)
	if err := server.CheckDemoAddress(addr); err != nil {
		return opts, cred, usageError{Err: err}
	}
	ln, err := server.Listen(addr)
	if err != nil {
		return opts, cred, startError(err, true, "")
	}
	opts, cred, err = server.Demo(server.DemoOptions{
		Listen:          addr,
		DataDir:         f.dataDir,
		AnalystPassword: os.Getenv(server.EnvAnalystPassword),
		AdminPassword:   os.Getenv(server.EnvAdminPassword),
	})
	if err != nil {
		ln.Close()
		return opts, cred, usageError{Err: err}
	}
	opts.Listener = ln
	return opts, cred, nil
}

// serveUntilStopped serves s until it fails, the process gets SIGINT or
// SIGTERM, or serveStop fires (tests); running statements then get
// shutdownTimeout to finish.
func serveUntilStopped(s *server.Governed, shutdownTimeout time.Duration, stderr io.Writer) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	stop := func() error {
		canceled, err := s.Shutdown(shutdownTimeout)
		if canceled > 0 {
			fmt.Fprintf(stderr, "dpsql: canceled %d running statement(s)\n", canceled)
		}
		if err != nil {
			return fmt.Errorf("shutdown: %w", err)
		}
		fmt.Fprintln(stderr, "dpsql: stopped; the ledger is closed")
		return nil
	}
	select {
	case <-serveStop:
		return stop()
	case <-sig:
		fmt.Fprintf(stderr, "dpsql: shutting down (running statements get %v to finish)\n", shutdownTimeout)
		return stop()
	case err := <-done:
		s.Shutdown(0)
		return err
	}
}

// startError adds to an error of a server that could not start what to do
// about the two ways a second server on one machine fails: the address is in
// use, or another server holds the data directory's ledger. configFile is
// the --config file ("" for the embedded demo and --ungoverned).
func startError(err error, embedded bool, configFile string) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		switch {
		case embedded:
			return fmt.Errorf("%w\n  to run another server beside it, give it another port and its own ledger: dpsql serve --addr 127.0.0.1:3307 --data-dir DIR", err)
		case configFile == "":
			return fmt.Errorf("%w\n  choose another address with --addr HOST:PORT", err)
		}
		return fmt.Errorf("%w\n  choose another address with --addr HOST:PORT (or listen: in %s)", err, configFile)
	case errors.Is(err, ledger.ErrInUse):
		if embedded {
			return fmt.Errorf("%w\n  to run another demo server beside it, give it its own ledger and port: dpsql serve --data-dir DIR --addr 127.0.0.1:3307", err)
		}
		return fmt.Errorf("%w\n  to run a second server on this configuration, give it its own ledger: --data-dir DIR (or data_dir: in %s)", err, configFile)
	}
	return err
}

func printDemoBanner(w io.Writer, opts server.GovernedOptions, cred server.Credentials, host, port string) {
	fmt.Fprintf(w, "demo database: SYNTHETIC corpus; demo.posts and demo.words are protected (privacy unit user_id)\n")
	fmt.Fprintf(w, "data directory (privacy-budget ledger): %s\n", opts.Config.DataDir)
	pw := func(p string, generated bool, env string) string {
		if generated {
			return p + "   (random; shown only now)"
		}
		return "from $" + env
	}
	fmt.Fprintf(w, "analyst account: user %s, password %s\n", cred.AnalystUser, pw(cred.AnalystPassword, cred.AnalystGenerated, server.EnvAnalystPassword))
	fmt.Fprintf(w, "  budget on demo: ε=%v, δ=%v in total, composed under zCDP (SELECT * FROM DP_EXPLAIN('…') shows what a query costs)\n", server.DemoBudgetEpsilon, server.DemoBudgetDelta)
	fmt.Fprintf(w, "admin account:   user %s, password %s (from this machine only)\n", cred.AdminUser, pw(cred.AdminPassword, cred.AdminGenerated, server.EnvAdminPassword))
	fmt.Fprintf(w, "try:  mysql -h %s -P %s -u %s -p demo -e \"SELECT DISTINCT word FROM words LIMIT 20; SELECT * FROM DP_BUDGET()\"\n", host, port, cred.AnalystUser)
}

// runUngoverned is the local, single-user server of `dpsql serve
// --ungoverned`: no accounts, every loaded table readable.
func runUngoverned(f serveFlags, stderr io.Writer) error {
	addr := f.addr
	if addr == "" {
		addr = server.DefaultAddress
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--addr %q: %v (write HOST:PORT, e.g. 127.0.0.1:3306)", addr, err)
	}
	// Listen before loading the data, so that a port in use fails at once.
	ln, err := server.Listen(addr)
	if err != nil {
		return startError(err, false, "")
	}
	defer ln.Close()
	p, current, err := f.data.provider(stderr)
	if err != nil {
		return err
	}
	e, err := server.NewEngine(server.Config{Provider: p})
	if err != nil {
		return err
	}
	defer e.Close()
	s, err := server.NewServer(e, server.ServerConfig{Listener: ln, DefaultDatabase: current})
	if err != nil {
		return err
	}

	fmt.Fprintf(stderr, "dpsql: listening on %s: a local, single-user server without accounts (any user name and password\n", s.Addr())
	fmt.Fprintln(stderr, "  are accepted and every loaded table is readable, without differential privacy or budget).")
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "WARNING: %s is not a loopback address: anyone who can reach it can read all loaded data.\n", host)
	}
	if !f.data.noDemo {
		h, port, _ := net.SplitHostPort(s.Addr())
		fmt.Fprintf(stderr, "try:  mysql -h %s -P %s -u me demo -e \"SELECT DP_SET_UNION(word, user_id) FROM words\"\n", h, port)
	}
	fmt.Fprintln(stderr, "Stop with Ctrl-C.")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	done := make(chan error, 1)
	go func() { done <- s.Start() }()
	select {
	case <-serveStop:
		s.Shutdown(5 * time.Second)
		return nil
	case <-sig:
		fmt.Fprintln(stderr, "dpsql: shutting down (waiting up to 5s for clients)")
		s.Shutdown(5 * time.Second)
		return nil
	case err := <-done:
		return err
	}
}
