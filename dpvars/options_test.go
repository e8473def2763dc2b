package dpvars

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

func TestCheckSetUnion(t *testing.T) {
	for _, c := range []struct {
		mod  func(*setunion.Options)
		want string
	}{
		{func(p *setunion.Options) { p.Epsilon = 0 }, "epsilon must be a finite number greater than 0, got 0"},
		{func(p *setunion.Options) { p.Delta = 0 }, "delta must be greater than 0 and less than 1, got 0"},
		{func(p *setunion.Options) { p.MaxItems = -1 }, "max_items must be an integer from 1 to 1000000, or 0 to choose it privately from the data, got -1"},
		{func(p *setunion.Options) { p.Mechanism = "greedy_frequency_unproven" }, "mechanism greedy_frequency_unproven is unproven: "},
		{func(p *setunion.Options) { p.Alpha = setunion.Float(-0.5) }, "alpha must be a finite number ≥ 0, got -0.5"},
		{func(p *setunion.Options) { p.Rounds = 0 }, "rounds must be an integer from 1 to 100, got 0"},
		{func(p *setunion.Options) { p.Mechanism = "greedy_public" }, "mechanism greedy_public needs a public frequency table, which SQL functions cannot take: choose another mechanism (greedy_frequency is the closest)"},
	} {
		p := DefaultSetUnion()
		c.mod(&p)
		if _, err := CheckSetUnion(p); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

func TestDefaultsShared(t *testing.T) {
	d := setunion.Defaults()
	p := DefaultSetUnion()
	o, err := CheckSetUnion(p)
	if err != nil {
		t.Fatal(err)
	}
	if o.Mechanism != d.Mechanism || o.Epsilon != d.Epsilon || o.Delta != d.Delta || o.MaxItems != d.MaxItems || o.Rounds != d.Rounds || o.Alpha == nil || *o.Alpha != setunion.CutoffAlpha {
		t.Fatalf("session defaults %+v differ from setunion.Defaults %+v", o, d)
	}
	for _, v := range SystemVariables() {
		switch v.GetName() {
		case VarEpsilon:
			if v.GetDefault() != d.Epsilon {
				t.Errorf("%s default %v", v.GetName(), v.GetDefault())
			}
		case VarMaxItems:
			if v.GetDefault() != int64(d.MaxItems) {
				t.Errorf("%s default %v", v.GetName(), v.GetDefault())
			}
		}
	}
}
