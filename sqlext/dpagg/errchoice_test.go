package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// choicePipeline builds a pipeline over rows whose clamping bounds start at
// the fixed first-pass choice c (as ChooseValueBounds would leave it, with
// no randomness), groups it and returns it.
func choicePipeline(t *testing.T, o Options, c *Chosen, rows []row) *Pipeline {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	cc := *c
	cc.Bounds = append([][2]float64(nil), c.Bounds...)
	p.valueStats, p.valueUsers = nil, nil
	p.chosen = &cc
	p.cands = valueCandidates(o, &cc)
	if err := p.replan(&cc); err != nil {
		t.Fatal(err)
	}
	for _, rw := range rows {
		if err := p.Add([]byte(rw.unit), []byte(rw.key), rw.values); err != nil {
			t.Fatal(err)
		}
	}
	p.group()
	return p
}

// TestErrorChoiceSensitivity: on random neighbouring databases (one user
// removed), every statistic X_i of the error-minimising searches of m and
// of the clamping bounds (errchoice.go) moves by at most C = 2·⌈√Δ0_a⌉, the
// sensitivity their tests are calibrated to, for counts, sums, averages
// and spreads, with values at and beyond the bounds, NULL, NaN and ±Inf.
func TestErrorChoiceSensitivity(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 7))
	kinds := []Kind{CountRows, CountValues, Sum, Avg, StdDevPop, VarSamp}
	worst := 0.0
	for trial := range 300 {
		kind := kinds[trial%len(kinds)]
		nKeys := 1 + r.IntN(10)
		var db [][]row
		for u := range 2 + r.IntN(40) {
			db = append(db, genUser(r, fmt.Sprintf("u%d", u), nKeys, 1))
		}
		o := Defaults()
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
		o.Aggregates = []Aggregate{{Kind: kind, AutoBounds: kind.NeedsBounds()}}
		d := 1 + r.IntN(6)
		u0 := math.Ldexp(1, r.IntN(12)-3)
		lo := 0.0
		if r.IntN(2) == 0 {
			lo = -u0
		}
		c := &Chosen{MaxGroupsContributed: d, AggregateGroups: d, MaxRowsPerGroup: 1 << r.IntN(4), Bounds: [][2]float64{{lo, u0}}}
		if !kind.NeedsBounds() {
			c.Bounds = nil
		}
		drop := r.IntN(len(db))
		var full, less []row
		for u, rows := range db {
			full = append(full, rows...)
			if u != drop {
				less = append(less, rows...)
			}
		}
		pa, pb := choicePipeline(t, o, c, full), choicePipeline(t, o, c, less)
		if pa.plan.statGroups() != d {
			t.Fatalf("aggregates' Δ0 %d, want %d", pa.plan.statGroups(), d)
		}
		capC := 2 * math.Ceil(math.Sqrt(float64(d)))
		check := func(what string, xa, xb []float64, ta, tb float64) {
			if len(xa) != len(xb) || ta != tb {
				t.Fatalf("trial %d %s: candidates or threshold differ between neighbours (%d, %d; %v, %v)", trial, what, len(xa), len(xb), ta, tb)
			}
			for i := range xa {
				diff := math.Abs(xa[i] - xb[i])
				worst = max(worst, diff/capC)
				if diff > capC*(1+1e-12) || xa[i] < 0 || xb[i] < 0 {
					t.Fatalf("trial %d %s (%s): X_%d = %v and %v on neighbours, beyond C = %v", trial, what, kind, i, xa[i], xb[i], capC)
				}
			}
		}
		_, xa, ta := pa.rowsErrorStats(pa.choiceKeys(d), 0, capC)
		_, xb, tb := pb.rowsErrorStats(pb.choiceKeys(d), 0, capC)
		check("m", xa, xb, ta, tb)
		if kind.NeedsBounds() {
			xa, ta := pa.valueErrorStats(pa.choiceKeys(d), 0, capC)
			xb, tb := pb.valueErrorStats(pb.choiceKeys(d), 0, capC)
			check("bound", xa, xb, ta, tb)
		}
	}
	t.Logf("largest |X − X'|/C over 300 pairs of neighbours: %.3f", worst)
}

// TestMarginalSearchTests: the searches use at most their planned tests
// whatever the statistics (a panic otherwise), and a statistic far below
// or above the threshold steps to the last candidate or stays at the first.
func TestMarginalSearchTests(t *testing.T) {
	for _, n := range []int{2, 6, 17, 32} {
		planned := valueErrorTests
		if n > valueCandidateCount {
			planned = rowsErrorTests
		}
		for _, x := range []float64{-1e9, 1e9} {
			tt := &tester{rng: securerand.NewSeeded(1), sigma: 1, left: planned}
			got := tt.marginalSearch(n, 0, 1, func(int) float64 { return x })
			want := 0
			if x < 0 {
				want = n - 1
			}
			if got != want {
				t.Errorf("n=%d x=%v: index %d, want %d", n, x, got, want)
			}
		}
	}
}

// TestPairSquares: a spread pair's second moment about 0 at each
// candidate, recovered from its sums of x and x² about the candidate's
// midpoint, is Σ clamp(v)² (to the row grids' rounding), for ranges
// starting at 0 and symmetric ones.
func TestPairSquares(t *testing.T) {
	vals := []float64{0.5, 3, 7.25, 12, -2, 100}
	for _, signed := range []bool{false, true} {
		col := column{kind: StdDevPop, off: 1}
		for _, u := range []float64{16, 8, 4} {
			lo := 0.0
			if signed {
				lo = -u
			}
			col.cands = append(col.cands, newCandidate(StdDevPop, lo, u))
		}
		e := make([]uint64, col.off+1+len(col.cands)*col.words())
		for _, v := range vals {
			col.addValue(e, v, 2)
			e[col.off] += 2
		}
		for j, cd := range col.cands {
			var want float64
			for _, v := range vals {
				c := min(max(v, cd.lower), cd.upper)
				want += 2 * c * c
			}
			got, nn := pairSquares(&col, e, j)
			if nn != 12 || math.Abs(got-want) > 1e-6*want {
				t.Errorf("signed %v, candidate [%g, %g]: %v (%d rows), want %v", signed, cd.lower, cd.upper, got, nn, want)
			}
		}
	}
}
