// Package cli holds what the batch commands of dpsql and dpsql-beam share:
// the mechanism flags, the input flags and the pair reader, progress output,
// and the one-line JSON summary.
package cli

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// MechanismFlags are the flags that choose a mechanism and its parameters:
// --mechanism, --epsilon, --delta, --max-items, --alpha, --rounds and
// --allow-unproven set the fields of one setunion.Options (the set-union
// options' one representation; validated by its Validate), --public and
// --seed what the run reads.
type MechanismFlags struct {
	opts   setunion.Options
	Public string
	Seed   string

	withData bool
}

// Register adds the flags to fs. withData adds --public and --seed, which only
// make sense for commands that read data.
func (m *MechanismFlags) Register(fs *flag.FlagSet, withData bool) {
	d := setunion.Defaults()
	m.withData = withData
	proven, unproven := MechanismNames()
	fs.StringVar((*string)(&m.opts.Mechanism), "mechanism", string(d.Mechanism), "DPSU mechanism: "+strings.Join(proven, ", ")+
		"; without a privacy proof, only with --allow-unproven: "+strings.Join(unproven, ", "))
	fs.Float64Var(&m.opts.Epsilon, "epsilon", d.Epsilon, "privacy parameter ε > 0")
	fs.Float64Var(&m.opts.Delta, "delta", d.Delta, fmt.Sprintf("privacy parameter δ in (0, 1); above %g, or at least 1/users, a warning says what it allows", DeltaWarnAbove))
	fs.IntVar(&m.opts.MaxItems, "max-items", d.MaxItems, fmt.Sprintf("Δ0: most items kept per user (sampled uniformly); 0 chooses it privately from the data with %.0f%% of the Gaussian budget (Gaussian mechanisms; the others use %d)", 100*setunion.AutoMaxItemsShare, setunion.FixedMaxItems))
	fs.Var(OptionalFloat(&m.opts.Alpha), "alpha", "cutoff parameter `α` ≥ 0 of the policies and greedy mechanisms, Γ = ρ + α·scale (default 3)")
	fs.IntVar(&m.opts.Rounds, "rounds", d.Rounds, "number of rounds R of dp_sips")
	fs.BoolVar(&m.opts.AllowUnproven, "allow-unproven", false, "run a mechanism that has no privacy proof (greedy_*_unproven); its output carries NO privacy guarantee")
	if withData {
		fs.StringVar(&m.Public, "public", "", "public frequency table for greedy_public: lines ITEM[<TAB>COUNT] (.gz allowed); must not come from the protected data")
		fs.StringVar(&m.Seed, "seed", "", "seed the random source (tests only: the run becomes reproducible and therefore NOT private)")
	}
}

// MechanismNames returns the names of the set-union mechanisms a batch
// command may run: those with a privacy proof, and those without one, which
// run only with --allow-unproven. Disabled mechanisms (policy_gaussian_l1,
// whose proof is false) are in neither list.
func MechanismNames() (proven, unproven []string) {
	for _, k := range setunion.Mechanisms() {
		switch {
		case k.Disabled() != nil:
		case k.Unproven() != nil:
			unproven = append(unproven, string(k))
		default:
			proven = append(proven, string(k))
		}
	}
	return proven, unproven
}

// OptionalFloat returns a flag.Value for *p, a float that is nil until the
// flag is given; flag.PrintDefaults shows no default for it (the usage text
// says what not giving it means).
func OptionalFloat(p **float64) flag.Value { return optionalFloat{p} }

type optionalFloat struct{ p **float64 }

func (f optionalFloat) String() string {
	if f.p == nil || *f.p == nil {
		return ""
	}
	return strconv.FormatFloat(**f.p, 'g', -1, 64)
}

func (f optionalFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*f.p = &v
	return nil
}

// Options validates the flags and returns the core options, with the public
// frequency table of --public read into Options.Public.
func (m *MechanismFlags) Options() (setunion.Options, error) {
	o, err := m.BaseOptions()
	if err != nil || m.Public == "" {
		return o, err
	}
	if o.Public, err = ReadPublic(m.Public); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// BaseOptions validates the flags like Options but does not read the --public
// table: for greedy_public, Options.Public is an empty table that stands in
// for it (calibration does not read it), and the caller reads m.Public itself
// (dpsql-beam reads it inside its pipeline).
func (m *MechanismFlags) BaseOptions() (setunion.Options, error) {
	o := m.opts
	_ = o.Set("mechanism", string(o.Mechanism)) // the flag's text, normalised as every edge does
	mech, err := setunion.ParseMechanism(string(o.Mechanism))
	if err != nil {
		return setunion.Options{}, err
	}
	switch {
	case m.Public != "" && !publicTable(mech):
		return o, fmt.Errorf("--public is only used by --mechanism greedy_public")
	case m.Public == "" && publicTable(mech) && m.withData:
		return o, fmt.Errorf("--mechanism %s needs --public FILE, a public frequency table not derived from the input", mech)
	}
	if publicTable(mech) {
		o.Public = map[string]float64{} // calibration does not read the table
	}
	return o, o.Validate()
}

func publicTable(m setunion.Mechanism) bool {
	return m == setunion.GreedyPublic || m == setunion.GreedyPublicUnproven
}

// WarnUnproven prints to stderr, when m has no privacy proof, that the run
// carries no privacy guarantee and why.
func WarnUnproven(stderr io.Writer, m setunion.Mechanism) {
	if err := m.Unproven(); err != nil {
		fmt.Fprintf(stderr, "WARNING: --allow-unproven: this release has NO differential privacy guarantee. %v\n", err)
	}
}

// Rand returns the random source of the run: crypto/rand, or with --seed a
// seeded source, after printing a warning that the run is not private.
func (m *MechanismFlags) Rand(stderr io.Writer) (*rand.Rand, error) {
	return Rand(m.Seed, stderr)
}

// Rand returns the random source of a run given the text of a --seed flag:
// crypto/rand when seed is empty, else a seeded source, after printing a
// warning that the run is not private.
func Rand(text string, stderr io.Writer) (*rand.Rand, error) {
	if text == "" {
		return securerand.New(), nil
	}
	seed, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("--seed must be a non-negative integer, got %q", text)
	}
	fmt.Fprintf(stderr, "WARNING: --seed %d makes this run reproducible and therefore NOT differentially private; use it only for tests\n", seed)
	return securerand.NewSeeded(seed), nil
}

// ReadPublic reads a public frequency table: one item per line, optionally
// followed by a tab and a count (default 1); repeated items add up.
func ReadPublic(path string) (map[string]float64, error) {
	r, err := tabfile.Open(path, tabfile.TSV)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := make(map[string]float64)
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		c := 1.0
		if len(f) > 1 {
			c, err = strconv.ParseFloat(string(bytes.TrimSpace(f[1])), 64)
			if err != nil || c < 0 || math.IsInf(c, 0) || math.IsNaN(c) {
				return nil, fmt.Errorf("%s:%d: count %q is not a non-negative number", path, r.Line(), f[1])
			}
		}
		out[string(f[0])] += c
	}
}

// WriteLines writes one string per line.
func WriteLines(w io.Writer, lines []string) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, l := range lines {
		bw.WriteString(l)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
