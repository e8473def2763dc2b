package integration

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/dpagg"
)

// TestRowBudgetObjectiveOracle models the private choice of the row
// budget's (Δ0_a, m) for COUNT(*) (docs/privacy.md §21, §28, §37) on the
// demo's 20 most frequent words, and scores each choice with the oracle
// error of the row budget at that (d, m) (continuous Gaussian noise at the
// default plan's σ per unit of ℓ2 sensitivity, 300 draws, median relative
// error over the words). It compares two models of the loss a user adds to
// the objective J(d) of Δ0_a:
//
//   - even (today): the user's rows the budget drops, n_u − min(Σ_k
//     min(rows_k, m), d·m), as if a key holding 1/K of the rows lost 1/K of
//     every dropped row;
//   - share: K times the rows dropped of a key holding 1/K of the user's own
//     rows (r_u = n_u/K, reached after the user's keys with more rows than
//     r_u; sqlext/dpagg's sharekey.go on branch count-sharekey),
//
// each with the per-user cap B·m_q (B = 4 is the default's; larger caps show
// what the cap hides), noiselessly over a joint grid, and then with noise
// as the release runs it: d by a report-noisy-min at m_q, then m by the
// binary search of §28's tests ("today's m"; or the share model's own test,
// whose per-user loss per unit of m is at most one row, so sensitivity 1
// and no clipping). docs/accuracy.md §5 ("Fourth look") reports the
// numbers. Run with DPSQL_ORACLE=1.
func TestRowBudgetObjectiveOracle(t *testing.T) {
	if os.Getenv("DPSQL_ORACLE") == "" {
		t.Skip("set DPSQL_ORACLE=1 for the row budget's objective oracle on the demo")
	}
	per := demoPer(t)
	objectiveOracle(t, "demo top 20", per, 20, []float64{8, 11})
}

// TestRowBudgetObjectiveOraclePython is TestRowBudgetObjectiveOracle on
// git_python_ecosystem's words, top 20 and top 100 (m_q 32 and 64, what the
// corpus's quantile choice gives). Run with DPSQL_ORACLE=1.
func TestRowBudgetObjectiveOraclePython(t *testing.T) {
	if os.Getenv("DPSQL_ORACLE") == "" {
		t.Skip("set DPSQL_ORACLE=1 for the row budget's objective oracle on git_python_ecosystem")
	}
	per := pythonPer(t)
	objectiveOracle(t, "git_python_ecosystem top 20", per, 20, []float64{32, 64})
	objectiveOracle(t, "git_python_ecosystem top 100", per, 100, []float64{32, 64})
}

// objUser is one user's rows per key, descending, with each key's index
// among the top keys (−1 if not), and its rows.
type objUser struct {
	c   []float64
	top []int
	n   float64
}

// objectiveK is K of the objectives (dpagg.TopGroupsKeys, dpagg.ErrorKeys).
const objectiveK = float64(dpagg.TopGroupsKeys)

// lossEven is today's per-user loss of J(d) under a row budget, in rows.
func lossEven(u objUser, d, m float64) float64 {
	var kept float64
	for _, c := range u.c {
		kept += min(c, m)
	}
	return u.n - min(kept, d*m)
}

// shareKept is the rows of a key holding 1/K of the user's rows (r = n/K)
// that a budget of d·m rows keeps: min(r, m, (d·m − P)⁺), P the budget the
// user's keys with more than r rows take first.
func shareKept(u objUser, d, m float64) float64 {
	r := u.n / objectiveK
	var ahead float64
	for _, c := range u.c {
		if c <= r {
			break
		}
		ahead += min(c, m)
	}
	return min(r, m, max(0, d*m-ahead))
}

// lossShare is the share model's per-user loss of J(d), in rows.
func lossShare(u objUser, d, m float64) float64 {
	return objectiveK * (u.n/objectiveK - shareKept(u, d, m))
}

func objectiveOracle(t *testing.T, name string, per map[string]map[string]int, topN int, mqs []float64) {
	truthAll := map[string]float64{}
	var nAll float64
	for _, m := range per {
		for w, c := range m {
			truthAll[w] += float64(c)
			nAll += float64(c)
		}
	}
	top := make([]string, 0, len(truthAll))
	for w := range truthAll {
		top = append(top, w)
	}
	sort.Slice(top, func(a, b int) bool { return truthAll[top[a]] > truthAll[top[b]] })
	top = top[:topN]
	idx := map[string]int{}
	truth := make([]float64, topN)
	for i, w := range top {
		idx[w], truth[i] = i, truthAll[w]
	}
	var us []objUser
	for _, m := range per {
		u := objUser{}
		for w := range m {
			u.c = append(u.c, float64(m[w]))
			u.n += float64(m[w])
			if i, ok := idx[w]; ok {
				u.top = append(u.top, i)
			} else {
				u.top = append(u.top, -1)
			}
		}
		order := make([]int, len(u.c))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return u.c[order[a]] > u.c[order[b]] })
		c, tp := slices.Clone(u.c), slices.Clone(u.top)
		for i, o := range order {
			u.c[i], u.top[i] = c[o], tp[o]
		}
		us = append(us, u)
	}
	o := dpagg.Defaults()
	o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
	o.Aggregates = []dpagg.Aggregate{{Kind: dpagg.CountRows}}
	plan, err := dpagg.Calibrate(o)
	if err != nil {
		t.Fatal(err)
	}
	shares := []float64{dpagg.BoundsShare}
	for _, f := range strings.Split(os.Getenv("DPSQL_ORACLE_SHARES"), ",") {
		if v, err := strconv.ParseFloat(f, 64); err == nil && v != dpagg.BoundsShare {
			shares = append(shares, v)
		}
	}
	for _, share := range shares {
		// The choice's share s of the aggregates' ρ: the tests' σ_t ∝ 1/√s,
		// the statistics' κ ∝ 1/√(1 − s).
		kappa := plan.UnitSigma * math.Sqrt((1-dpagg.BoundsShare)/(1-share))
		sigT := plan.Bounds.TestSigma * math.Sqrt(dpagg.BoundsShare/share)
		t.Logf("%s: the choice's share of ρ_a %.2f", name, share)
		objectiveAt(t, name, us, truth, nAll, topN, mqs, kappa, sigT, share == dpagg.BoundsShare)
	}
}

// objectiveAt runs objectiveOracle's models at the statistics' σ per unit
// of ℓ2 sensitivity kappa and the tests' σ_t sigT; noiseless adds the
// noiseless joint argmins.
func objectiveAt(t *testing.T, name string, us []objUser, truth []float64, nAll float64, topN int, mqs []float64, kappa, sigT float64, noiseless bool) {
	t.Logf("%s: top shares of the rows: first %.4f, median %.4f, last %.4f; unit σ %.3f, σ_t %.2f", name, truth[0]/nAll, truth[topN/2]/nAll, truth[topN-1]/nAll, kappa, sigT)
	r := rand.New(rand.NewPCG(1, 2))
	med := func(s []float64) float64 { n := len(s); return (s[(n-1)/2] + s[n/2]) / 2 }
	cache := map[[2]float64]float64{}
	// orc is the oracle error of the row budget at (d, m).
	orc := func(d, m float64) float64 {
		if v, ok := cache[[2]float64{d, m}]; ok {
			return v
		}
		out := make([]float64, topN)
		for _, u := range us {
			left := d * m
			for j := 0; j < len(u.c) && left > 0; j++ {
				v := min(u.c[j], m, left)
				left -= v
				if u.top[j] >= 0 {
					out[u.top[j]] += v
				}
			}
		}
		sigma := math.Sqrt(d) * m * kappa
		rel := make([]float64, topN)
		var e float64
		const draws = 300
		for range draws {
			for i := range rel {
				rel[i] = math.Abs(out[i]+sigma*r.NormFloat64()-truth[i]) / truth[i]
			}
			slices.Sort(rel)
			e += med(rel) / draws
		}
		cache[[2]float64{d, m}] = e
		return e
	}
	gridM := []float64{8, 11, 16, 23, 32, 45, 64, 91, 128, 181, 256}
	for _, d := range []float64{4, 8, 16, 32, 64, 128} {
		line := ""
		for _, m := range gridM {
			line += fmt.Sprintf(" %.3f", orc(d, m))
		}
		t.Logf("%s: oracle error of the row budget, d = %v, m ∈ %v:%s", name, d, gridM, line)
	}
	ds := []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
	noiseTerm := func(d float64) float64 { return objectiveK * math.Sqrt(2/math.Pi) * kappa * math.Sqrt(d) }
	type model struct {
		name string
		loss func(objUser, float64, float64) float64
	}
	models := []model{{"even (today)", lossEven}, {"share", lossShare}}
	for _, mq := range mqs {
		var ms []float64 // m's candidates, descending: m_q … 4·m_q
		for _, g := range gridM {
			if g >= mq && g <= 4*mq {
				ms = append(ms, g)
			}
		}
		slices.Reverse(ms)
		// Noiseless, jointly over (d, m) and at m_q alone, per cap.
		for _, md := range models {
			if !noiseless {
				break
			}
			for _, b := range []float64{4, 16, 64, math.Inf(1)} {
				best, bd, bm := math.Inf(1), 0.0, 0.0
				seq, sd := math.Inf(1), 0.0
				for _, m := range ms {
					for _, d := range ds {
						var j float64
						for _, u := range us {
							j += min(md.loss(u, d, m), b*mq)
						}
						j += noiseTerm(d) * m
						if j < best {
							best, bd, bm = j, d, m
						}
						if m == mq && j < seq {
							seq, sd = j, d
						}
					}
				}
				t.Logf("%s, m_q %v, %s loss, cap %v·m_q, no noise: joint argmin (%v, %v) oracle %.3f; d at m_q %v", name, mq, md.name, b, bd, bm, orc(bd, bm), sd)
			}
		}
		// With noise, as the release runs: d at m_q, then m by tests.
		type mTest struct {
			name string
			x    func(u objUser, d, hi, lo float64) float64
			capC func(d float64) float64
			tau  func(d float64) float64
		}
		today := mTest{"today's m test", func(u objUser, d, hi, lo float64) float64 {
			return (lossEven(u, d, lo) - lossEven(u, d, hi)) / (hi - lo)
		}, func(d float64) float64 { return 2 * math.Ceil(math.Sqrt(d)) }, noiseTerm}
		shareTest := mTest{"the share model's m test", func(u objUser, d, hi, lo float64) float64 {
			return (shareKept(u, d, hi) - shareKept(u, d, lo)) / (hi - lo)
		}, func(float64) float64 { return 1 }, func(d float64) float64 { return noiseTerm(d) / objectiveK }}
		for _, rule := range []struct {
			md model
			mt mTest
		}{{models[0], today}, {models[1], today}, {models[1], shareTest}} {
			js := make([]float64, len(ds))
			for i, d := range ds {
				for _, u := range us {
					js[i] += min(rule.md.loss(u, d, mq)/mq, dpagg.TopGroupsLossCap)
				}
				js[i] += noiseTerm(d)
			}
			xsAt := map[float64][]float64{}
			const draws = 400
			var mean float64
			hist := map[[2]float64]int{}
			for range draws {
				bi, bj := 0, math.Inf(1)
				for i := range ds {
					if j := js[i] + dpagg.TopGroupsLossCap*sigT*math.Sqrt(float64(len(ds))/dpagg.TopGroupsSlots)*r.NormFloat64(); j < bj {
						bi, bj = i, j
					}
				}
				d := ds[bi]
				xs, ok := xsAt[d]
				if !ok {
					xs = make([]float64, len(ms)-1)
					for i := range xs {
						for _, u := range us {
							xs[i] += min(max(rule.mt.x(u, d, ms[i], ms[i+1]), 0), rule.mt.capC(d))
						}
					}
					xsAt[d] = xs
				}
				lo, hi := 0, len(ms)-1
				for lo < hi {
					mid := (lo + hi) / 2
					if (xs[mid]-rule.mt.tau(d))/rule.mt.capC(d)+sigT*r.NormFloat64() <= 0 {
						lo = mid + 1
					} else {
						hi = mid
					}
				}
				hist[[2]float64{d, ms[lo]}]++
				mean += orc(d, ms[lo]) / draws
			}
			t.Logf("%s, m_q %v, %s loss for d, %s, with noise: mean oracle error %.3f; choices (d, m): %v", name, mq, rule.md.name, rule.mt.name, mean, hist)
		}
	}
}
