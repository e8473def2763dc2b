package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/dpsql/dpsql/server"
)

func init() {
	commands["serve"] = command{"run the MySQL-protocol server (local, single-user) on the demo data and loaded files", runServe}
}

// serveStop, when closed, stops a running serve command like Ctrl-C (for
// tests; nil otherwise).
var serveStop chan struct{}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	var data dataFlags
	data.register(fs)
	addr := fs.String("addr", server.DefaultAddress, "address to listen on (host:port)")
	verbose := fs.Bool("verbose", false, "log connections and failed queries")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpsql [serve] [--addr HOST:PORT] [--load [DB.]TABLE=FILE …] [--no-demo]")
		fmt.Fprintln(stderr, "\nStarts a MySQL-compatible server on the demo database and any loaded files. It is a local,")
		fmt.Fprintln(stderr, "single-user server: there are no accounts (any user name is accepted) and no protected tables.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usagef("--addr %q: %v (write HOST:PORT, e.g. 127.0.0.1:3306)", *addr, err)
	}
	if *verbose {
		logrus.SetLevel(logrus.InfoLevel)
	} else {
		logrus.SetLevel(logrus.ErrorLevel)
	}
	logrus.SetOutput(stderr)

	p, current, err := data.provider(stderr)
	if err != nil {
		return err
	}
	e, err := server.NewEngine(server.Config{Provider: p})
	if err != nil {
		return err
	}
	defer e.Close()
	s, err := server.NewServer(e, server.ServerConfig{Address: *addr, DefaultDatabase: current})
	if err != nil {
		return err
	}

	fmt.Fprintf(stderr, "dpsql: listening on %s: a local, single-user server without accounts (any user name and password\n", s.Addr())
	fmt.Fprintln(stderr, "  are accepted and every loaded table is readable). Analyst accounts, protected tables and privacy")
	fmt.Fprintln(stderr, "  budgets come with the governed server.")
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "WARNING: %s is not a loopback address: anyone who can reach it can read all loaded data.\n", host)
	}
	if !data.noDemo {
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
