package functions

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dpsql/dpsql/dpvars"
)

// FuzzOptions feeds arbitrary option strings to the parser DP_SET_UNION and
// DP_NGRAMS share. It must never panic; what it accepts must round-trip
// (every accepted key is a known one, given once) and then either validate
// or fail validation with an error, never a panic.
func FuzzOptions(f *testing.F) {
	for _, s := range []string{
		"", "epsilon=1", "epsilon=1, delta=1e-6, max_items=50, mechanism=policy_gaussian_l2, alpha=5, rounds=3",
		"EPSILON = 0.5 ,", "epsilon=1,epsilon=2", "delta", "=1", "mechanism=", "max_items=1e3", "alpha=-0",
		"epsilon=NaN", "epsilon=inf", "max_items=99999999999999999999", "rounds=0x10", "a=b=c", ",,,",
		"mechanism=POLICY_GAUSSIAN_L1", "mechanism=dp_sips, rounds=100", "epsilon=1\x00", "ε=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pairs, err := SplitOptions("DP_SET_UNION", s)
		if err == nil {
			seen := map[string]bool{}
			for _, p := range pairs {
				if p.Key == "" || p.Value == "" || seen[p.Key] || strings.ContainsAny(p.Key, ",=") {
					t.Fatalf("SplitOptions(%q) accepted %+v", s, pairs)
				}
				seen[p.Key] = true
			}
		}
		p := dpvars.DefaultSetUnion()
		set := NewOptionSet("DP_SET_UNION")
		set.AddSetUnion(&p)
		if err := set.Parse(s); err != nil {
			if err.Error() == "" || (utf8.ValidString(s) && !utf8.ValidString(err.Error())) {
				t.Fatalf("bad error for %q: %q", s, err)
			}
			return
		}
		if o, err := dpvars.CheckSetUnion(p); err == nil {
			if verr := o.Validate(); verr != nil {
				t.Fatalf("CheckSetUnion accepted %q but Validate refuses: %v", s, verr)
			}
		}
	})
}
