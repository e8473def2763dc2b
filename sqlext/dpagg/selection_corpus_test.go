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
			for _, v := range selectionVariants(d0) {
				keys := 0.0
				for s := range seeds {
					o := Defaults()
					o.MaxGroupsContributed, o.MaxRowsPerGroup = d0, 1
					if d0 == 0 {
						o.MaxRowsPerGroup = 0
					}
					o.Mechanism, o.Alpha = v.m, v.alpha
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
				}
				t.Logf("%s, Δ0 = %d (0: chosen privately), %s: %.1f keys released (mean of %d seeds)", tc.table.name, d0, v.name, keys, seeds)
			}
		}
	}
}

// selectionVariant is one key-selection mechanism of the table.
type selectionVariant struct {
	name  string
	m     setunion.Mechanism
	alpha *float64
}

// selectionVariants are the former default, the current one and, at
// Δ0 = 100, the other fixes considered: the policy with α = 6
// (Φ(−6) ≈ 1e-9) and weighted_gaussian (one uncapped round).
func selectionVariants(d0 int) []selectionVariant {
	v := []selectionVariant{{"policy_gaussian_l2 α = 3 (former default)", setunion.PolicyGaussianL2, nil}, {"dp_sips (default)", setunion.DPSIPS, nil}}
	if d0 == 100 {
		v = append(v, selectionVariant{"policy_gaussian_l2 α = 6", setunion.PolicyGaussianL2, setunion.Float(6)},
			selectionVariant{"weighted_gaussian", setunion.WeightedGaussian, nil})
	}
	return v
}

// BenchmarkSelectionRelease compares the release time (grouping, bounding,
// key selection and noise; not Add) of the former and the current key
// selection on git_python_ecosystem's words, COUNT(*) at Δ0 = 100:
//
//	go test -run '^$' -bench BenchmarkSelectionRelease -benchtime 3x -count 3 ./sqlext/dpagg
func BenchmarkSelectionRelease(b *testing.B) {
	tt := loadTokens(b)
	for _, m := range []setunion.Mechanism{setunion.PolicyGaussianL2, setunion.DPSIPS} {
		b.Run(string(m), func(b *testing.B) {
			o := Defaults()
			o.Mechanism = m
			o.Aggregates = []Aggregate{{Kind: CountRows}}
			vals := []Value{Null}
			for b.Loop() {
				b.StopTimer()
				p, _ := New(o)
				for _, r := range tt.rows {
					_ = p.Add(tt.users[r[0]], tt.words[r[1]], vals)
				}
				b.StartTimer()
				if _, err := p.Release(securerand.New()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
