package setunion

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// optionKeys are the names Options.Set takes, in documentation order.
var optionKeys = []string{"epsilon", "delta", "max_items", "mechanism", "alpha", "rounds"}

// OptionKeys returns the names of the options Set takes, in documentation
// order: the keys of DP_SET_UNION's options string and of the
// configuration's defaults: section, and (with '-' for '_') the flags of
// dpsql union.
func OptionKeys() []string { return slices.Clone(optionKeys) }

// Set sets the option key (case-insensitive) from its text, as the SQL
// options string ('epsilon=1, max_items=50'), the dp_* session variables
// and the configuration's defaults: section give it: epsilon, delta and
// alpha a finite number (alpha also "default": nil, the mechanism's own),
// max_items and rounds an integer, mechanism a name (lower-cased; Validate
// reports an unknown one with the names that exist). Set checks only the
// form of the value; Validate checks ranges and combinations, so that every
// edge (SQL, flags, YAML) refuses the same values with the same words.
func (o *Options) Set(key, value string) error {
	v := strings.TrimSpace(value)
	var err error
	switch strings.ToLower(strings.TrimSpace(key)) {
	case "epsilon":
		o.Epsilon, err = ParseFloat(v)
	case "delta":
		o.Delta, err = ParseFloat(v)
	case "max_items":
		o.MaxItems, err = ParseInt(v)
	case "mechanism":
		o.Mechanism = Mechanism(strings.ToLower(v))
	case "alpha":
		if strings.EqualFold(v, "default") {
			o.Alpha = nil
			return nil
		}
		var a float64
		if a, err = ParseFloat(v); err == nil {
			o.Alpha = &a
		}
	case "rounds":
		o.Rounds, err = ParseInt(v)
	default:
		return fmt.Errorf("unknown option %q: the options are %s", key, strings.Join(optionKeys, ", "))
	}
	return err
}

// ParseFloat parses a finite decimal number ("1", "0.5", "1e-6"): the one
// parser of the options' numbers, for Set and for the options strings of
// the SQL functions (functions.OptionSet), whose extra keys (DP_NGRAMS'
// max_n, eta) thus refuse the same texts with the same words.
func ParseFloat(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", v)
	}
	return f, nil
}

// ParseInt parses a decimal integer that fits in 32 bits (every integer
// option's range does); ParseFloat's companion.
func ParseInt(v string) (int, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%q is not an integer", v)
	}
	return int(n), nil
}
