package dpvars

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

func TestSetUnionParamsValidation(t *testing.T) {
	for _, c := range []struct {
		mod  func(*SetUnionParams)
		want string
	}{
		{func(p *SetUnionParams) { p.Epsilon = 0 }, "epsilon must be a finite number greater than 0, got 0"},
		{func(p *SetUnionParams) { p.Delta = 0 }, "delta must be greater than 0 and less than 1, got 0"},
		{func(p *SetUnionParams) { p.MaxItems = -1 }, "max_items must be an integer from 1 to 1000000, or 0 to choose it privately from the data, got -1"},
		{func(p *SetUnionParams) { p.Mechanism = "greedy_frequency_unproven" }, "mechanism greedy_frequency_unproven is unproven: "},
		{func(p *SetUnionParams) { p.Alpha = setunion.Float(-0.5) }, "alpha must be a finite number ≥ 0, got -0.5"},
		{func(p *SetUnionParams) { p.Rounds = 0 }, "rounds must be an integer from 1 to 100, got 0"},
		{func(p *SetUnionParams) { p.Mechanism = "greedy_public" }, "mechanism greedy_public needs a public frequency table, which SQL functions cannot take: choose another mechanism (greedy_frequency is the closest)"},
	} {
		p := DefaultSetUnionParams()
		c.mod(&p)
		if _, err := p.Options(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

func TestDefaultsShared(t *testing.T) {
	d := setunion.Defaults()
	p := DefaultSetUnionParams()
	o, err := p.Options()
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
