// Package batch holds dpsql's batch commands, union, ngrams and params:
// the privacy core run on files, with no SQL engine. The commands register
// themselves in Commands; package main lists them beside its own, and
// package batchmain runs them before go-mysql-server is initialised, so
// this package and everything it imports must not import the SQL engine
// (TestBatchLinksNoEngine checks it).
package batch

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Command is one subcommand: Run parses args and does the work, writing
// results to stdout and diagnostics to stderr.
type Command struct {
	Summary string
	Run     func(args []string, stdout, stderr io.Writer) error
}

// Commands holds the batch commands by name; it is filled by the init
// functions of the command files.
var Commands = map[string]Command{}

// ExitCode reports the outcome of command name and returns the process exit
// code: 0 on success (and for -h), 2 for usage errors, 1 for everything else.
func ExitCode(name string, err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "dpsql %s: %v\n", name, err)
	var ue UsageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// UsageError marks errors in the command line (exit code 2).
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// NewFlagSet returns a flag set that reports errors instead of exiting.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("dpsql "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// ParseFlags parses args and rejects stray positional arguments.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return UsageError{err}
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q (all options are flags; see -h)", fs.Arg(0))
	}
	return nil
}
