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
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/dpsql/dpsql/cmd/dpsql/internal/batch"
	_ "github.com/dpsql/dpsql/cmd/dpsql/internal/batchmain" // runs the batch commands before the SQL engine is initialised
)

// command is one subcommand (see batch.Command).
type command = batch.Command

// commands is filled by the init functions of the subcommand files, and
// with the batch commands below.
var commands = map[string]command{}

func init() {
	for name, c := range batch.Commands {
		commands[name] = c
	}
}

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
	return batch.ExitCode(name, cmd.Run(args, stdout, stderr), stderr)
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
		fmt.Fprintf(w, "  %-8s %s%s\n", n, commands[n].Summary, def)
	}
	fmt.Fprintln(w, "\nRun 'dpsql COMMAND -h' for the flags of a command.")
}

// The command-line helpers of the batch commands serve every command.
type usageError = batch.UsageError

var (
	usagef     = batch.Usagef
	newFlagSet = batch.NewFlagSet
	parseFlags = batch.ParseFlags
)
