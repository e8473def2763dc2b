package dpvars

import (
	"testing"

	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// TestNoiseAfterBoundsParam: dp_noise_after_bounds is OFF by default (a
// basic-composition deployment turns it on in its table defaults) and
// reaches dpagg.Options; its values read as MySQL writes them.
func TestNoiseAfterBoundsParam(t *testing.T) {
	a := DefaultAggregateParams()
	if a.NoiseAfterBounds {
		t.Fatal("dp_noise_after_bounds is not OFF by default")
	}
	for _, on := range []bool{true, false} {
		a.NoiseAfterBounds = on
		o, err := AggregateOptions(DefaultSetUnion(), a, []dpagg.Kind{dpagg.CountRows})
		if err != nil || o.NoiseAfterBounds != on {
			t.Errorf("param %v: options %v, %v", on, o.NoiseAfterBounds, err)
		}
	}
	for v, want := range map[any]bool{int8(1): true, int8(0): false, int64(0): false, "ON": true, "off": false, true: true, "TRUE": true, "0": false} {
		if got := asBool(v, !want); got != want {
			t.Errorf("asBool(%#v) = %v, want %v", v, got, want)
		}
	}
	if !asBool("maybe", true) || asBool(3.5, false) {
		t.Error("an unreadable value did not give the default")
	}
}
