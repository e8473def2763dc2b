package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/governed"
)

func init() {
	commands["serve"] = command{"run the governed MySQL-protocol server (a configuration, or the built-in demo on localhost)", runServe}
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
	fs.StringVar(&f.config, "config", "", "YAML configuration of the governed server (datasets, accounts, budgets, TLS, data_dir); see examples/dpsql.yaml. Without it: the embedded demo on localhost")
	fs.StringVar(&f.addr, "addr", "", "address to listen on, host:port (default: the configuration's listen, else "+config.DefaultListen+")")
	fs.StringVar(&f.dataDir, "data-dir", "", "embedded demo only: directory of its privacy-budget ledger (default $XDG_STATE_HOME/dpsql/demo or ~/.local/state/dpsql/demo)")
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
		fmt.Fprintf(stderr, "%s / %s to choose them).\n\nflags:\n", governed.EnvAnalystPassword, governed.EnvAdminPassword)
		fs.PrintDefaults()
	}
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
	var (
		opts     governed.Options
		cred     governed.Credentials
		embedded = f.config == ""
	)
	if embedded {
		var err error
		opts, cred, err = governed.Demo(governed.DemoOptions{
			Listen:          f.addr,
			DataDir:         f.dataDir,
			AnalystPassword: os.Getenv(governed.EnvAnalystPassword),
			AdminPassword:   os.Getenv(governed.EnvAdminPassword),
		})
		if err != nil {
			return usageError{err}
		}
	} else {
		if f.dataDir != "" {
			return usagef("--data-dir applies to the embedded demo; with --config set data_dir in the file")
		}
		cfg, err := config.Load(f.config)
		if err != nil {
			return err
		}
		if f.addr != "" {
			if _, _, err := net.SplitHostPort(f.addr); err != nil {
				return usagef("--addr %q: %v (write HOST:PORT, e.g. 127.0.0.1:3306)", f.addr, err)
			}
			cfg.Listen = f.addr
		}
		opts.Config = cfg
	}
	opts.Log = stderr
	s, err := governed.New(opts)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(s.Addr())
	fmt.Fprintf(stderr, "dpsql: listening on %s (governed; started in %.1fs)\n", s.Addr(), time.Since(start).Seconds())
	if embedded {
		printDemoBanner(stderr, opts, cred, host, port)
	} else if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && opts.Config.TLS == nil {
		fmt.Fprintf(stderr, "WARNING: %s is reachable from the network without TLS: passwords (mysql_native_password) and results travel in clear text; configure tls:\n", s.Addr())
	}
	fmt.Fprintln(stderr, "Stop with Ctrl-C (running statements get", f.shutdownTimeout, "to finish).")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	stop := func() error {
		canceled, err := s.Shutdown(f.shutdownTimeout)
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
		fmt.Fprintf(stderr, "dpsql: shutting down (running statements get %v to finish)\n", f.shutdownTimeout)
		return stop()
	case err := <-done:
		s.Shutdown(0)
		return err
	}
}

func printDemoBanner(w io.Writer, opts governed.Options, cred governed.Credentials, host, port string) {
	fmt.Fprintf(w, "demo database: SYNTHETIC corpus; demo.posts and demo.words are protected (privacy unit user_id)\n")
	fmt.Fprintf(w, "data directory (privacy-budget ledger): %s\n", opts.Config.DataDir)
	pw := func(p string, generated bool, env string) string {
		if generated {
			return p + "   (random; shown only now)"
		}
		return "from $" + env
	}
	fmt.Fprintf(w, "analyst account: user %s, password %s\n", cred.AnalystUser, pw(cred.AnalystPassword, cred.AnalystGenerated, governed.EnvAnalystPassword))
	fmt.Fprintf(w, "  budget on demo: ε=%v, δ=%v in total (each release spends its dp_epsilon, dp_delta)\n", governed.DemoBudgetEpsilon, governed.DemoBudgetDelta)
	fmt.Fprintf(w, "admin account:   user %s, password %s (from this machine only)\n", cred.AdminUser, pw(cred.AdminPassword, cred.AdminGenerated, governed.EnvAdminPassword))
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
	p, current, err := f.data.provider(stderr)
	if err != nil {
		return err
	}
	e, err := server.NewEngine(server.Config{Provider: p})
	if err != nil {
		return err
	}
	defer e.Close()
	s, err := server.NewServer(e, server.ServerConfig{Address: addr, DefaultDatabase: current})
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
