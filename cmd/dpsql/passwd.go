package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/dpsql/dpsql/server/config"
)

func init() {
	commands["passwd"] = command{Summary: "hash a password for the password_hash of an account in the config", Run: runPasswd}
}

// passwdStdin is where passwd reads the password (a variable for tests).
var passwdStdin = os.Stdin

func runPasswd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("passwd", stderr)
	plugin := fs.String("plugin", config.CachingSha2Password, "MySQL auth plugin: "+config.CachingSha2Password+" (needs TLS) or "+config.NativePassword+" (works without TLS; weaker, unsalted hash)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of stdin instead of prompting")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpsql passwd [--plugin caching_sha2_password|mysql_native_password] [--password-stdin]")
		fmt.Fprintln(stderr, "\nReads a password (from the terminal without echo, twice; or from stdin with --password-stdin)")
		fmt.Fprintln(stderr, "and prints its hash for the password_hash of an account in the dpsql serve config.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *plugin != config.CachingSha2Password && *plugin != config.NativePassword {
		return usagef("unknown --plugin %q: use %s or %s", *plugin, config.CachingSha2Password, config.NativePassword)
	}
	var password string
	switch fd := int(passwdStdin.Fd()); {
	case *fromStdin:
		line, err := bufio.NewReader(passwdStdin).ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		password = string(bytes.TrimRight(line, "\r\n"))
	case term.IsTerminal(fd):
		fmt.Fprint(stderr, "Password: ")
		p1, err := term.ReadPassword(fd)
		fmt.Fprintln(stderr)
		if err != nil {
			return err
		}
		fmt.Fprint(stderr, "Repeat password: ")
		p2, err := term.ReadPassword(fd)
		fmt.Fprintln(stderr)
		if err != nil {
			return err
		}
		if !bytes.Equal(p1, p2) {
			return errors.New("the passwords differ; nothing printed")
		}
		password = string(p1)
	default:
		return usagef("stdin is not a terminal: pass --password-stdin to read the password from its first line")
	}
	h, err := config.HashPassword(*plugin, password)
	if err != nil {
		return usageError{Err: err}
	}
	fmt.Fprintln(stdout, h)
	fmt.Fprintf(stderr, "paste into the account in the config:  password_hash: '%s'\n", h)
	if h.Plugin == config.CachingSha2Password {
		fmt.Fprintln(stderr, "caching_sha2_password logins need TLS (the tls: section); use --plugin mysql_native_password for plaintext connections.")
	}
	return nil
}
