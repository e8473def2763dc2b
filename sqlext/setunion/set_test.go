package setunion

import (
	"strings"
	"testing"
)

// TestSet: every edge's text becomes the same Options, and Validate, not
// Set, refuses values out of range.
func TestSet(t *testing.T) {
	o := Defaults()
	for _, kv := range [][2]string{{"Epsilon", " 0.5 "}, {"delta", "1e-7"}, {"MAX_ITEMS", "50"}, {"mechanism", " Policy_Gaussian_L2"}, {"alpha", "2.5"}, {"rounds", "4"}} {
		if err := o.Set(kv[0], kv[1]); err != nil {
			t.Fatalf("Set(%q, %q): %v", kv[0], kv[1], err)
		}
	}
	if o.Epsilon != 0.5 || o.Delta != 1e-7 || o.MaxItems != 50 || o.Mechanism != PolicyGaussianL2 || o.Alpha == nil || *o.Alpha != 2.5 || o.Rounds != 4 {
		t.Fatalf("got %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Set("alpha", "DEFAULT"); err != nil || o.Alpha != nil {
		t.Fatalf("alpha=default: %v %v", err, o.Alpha)
	}
	for _, c := range []struct{ key, value, want string }{
		{"epsilon", "abc", `"abc" is not a finite number`},
		{"delta", "NaN", `"NaN" is not a finite number`},
		{"max_items", "1.5", `"1.5" is not an integer`},
		{"rounds", "99999999999", `"99999999999" is not an integer`},
		{"noise", "laplace", `unknown option "noise": the options are epsilon, delta, max_items, mechanism, alpha, rounds`},
	} {
		if err := o.Set(c.key, c.value); err == nil || err.Error() != c.want {
			t.Errorf("Set(%q, %q) = %v, want %s", c.key, c.value, err, c.want)
		}
	}
	o = Defaults()
	if err := o.Set("mechanism", "magic"); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), `unknown mechanism "magic": use one of count_laplace`) {
		t.Fatalf("Validate: %v", err)
	}
	o = Defaults()
	_ = o.Set("epsilon", "0")
	if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), "epsilon must be a finite number greater than 0") {
		t.Fatalf("Validate: %v", err)
	}
}
