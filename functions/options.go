package functions

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Option is one key=value pair of an options string such as
// 'epsilon=1, delta=1e-6, max_items=50'. Key is lower-cased; both are
// trimmed of surrounding space.
type Option struct {
	Key   string
	Value string
}

// SplitOptions tokenises an options string: key=value pairs separated by
// commas, keys case-insensitive, surrounding space ignored, empty pairs (a
// trailing comma) skipped. It rejects a pair without '=', an empty key or
// value, a value holding another '=' (a missing comma) and a key given twice.
// fn names the SQL function in error messages.
func SplitOptions(fn, s string) ([]Option, error) {
	var out []Option
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: option %q has no value: write key=value pairs separated by commas, e.g. 'epsilon=1, delta=1e-6'", fn, part)
		case k == "":
			return nil, fmt.Errorf("%s: option %q has no name: write key=value pairs separated by commas, e.g. 'epsilon=1, delta=1e-6'", fn, part)
		case v == "":
			return nil, fmt.Errorf("%s: option %s has an empty value", fn, k)
		case strings.Contains(v, "="):
			return nil, fmt.Errorf("%s: option %s has the value %q, which contains '=': separate options with commas", fn, k, v)
		}
		for _, o := range out {
			if o.Key == k {
				return nil, fmt.Errorf("%s: option %s is given twice", fn, k)
			}
		}
		out = append(out, Option{Key: k, Value: v})
	}
	return out, nil
}

// OptionSet is the set of options a SQL function accepts: each key with a
// typed setter. DP_SET_UNION uses the keys of AddSetUnion; a function that
// needs more keys (DP_NGRAMS: max_n, eta, budget_split) adds them with Int,
// Float and String before calling Parse.
type OptionSet struct {
	fn    string
	keys  []string
	apply map[string]func(string) error
}

// NewOptionSet returns an empty set for the SQL function fn (used in errors).
func NewOptionSet(fn string) *OptionSet {
	return &OptionSet{fn: fn, apply: map[string]func(string) error{}}
}

// Keys lists the accepted keys in the order they were added.
func (s *OptionSet) Keys() []string { return slices.Clone(s.keys) }

// Func adds key with a setter that parses its value; the setter's error is
// reported as "FN: option KEY: ERR".
func (s *OptionSet) Func(key string, set func(value string) error) {
	key = strings.ToLower(key)
	if _, dup := s.apply[key]; dup {
		panic("functions: option " + key + " added twice")
	}
	s.keys = append(s.keys, key)
	s.apply[key] = set
}

// Float adds a key whose value is a finite number stored in *dst (parsed
// as setunion.Options.Set parses its numbers: setunion.ParseFloat).
func (s *OptionSet) Float(key string, dst *float64) {
	s.Func(key, func(v string) error {
		f, err := setunion.ParseFloat(v)
		if err != nil {
			return err
		}
		*dst = f
		return nil
	})
}

// Int adds a key whose value is an integer stored in *dst (setunion.ParseInt).
func (s *OptionSet) Int(key string, dst *int) {
	s.Func(key, func(v string) error {
		n, err := setunion.ParseInt(v)
		if err != nil {
			return err
		}
		*dst = n
		return nil
	})
}

// String adds a key whose value is stored in *dst as given.
func (s *OptionSet) String(key string, dst *string) {
	s.Func(key, func(v string) error { *dst = v; return nil })
}

// Parse applies every pair of the options string; keys not in the set, bad
// values and repeated keys are errors that name the key and what is allowed.
func (s *OptionSet) Parse(options string) error {
	pairs, err := SplitOptions(s.fn, options)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		set, ok := s.apply[p.Key]
		if !ok {
			return fmt.Errorf("%s: unknown option %q: the options are %s", s.fn, p.Key, strings.Join(s.keys, ", "))
		}
		if err := set(p.Value); err != nil {
			return fmt.Errorf("%s: option %s: %w", s.fn, p.Key, err)
		}
	}
	return nil
}

// AddSetUnion adds the keys epsilon, delta, max_items, mechanism, alpha and
// rounds, which set o through setunion.Options.Set (alpha also accepts "default").
func (s *OptionSet) AddSetUnion(o *setunion.Options) {
	s.SetUnionKeys(o, setunion.OptionKeys()...)
}

// SetUnionKeys adds the given keys of setunion.OptionKeys, which set o
// through setunion.Options.Set: a function that shares some of
// DP_SET_UNION's keys (DP_NGRAMS: all but rounds) parses them as
// DP_SET_UNION does.
func (s *OptionSet) SetUnionKeys(o *setunion.Options, keys ...string) {
	for _, key := range keys {
		if !slices.Contains(setunion.OptionKeys(), key) {
			panic("functions: " + key + " is not a set-union option")
		}
		s.Func(key, func(v string) error { return o.Set(key, v) })
	}
}

// noteStatementOptions records, for DP_EXPLAIN's source.* rows, that the
// set-union options a function call's (parsed) options string gives come
// from the statement: they win over the hints, the session, and the
// configured defaults the call's context carries (dpvars.Origin).
func noteStatementOptions(ctx *sql.Context, options string) {
	pairs, _ := SplitOptions("", options)
	for _, p := range pairs {
		if slices.Contains(setunion.OptionKeys(), p.Key) {
			dpvars.SetOrigin(ctx, "dp_"+p.Key, dpvars.OriginStatement)
		}
	}
}
