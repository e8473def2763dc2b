package dpagg

import (
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestIntervalCoverage is the statistical test of the released intervals:
// over 10,000 seeded draws per case, the 95 % interval of COUNT(*) and
// SUM covers the noiseless total 95 ± 1 % of the time, for discrete
// Laplace and discrete Gaussian noise (the only noises dpagg uses), per
// key and global; AVG's interval covers the noiseless mean at least 95 %
// of the time (it is conservative by construction).
func TestIntervalCoverage(t *testing.T) {
	runs := 10_000
	if testing.Verbose() && os.Getenv("COVERAGE_RUNS") != "" {
		runs, _ = strconv.Atoi(os.Getenv("COVERAGE_RUNS"))
	}
	cases := []struct {
		name   string
		noise  Noise
		global bool
		eps    float64
		chosen bool // bounds chosen privately (Δ0 = 1): the Laplace branch of noisechoice.go
	}{
		{"laplace", Laplace, false, 1, false},
		{"gaussian", Gaussian, false, 1, false},
		{"laplace global", Laplace, true, 0.5, false},
		{"gaussian global", Gaussian, true, 2, false},
		{"chosen bounds, laplace branch", NoiseAuto, false, 1, true},
	}
	for ci, c := range cases {
		o := Defaults()
		o.Epsilon, o.Noise, o.Global = c.eps, c.noise, c.global
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 4, 3
		o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Sum, Lower: -2, Upper: 7.5}, {Kind: Avg, Lower: 0, Upper: 10}}
		if c.chosen {
			o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
			o.NoiseAfterBounds = true
			// COUNT and SUM (with AVG's two statistics the four shares make
			// Gaussian the narrower family even at Δ0 = 1).
			o.Aggregates = o.Aggregates[:2]
			o.Aggregates[1].AutoBounds = true
			o.chosen = &Chosen{MaxGroupsContributed: 1, MaxRowsPerGroup: 3, Bounds: [][2]float64{{}, {-2, 7.5}}, final: true}
		}
		plan, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		if c.chosen && plan.Noise != Laplace {
			t.Fatalf("%s: noise %s", c.name, plan.Noise)
		}
		r := securerand.NewSeeded(uint64(100 + ci))
		// Noiseless totals: 50,000 rows; a sum of 123,456.75; for AVG 20,000
		// rows centred sum −31,000 (mean 3.45).
		truth := [][]int64{{50_000}, {int64(123_456.75 / plan.Aggregates[1].Stats[0].Granularity)}}
		if len(plan.Aggregates) > 2 {
			truth = append(truth, []int64{20_000, int64(-31_000 / plan.Aggregates[2].Stats[1].Granularity)})
		}
		var covered [3]int
		for range runs {
			for ai := range plan.Aggregates {
				a := &plan.Aggregates[ai]
				noisy := make([]int64, len(a.Stats))
				for j := range a.Stats {
					v, err := a.Stats[j].addNoise(r, truth[ai][j])
					if err != nil {
						t.Fatal(err)
					}
					noisy[j] = v
				}
				lo, hi := a.interval(noisy)
				var want float64
				switch a.Kind {
				case Avg:
					want = 5 + float64(truth[ai][1])*a.Stats[1].Granularity/float64(truth[ai][0])
				case Sum:
					want = float64(truth[ai][0]) * a.Stats[0].Granularity
				default:
					want = float64(truth[ai][0])
				}
				if lo <= want && want <= hi {
					covered[ai]++
				}
			}
		}
		for ai, a := range plan.Aggregates {
			rate := float64(covered[ai]) / float64(runs)
			t.Logf("%s %s (noise σ %.4g): coverage %.4f", c.name, a.Kind, a.Stats[0].StdDev, rate)
			if a.Kind == Avg {
				if rate < 0.95-0.005 {
					t.Errorf("%s AVG: coverage %.4f, want ≥ 0.95", c.name, rate)
				}
				continue
			}
			if math.Abs(rate-0.95) > 0.01 {
				t.Errorf("%s %s: coverage %.4f, want 0.95 ± 0.01", c.name, a.Kind, rate)
			}
		}
	}
}

// TestReleaseIntervals: a release's rows carry each value's interval, the
// value inside it, and NaN for an aggregate without an interval rule.
func TestReleaseIntervals(t *testing.T) {
	o := Defaults()
	o.Global = true
	o.MaxRowsPerGroup = 2
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Sum, Lower: 0, Upper: 5}, {Kind: VarPop, Lower: 0, Upper: 5}}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for u := range 300 {
		if err := p.Add([]byte{byte(u), byte(u >> 8)}, nil, []Value{Null, Float(2), Float(3)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := p.Release(securerand.NewSeeded(5))
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	for i := range 2 {
		if !(row.Low[i] <= row.Values[i] && row.Values[i] <= row.High[i]) || row.Low[i] == row.High[i] {
			t.Errorf("aggregate %d: value %v outside its interval [%v, %v]", i+1, row.Values[i], row.Low[i], row.High[i])
		}
	}
	if !math.IsNaN(row.Low[2]) || !math.IsNaN(row.High[2]) {
		t.Errorf("VAR_POP interval [%v, %v], want NaN", row.Low[2], row.High[2])
	}
}
