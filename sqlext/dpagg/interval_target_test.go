package dpagg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Target (b) of issue 21: on a table where every user has one row per key,
// COUNT(*)'s 95 % interval with every bound chosen privately no wider than
// 1.5× the one of the best hand-set bounds (Δ0 = the most keys a user has,
// m = 1), at ε = 1, δ = 1e-6. A deployment's defaults decide the noise of
// both releases (docs/privacy.md §31), so the comparison is made at each
// ledger's own defaults:
//
//   - zCDP ledger (the default): dp_noise_after_bounds OFF, so the chosen
//     release's statistics are Gaussian and noise auto with hand-set bounds
//     is the Gaussian too (Options.GaussianAuto); both compose with the key
//     selection in zCDP (jointrho.go). Asserted ≤ 1.5×.
//   - basic-composition ledger: dp_noise_after_bounds ON, so the chosen
//     release takes whichever family is narrower after the bounds
//     (noisechoice.go) and noise auto with hand-set bounds is the family
//     narrowest at (ε_a, δ_a) (Laplace at Δ0 = 1). Asserted ≤ 1.5×.
//   - logged only: the zCDP ledger's chosen release against a hand-set one
//     that asks for dp_noise = 'laplace' (charged ε_a²/2 by a zCDP ledger,
//     20× the Gaussian's ρ at Δ0 = 1): 1.83× on the one-key table, and no
//     ρ-zCDP mechanism charged the default's ρ can meet 1.5× against it
//     (docs/privacy.md §31's lower bound).

// intervalDeployment is one ledger's defaults for the target.
type intervalDeployment struct {
	name       string
	nab, gauto bool  // Options.NoiseAfterBounds, Options.GaussianAuto
	hand       Noise // the hand-set release's noise
}

var intervalDeployments = []intervalDeployment{
	{"zCDP ledger's defaults", false, true, NoiseAuto},
	{"basic ledger's defaults", true, false, NoiseAuto},
	{"zCDP ledger's defaults against dp_noise = 'laplace' set by hand", false, true, Laplace},
}

// intervalRatios returns, per deployment, the chosen release's COUNT(*)
// 95 % half-width, the hand-set one's (Δ0 = handD0, m = 1) and what was
// chosen, on rows, with the release seeded by seed.
func intervalRatios(t *testing.T, rows []row, handD0 int, seed uint64) (chosen, hand []float64, what []*Chosen) {
	for _, dep := range intervalDeployments {
		o := Defaults()
		o.Aggregates = []Aggregate{{Kind: CountRows}}
		o.NoiseAfterBounds, o.GaussianAuto = dep.nab, dep.gauto
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
		p := feed(t, o, rows)
		res, err := p.Release(securerand.NewSeeded(seed))
		if err != nil {
			t.Fatal(err)
		}
		chosen = append(chosen, p.Plan().Aggregates[0].HalfWidth95)
		what = append(what, res.Chosen)
		o.MaxGroupsContributed, o.MaxRowsPerGroup, o.Noise = handD0, 1, dep.hand
		p = feed(t, o, rows)
		if _, err := p.Release(securerand.NewSeeded(seed)); err != nil {
			t.Fatal(err)
		}
		hand = append(hand, p.Plan().Aggregates[0].HalfWidth95)
	}
	return chosen, hand, what
}

// checkIntervalTarget logs every deployment's ratio and fails when one of
// the ledgers' own defaults (the first two) is above 1.5×.
func checkIntervalTarget(t *testing.T, table string, chosen, hand []float64, what []*Chosen) {
	t.Helper()
	for i, dep := range intervalDeployments {
		ratio := chosen[i] / hand[i]
		t.Logf("%s, %s: COUNT(*) 95 %% half-width %.4g chosen (%s) against %.4g hand-set: %.2f× (target ≤ 1.5×)", table, dep.name, chosen[i], what[i], hand[i], ratio)
		if dep.hand == NoiseAuto && ratio > 1.5 {
			t.Errorf("%s, %s: interval %.2f× the hand-set one's, want ≤ 1.5×", table, dep.name, ratio)
		}
	}
}

// TestOneKeyPerUserInterval measures target (b) on a table where every user
// has one row under one key (20,000 users, one country each among 50). The
// choice finds Δ0 = m = 1 (asserted). Measured: ±11 against ±11 at the
// zCDP ledger's defaults (1.00×), ±9 against ±6 at a basic ledger's
// (1.50×: integer half-widths of the discrete Laplace at ε_L = 0.330 and
// ε_a = 0.5), and ±11 against a hand-set Laplace's ±6 (1.83×, logged).
func TestOneKeyPerUserInterval(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	zipf := rand.NewZipf(r, 1.2, 1, 49)
	var rows []row
	for u := range 20_000 {
		rows = append(rows, row{unit: fmt.Sprint(u), key: fmt.Sprintf("c%d", zipf.Uint64()), values: []Value{Null}})
	}
	chosen, hand, what := intervalRatios(t, rows, 1, 1)
	for i, c := range what {
		if c == nil || c.MaxGroupsContributed != 1 || c.MaxRowsPerGroup != 1 || c.AggregateGroups != 1 {
			t.Fatalf("%s: chosen %v, want Δ0 = m = 1", intervalDeployments[i].name, c)
		}
	}
	checkIntervalTarget(t, "one row per user", chosen, hand, what)
}

// TestChosenBoundsOneRowPerKey is target (b) on a table where every user
// has one row per key under 1 to 5 keys (20,000 users); the best hand-set
// bounds are m = 1, Δ0 = 5. Measured over 5 seeds: ±27 against ±24 at the
// zCDP ledger's defaults (1.13×; the choice finds Δ0 = 6), ±45 against ±30
// at a basic ledger's (1.50×), ±27 against a hand-set Laplace's ±30 (0.90×).
func TestChosenBoundsOneRowPerKey(t *testing.T) {
	var rows []row
	for u := range 20000 {
		for k := range 1 + u%5 {
			rows = append(rows, row{unit: fmt.Sprintf("u%d", u), key: fmt.Sprintf("k%d", (u+k)%50), values: []Value{Null}})
		}
	}
	for seed := range uint64(5) {
		chosen, hand, what := intervalRatios(t, rows, 5, seed+1)
		checkIntervalTarget(t, fmt.Sprintf("1 to 5 keys per user, seed %d", seed), chosen, hand, what)
	}
}
