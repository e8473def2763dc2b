package dpagg

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/explain"
)

// TestFacts checks that the facts carry the plan's numbers: the selection's
// mechanism and, per aggregate, the noise's scale and 95 % half-width.
func TestFacts(t *testing.T) {
	o := Defaults()
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Avg, Lower: 0, Upper: 10}}
	p, err := Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range p.Facts() {
		got[f.Name] = f.Value
	}
	for _, name := range []string{"selection.mechanism", "selection.users_for_50pct", "aggregate_1.noise_scale", "aggregate_1.ci95_half_width",
		"aggregate_2.count.stddev", "aggregate_2.normalized_sum.ci95_half_width", "aggregate_2.ci95_half_width"} {
		if got[name] == "" {
			t.Errorf("no %s in %v", name, got)
		}
	}
	if got["aggregate_1.ci95_half_width"] != formatted(p.Aggregates[0].Stats[0].HalfWidth95) || !strings.HasPrefix(got["aggregate_2.kind"], "avg of values clamped to [0, 10]") {
		t.Errorf("facts %v", got)
	}
}

func formatted(x float64) string { return explain.Number(x) }
