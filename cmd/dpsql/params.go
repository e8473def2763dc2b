package main

import (
	"fmt"
	"io"

	"github.com/dpsql/dpsql/cmd/internal/cli"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

func init() {
	commands["params"] = command{"print the calibration (noise, scale, rho, gamma) of a mechanism", runParams}
}

func runParams(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("params", stderr)
	var mf cli.MechanismFlags
	mf.Register(fs, false)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dpsql params --mechanism M --epsilon E --delta D [--max-items K] [--alpha A] [--rounds R]")
		fmt.Fprintln(stderr, "\nPrints, without reading any data, the noise kind and scale, the release threshold rho")
		fmt.Fprintln(stderr, "and the cutoff gamma that a release with these options uses, as one JSON object.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	opts, err := mf.Options()
	if err != nil {
		return usageError{err}
	}
	cal, err := setunion.Calibrate(opts)
	if err != nil {
		return usageError{err}
	}
	cli.WarnDelta(stderr, opts.Delta)
	return cli.WriteJSON(stdout, cal)
}
