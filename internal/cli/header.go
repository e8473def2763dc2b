package cli

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// headerChoice is the --skip-header flag of the batch commands. Given, it
// says whether the first row of the input is a header. Not given, the first
// row is skipped when it looks like a header (tabfile.LooksLikeHeader: every
// field a name such as user_id), and a notice on stderr says so and how to
// keep the row. (`dpsql query --load` and the server's loader detect headers
// with a rule that also looks at the types of later rows; the batch commands
// look at the first row alone, for the reason below.)
//
// Privacy: the decision reads the first row alone, so it is the same for
// every input that starts with that row, whatever the other rows hold: the
// release is the mechanism applied to the rows after the first (or to all
// rows), with the mechanism's guarantee for every user of those rows. A
// first data row taken for a header is left out, which the notice shows.
type headerChoice struct {
	given bool
	log   io.Writer
}

func (h *headerChoice) register(fs *flag.FlagSet, skipHeader *bool) {
	h.log = fs.Output()
	fs.Var(headerFlag{skip: skipHeader, h: h}, "skip-header", "the first row is a header: skip it (default: skipped when every field of it is a name such as user_id, with a notice; --skip-header=false reads it as data)")
}

// skip decides whether the first row f of the file named input is skipped;
// skipHeader is InputFlags.SkipHeader.
func (h *headerChoice) skip(input string, f [][]byte, skipHeader bool) bool {
	if skipHeader || h.given {
		return skipHeader
	}
	if !tabfile.LooksLikeHeader(f) {
		return false
	}
	if h.log != nil {
		names := make([]string, len(f))
		for i, x := range f {
			names[i] = strconv.Quote(strings.TrimSpace(string(x)))
		}
		fmt.Fprintf(h.log, "dpsql: the first row of %s (%s) looks like a header and is skipped; if it is data, pass --skip-header=false\n", input, strings.Join(names, ", "))
	}
	return true
}

// headerFlag is the flag.Value of --skip-header: a boolean flag that
// remembers whether it was given.
type headerFlag struct {
	skip *bool
	h    *headerChoice
}

func (f headerFlag) IsBoolFlag() bool { return true }

func (f headerFlag) String() string {
	if f.h == nil || !f.h.given {
		return "" // not given: no default to print
	}
	return strconv.FormatBool(*f.skip)
}

func (f headerFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	*f.skip, f.h.given = v, true
	return nil
}
