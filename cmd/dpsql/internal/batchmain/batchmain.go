// Package batchmain runs dpsql's batch commands (package batch: union,
// ngrams, params) from its init function, so that they do not pay for the
// initialisation of the SQL engine linked into the same binary.
//
// Go initialises every linked package before main, which for dpsql costs
// about 0.08 s of CPU and 25 MiB of memory in go-mysql-server's packages
// (its system variables, types and information_schema), whatever the
// command. Since Go 1.21 the order is specified: the packages are sorted by
// import path, and each step initialises the first one whose imports are all
// initialised. This package imports only package batch, whose graph has no
// go-mysql-server package, and it becomes ready before the engine's
// expensive packages; its init then runs the command named by os.Args[1], if
// it is a batch command, and exits the process with its exit code. Any other
// command (serve, query, bench, passwd, help) falls through to main with
// every package initialised. TestBatchSkipsEngineInit checks the order on
// the built binary with GODEBUG=inittrace=1.
//
// A batch command only uses packages it imports, which Go initialises before
// this one, so it behaves as it would when run from main.
package batchmain

import (
	"os"

	"github.com/dpsql/dpsql/cmd/dpsql/internal/batch"
)

func init() {
	if len(os.Args) < 2 {
		return
	}
	name := os.Args[1]
	cmd, ok := batch.Commands[name]
	if !ok {
		return
	}
	os.Exit(batch.ExitCode(name, cmd.Run(os.Args[2:], os.Stdout, os.Stderr), os.Stderr))
}
