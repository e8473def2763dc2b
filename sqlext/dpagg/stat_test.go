package dpagg

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// noiseDB is a database in which keys "a" and "b" are each held by 400
// users with one key each (Δ0 = 1), so that both are released with
// probability above 0.998, with rows and values that make every aggregate
// non-trivial.
func noiseDB(nAggs int) []row {
	var rows []row
	for u := range 800 {
		key := "a"
		if u%2 == 1 {
			key = "b"
		}
		for j := range 1 + u%3 {
			vals := make([]Value, nAggs)
			for i := range vals {
				vals[i] = Float(float64((u*7+j*3)%40) - 5)
			}
			rows = append(rows, row{unit: fmt.Sprintf("u%d", u), key: key, values: vals})
		}
	}
	return rows
}

// TestAggregateNoiseMatchesPlan: over many seeded releases, the noise of
// every count and sum (released value minus the bounded truth, in units of
// the granularity) fits the stated discrete distribution (χ² test) and its
// variance is the plan's StdDev²; AVG's spread matches the delta-method
// prediction from its two statistics.
func TestAggregateNoiseMatchesPlan(t *testing.T) {
	trials := 3000
	if testing.Short() {
		trials = 600
	}
	for _, nz := range []Noise{Laplace, Gaussian} {
		o := Defaults()
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 1, 2
		o.Noise = nz
		o.Epsilon = 2
		o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountUnits}, {Kind: CountValues},
			{Kind: Sum, Lower: -5, Upper: 30}, {Kind: Avg, Lower: 0, Upper: 20}}
		rows := noiseDB(len(o.Aggregates))
		truth := boundFixed(feed(t, o, rows), 1).totals // Δ0 = 1 and one key per user: no sampling
		plan := feed(t, o, rows).plan
		noises := make([][]int64, len(o.Aggregates)) // per aggregate, units of g
		var avgs []float64
		rng := securerand.NewSeeded(31)
		for range trials {
			res, err := feed(t, o, rows).Release(rng)
			if err != nil {
				t.Fatal(err)
			}
			for _, rw := range res.Rows {
				if rw.Key != "a" {
					continue
				}
				si := 0
				for ai, a := range plan.Aggregates {
					if a.Kind != Avg {
						g := a.Stats[0].Granularity
						noises[ai] = append(noises[ai], int64(math.Round(rw.Values[ai]/g))-truth["a"][si])
					} else {
						avgs = append(avgs, rw.Values[ai])
					}
					si += len(a.Stats)
				}
			}
		}
		if len(avgs) < trials*99/100 {
			t.Fatalf("%s: key a released in %d of %d trials", nz, len(avgs), trials)
		}
		si := 0
		for ai, a := range plan.Aggregates {
			st := &a.Stats[0]
			if a.Kind == Avg {
				checkAvgSpread(t, nz, a, truth["a"][si:si+2], avgs)
				si += 2
				continue
			}
			si++
			var cdf func(int64) float64
			if st.lap != nil {
				cdf = st.lap.CDF
			} else {
				cdf = st.gau.CDF
			}
			obs, exp := cdfBins(noises[ai], cdf, st.StdDev/st.Granularity)
			stat, pv := chiSquareP(obs, exp)
			v := variance(noises[ai]) * st.Granularity * st.Granularity
			want := st.StdDev * st.StdDev
			se := want * math.Sqrt(5/float64(len(noises[ai])))
			msg := fmt.Sprintf("%s %s: χ² = %.1f on %d bins (p = %.3g); noise sd %.4g, stated %.4g", nz, a.Kind, stat, len(exp), pv, math.Sqrt(v), st.StdDev)
			if pv < 1e-4 || math.Abs(v-want) > 6*se {
				t.Error(msg)
			} else {
				t.Log(msg)
			}
		}
	}
}

// checkAvgSpread compares the released AVG values with the normalised-mean
// estimator's delta-method spread: with count C and centred sum S (truth in
// units), AVG ≈ mid + gS/C and Var ≈ (g²Var_S + (gS/C)²Var_C)/C².
func checkAvgSpread(t *testing.T, nz Noise, a AggregatePlan, truth []int64, avgs []float64) {
	t.Helper()
	c, s := float64(truth[0]), float64(truth[1])*a.Stats[1].Granularity
	mid := (a.Lower + a.Upper) / 2
	want := mid + s/c
	vc, vs := a.Stats[0].StdDev*a.Stats[0].StdDev, a.Stats[1].StdDev*a.Stats[1].StdDev
	sd := math.Sqrt((vs + (s/c)*(s/c)*vc) / (c * c))
	var mean, m2 float64
	for _, v := range avgs {
		mean += v
	}
	mean /= float64(len(avgs))
	for _, v := range avgs {
		m2 += (v - mean) * (v - mean)
	}
	got := math.Sqrt(m2 / float64(len(avgs)))
	msg := fmt.Sprintf("%s avg: mean %.4f (truth %.4f), sd %.4f (delta method %.4f)", nz, mean, want, got, sd)
	if math.Abs(mean-want) > 6*sd/math.Sqrt(float64(len(avgs)))+1e-3 || math.Abs(got/sd-1) > 0.1 {
		t.Error(msg)
	} else {
		t.Log(msg)
	}
}

func variance(xs []int64) float64 {
	var s, s2 float64
	for _, x := range xs {
		f := float64(x)
		s += f
		s2 += f * f
	}
	n := float64(len(xs))
	return s2/n - (s/n)*(s/n)
}

// cdfBins bins integer samples into intervals of about sd/4 over ±5 sd (plus
// open tails), merging bins expecting fewer than 20 draws, with expected
// counts from cdf (P(Y ≤ y)).
func cdfBins(xs []int64, cdf func(int64) float64, sd float64) ([]int, []float64) {
	width := max(int64(1), int64(sd/4))
	lim := int64(5*sd) + 1
	var edges []int64 // bin i is (edges[i−1], edges[i]]
	for e := -lim - 1; e <= lim; e += width {
		edges = append(edges, e)
	}
	edges = append(edges, math.MaxInt64)
	n := float64(len(xs))
	exp := make([]float64, len(edges))
	prev := 0.0
	for i, e := range edges {
		c := 1.0
		if e != math.MaxInt64 {
			c = cdf(e)
		}
		exp[i] = (c - prev) * n
		prev = c
	}
	obs := make([]int, len(edges))
	for _, x := range xs {
		i, _ := slices.BinarySearch(edges, x)
		obs[i]++
	}
	var o []int
	var e []float64
	accO, accE := 0, 0.0
	for i := range edges {
		accO += obs[i]
		accE += exp[i]
		if accE >= 20 || i == len(edges)-1 {
			o, e = append(o, accO), append(e, accE)
			accO, accE = 0, 0
		}
	}
	if len(e) > 1 && e[len(e)-1] < 20 {
		e[len(e)-2] += e[len(e)-1]
		o[len(o)-2] += o[len(o)-1]
		e, o = e[:len(e)-1], o[:len(o)-1]
	}
	return o, e
}

func chiSquareP(obs []int, exp []float64) (float64, float64) {
	stat := 0.0
	for i := range exp {
		d := float64(obs[i]) - exp[i]
		stat += d * d / exp[i]
	}
	return stat, distuv.ChiSquared{K: float64(len(exp) - 1)}.Survival(stat)
}

// TestReleaseRateMatchesSelection: a key held by n users is released at the
// rate the selection mechanism's calibration states, P(H[x] + Z > ρ) with
// H[x] the key's histogram weight, and at the same rate as a private
// DISTINCT (setunion.Builder) with the selection's share of the budget.
func TestReleaseRateMatchesSelection(t *testing.T) {
	trials := 3000
	if testing.Short() {
		trials = 500
	}
	for _, m := range []setunion.Mechanism{setunion.PolicyGaussianL2, setunion.WeightedLaplace} {
		o := Defaults()
		o.Mechanism = m
		o.MaxGroupsContributed = 3
		o.Aggregates = []Aggregate{{Kind: CountRows}}
		plan, err := Calibrate(o)
		if err != nil {
			t.Fatal(err)
		}
		cal := plan.Selection
		for _, n := range []int{int(cal.Rho * 0.6), int(cal.Rho), int(cal.Rho * 1.3)} {
			// n users hold only "x"; n more hold "x" and two keys of their own,
			// so that bounding and the weighted rules matter.
			var rows []row
			for u := range 2 * n {
				rows = append(rows, row{unit: fmt.Sprint("u", u), key: "x", values: []Value{Null}})
				if u >= n {
					rows = append(rows, row{unit: fmt.Sprint("u", u), key: fmt.Sprint("own", u), values: []Value{Null}},
						row{unit: fmt.Sprint("u", u), key: fmt.Sprint("other", u), values: []Value{Null}})
				}
			}
			// Each user's keys number at most Δ0 = 3, so no sampling: the weight
			// of "x" is deterministic.
			b := boundFixed(feed(t, o, rows), 1)
			ids := map[string]uint32{}
			for key := range b.totals {
				ids[key] = uint32(len(ids))
			}
			w := selectionWeights(cal, b.kept, ids)[ids["x"]]
			p := cal.ReleaseProbability(w)
			rng := securerand.NewSeeded(uint64(41 + n))
			hits, distinct := 0, 0
			for range trials {
				res, err := feed(t, o, rows).Release(rng)
				if err != nil {
					t.Fatal(err)
				}
				if slices.ContainsFunc(res.Rows, func(r Row) bool { return r.Key == "x" }) {
					hits++
				}
				sb, _ := setunion.NewBuilder(plan.setunionOpts)
				for _, rw := range rows {
					sb.Add(rw.unit, rw.key)
				}
				if slices.Contains(sb.Release(rng).Items, "x") {
					distinct++
				}
			}
			for _, c := range []struct {
				name string
				hits int
			}{{"GROUP BY", hits}, {"DISTINCT", distinct}} {
				mean := float64(trials) * p
				sd := math.Sqrt(float64(trials) * p * (1 - p))
				msg := fmt.Sprintf("%s %s, %d+%d users (weight %.2f, ρ %.2f): released %d of %d, expected %.1f", m, c.name, n, n, w, cal.Rho, c.hits, trials, mean)
				if math.Abs(float64(c.hits)-mean) > 4.5*sd+0.5 {
					t.Error(msg)
				} else {
					t.Log(msg)
				}
			}
		}
	}
}
