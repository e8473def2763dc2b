package planner_test

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/planner"
)

// TestGaussianAutoHandSetBounds: a global COUNT(*) with every bound set
// takes the Gaussian under noise auto when dp_noise_after_bounds is OFF
// (the zCDP ledger's default), which DP_EXPLAIN shows and the ledger is
// charged its ρ for, and keeps Laplace where a basic-composition
// deployment turns the variable ON for the table.
func TestGaussianAutoHandSetBounds(t *testing.T) {
	const q = "SELECT /*+ SET_VAR(dp_max_rows_per_group = 1) */ COUNT(*) FROM visits"
	on := &dpvars.TableDefaults{Vars: map[string]any{dpvars.VarNoiseAfterBounds: true}}
	rho := map[bool]float64{}
	for _, basic := range []bool{false, true} {
		gov := &fakeGov{budget: 100}
		e := buildPolicyEngine(t, gov, true, planner.WithTableDefaults(func(db, table string) *dpvars.TableDefaults {
			if basic && strings.EqualFold(table, "visits") {
				return on
			}
			return nil
		}))
		if _, err := query(t, e, "analyst", q); err != nil || len(gov.charged) != 1 {
			t.Fatalf("basic %v: %v, %d charges", basic, err, len(gov.charged))
		}
		rho[basic] = gov.charged[0].Cost.Rho
		rows, err := query(t, e, "analyst", "SELECT parameter, value FROM DP_EXPLAIN('"+strings.ReplaceAll(q, "'", "''")+"') WHERE parameter IN ('aggregates_noise', 'aggregates_noise_choice')")
		if err != nil {
			t.Fatal(err)
		}
		got := flat(rows)
		want := "discrete gaussian"
		if basic {
			want = "discrete laplace"
		}
		if !strings.Contains(got, want) || strings.Contains(got, "aggregates_noise_choice") == basic {
			t.Errorf("basic %v: DP_EXPLAIN %s, want %s and the choice shown only under zCDP", basic, got, want)
		}
		t.Logf("basic %v: %s; ρ charged %v", basic, got, rho[basic])
	}
	if !(rho[false] < rho[true]/10) {
		t.Errorf("ρ charged %v with the Gaussian, %v with Laplace", rho[false], rho[true])
	}
}
