// Package explain is the common form in which dpsql describes, without
// reading data or spending budget, what a release will do: a list of
// facts, each a named parameter, its value and what it means in words.
// The core packages (setunion, dpagg, ngrams) produce facts from their
// calibrations; the SQL function DP_EXPLAIN and `dpsql params` print them.
package explain

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Fact is one parameter of a release.
type Fact struct {
	// Name is the parameter, in snake_case (epsilon, noise_scale, …).
	Name string `json:"name"`
	// Value is the parameter's value as text.
	Value string `json:"value"`
	// Meaning says what the value means for the analyst.
	Meaning string `json:"meaning,omitempty"`
}

// F returns a fact whose value is formatted with %v (floats with %.6g).
func F(name string, value any, meaning string) Fact {
	var v string
	switch x := value.(type) {
	case float64:
		v = Number(x)
	case string:
		v = x
	default:
		v = fmt.Sprint(x)
	}
	return Fact{Name: name, Value: v, Meaning: meaning}
}

// Number formats x with at most 6 significant digits.
func Number(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

// Prefix returns facts with prefix added to every name (for example
// "sum." for the statistics of one aggregate).
func Prefix(prefix string, facts []Fact) []Fact {
	out := make([]Fact, len(facts))
	for i, f := range facts {
		f.Name = prefix + f.Name
		out[i] = f
	}
	return out
}

// WriteTable prints facts as an aligned table of three columns, parameter,
// value and meaning, for people (`dpsql params`).
func WriteTable(w io.Writer, facts []Fact) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "parameter\tvalue\tmeaning")
	for _, f := range facts {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, f.Value, strings.ReplaceAll(f.Meaning, "\n", " "))
	}
	return tw.Flush()
}
