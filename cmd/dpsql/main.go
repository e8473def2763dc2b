// Command dpsql is the dpsql binary: a MySQL-compatible server whose
// analysts may only obtain differentially private releases, plus batch
// commands that run the privacy core on files.
//
//	dpsql [serve] [flags]      run the server (the default command)
//	dpsql query  [flags]       run SQL on the embedded engine and exit
//	dpsql union  [flags]       DP set union over a TSV/CSV file
//	dpsql ngrams [flags]       DP n-gram extraction over a TSV/CSV file
//	dpsql params [flags]       print the calibration of a mechanism
//	dpsql bench  [flags]       benchmark tables
//
// Run "dpsql COMMAND -h" for a command's flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand: run parses args and does the work, writing
// results to stdout and diagnostics to stderr.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands is filled by the init functions of the subcommand files.
var commands = map[string]command{}

// defaultCommand runs when the first argument is not a command name.
const defaultCommand = "serve"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args and returns the process exit code: 0 on success, 2 for
// usage errors, 1 for everything else.
func run(args []string, stdout, stderr io.Writer) int {
	name := defaultCommand
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "help" || a == "-h" || a == "--help":
			usage(stderr)
			return 0
		case !strings.HasPrefix(a, "-"):
			name, args = a, args[1:]
		}
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "dpsql: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	if err := cmd.run(args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "dpsql %s: %v\n", name, err)
			return 2
		}
		fmt.Fprintf(stderr, "dpsql %s: %v\n", name, err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dpsql [COMMAND] [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		def := ""
		if n == defaultCommand {
			def = " (default)"
		}
		fmt.Fprintf(w, "  %-8s %s%s\n", n, commands[n].summary, def)
	}
	fmt.Fprintln(w, "\nRun 'dpsql COMMAND -h' for the flags of a command.")
}

// usageError marks errors in the command line (exit code 2).
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("dpsql "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and rejects stray positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (all options are flags; see -h)", fs.Arg(0))
	}
	return nil
}
