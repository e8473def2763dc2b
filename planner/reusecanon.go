package planner

import "github.com/dpsql/dpsql/sqlext/setunion"

// canonicalSetUnion returns the set-union options of a release in the
// form its reuse specification encodes: every option that has a default
// meaning written as its effective value, so that two spellings of one
// release — DP_SET_UNION's 'alpha=default', which leaves Alpha nil, and
// the session's dp_alpha, which holds a cutoff (CutoffAlpha by default)
// that dp_sips and the other mechanisms without a cutoff never read;
// rounds given to a mechanism other than dp_sips, which has none; the
// server's allow_unproven switch, which only decides whether a release is
// refused — have one key and are charged once. Each replacement keeps
// what the mechanism computes: Alpha is read only through
// Options.alpha() (nil means Mechanism.DefaultAlpha()) and only for a
// mechanism with a cutoff (setunion's calibrate), Rounds only by
// dp_sips's calibration, AllowUnproven only by Validate. The options of
// opts are copied, never changed.
func canonicalSetUnion(opts []setunion.Options) []setunion.Options {
	out := make([]setunion.Options, len(opts))
	for i, o := range opts {
		switch {
		case !o.Mechanism.HasCutoff():
			o.Alpha = nil // read by no mechanism without a cutoff
		case o.Alpha == nil:
			o.Alpha = setunion.Float(o.Mechanism.DefaultAlpha())
		}
		if o.Mechanism != setunion.DPSIPS {
			o.Rounds = setunion.DefaultRounds
		}
		o.AllowUnproven = false
		out[i] = o
	}
	return out
}
