package dpagg

import (
	"os"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// TestSelectionKeysTable measures what the GROUP BY key selection releases
// with the former default (policy_gaussian_l2, α = 3) and the current one
// (dp_sips on the kept pairs): mean keys released over seeds, COUNT(*) at
// ε = 1, δ = 1e-6, on the synthetic searches table (GROUP BY country) and
// on git_python_ecosystem's words, at the defaults (bounds chosen
// privately) and at fixed Δ0. It takes minutes and runs only when
// DPSQL_SELECTION is set (docs/privacy.md, "GROUP BY key selection"):
//
//	DPSQL_SELECTION=1 go test -count=1 -timeout 30m -run TestSelectionKeysTable -v ./sqlext/dpagg
func TestSelectionKeysTable(t *testing.T) {
	if os.Getenv("DPSQL_SELECTION") == "" {
		t.Skip("set DPSQL_SELECTION=1 to measure the keys the selection mechanisms release (minutes)")
	}
	const seeds = 4
	for _, tc := range []struct {
		table *accTable
		d0s   []int
	}{{searchesTable(), []int{0, 1}}, {pythonTable(t), []int{0, 10, 100}}} {
		for _, d0 := range tc.d0s {
			for _, m := range []setunion.Mechanism{setunion.PolicyGaussianL2, setunion.DPSIPS} {
				keys, pairs := 0.0, 0.0
				for s := range seeds {
					o := Defaults()
					o.MaxGroupsContributed, o.MaxRowsPerGroup = d0, 1
					if d0 == 0 {
						o.MaxRowsPerGroup = 0
					}
					o.Mechanism = m
					o.Aggregates = []Aggregate{{Kind: CountRows}}
					p, err := New(o)
					if err != nil {
						t.Fatal(err)
					}
					vals := make([]Value, 1)
					for _, r := range tc.table.rows {
						if err := p.Add(tc.table.users[r.u], tc.table.keys[r.k], vals); err != nil {
							t.Fatal(err)
						}
					}
					res, err := p.Release(securerand.NewSeeded(uint64(500 + s)))
					if err != nil {
						t.Fatal(err)
					}
					keys += float64(len(res.Rows)) / seeds
					pairs += float64(res.Stats.Pairs) / seeds
				}
				t.Logf("%s, Δ0 = %d (0: chosen privately), %s: %.1f keys released (mean of %d seeds)", tc.table.name, d0, m, keys, seeds)
			}
		}
	}
}
