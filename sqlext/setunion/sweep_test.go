package setunion

import (
	"math"
	"math/rand/v2"

	"fmt"
	"github.com/dpsql/dpsql/sqlext/noise"
	"os"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// corpusNames are the four shared corpora of issue 16's table.
var corpusNames = []string{"git_rails", "newsgroups20", "spamassassin_ham", "git_python_ecosystem"}

// issueDelta is δ = e⁻¹⁰ of the issue's measurements.
const issueDelta = 4.5399929762484854e-05

// groupedCorpus tokenises a corpus into one grouped builder whose lists are
// reused (read-only) by every configuration of a sweep.
func groupedCorpus(tb testing.TB, name string) *Builder {
	p := loadTokens(tb, name+".tsv.gz")
	b, err := NewBuilder(Defaults())
	if err != nil {
		tb.Fatal(err)
	}
	for i := range p.users {
		b.Add(p.users[i], p.items[i])
	}
	b.Group()
	return b
}

// withOptions returns a builder over the same grouped lists that releases
// with o. Release does not modify the lists, so copies may run one after
// another on the same data.
func (b *Builder) withOptions(tb testing.TB, o Options) *Builder {
	cal, err := Calibrate(o)
	if err != nil {
		tb.Fatal(err)
	}
	c := *b
	c.opts, c.cal = o, cal
	return &c
}

// meanRelease returns the mean number of released items and the mean missing
// mass over seeds 1..n.
func meanRelease(tb testing.TB, b *Builder, o Options, n int) (float64, float64) {
	var count, miss float64
	for s := 1; s <= n; s++ {
		res := b.withOptions(tb, o).Release(securerand.NewSeeded(uint64(s)))
		count += float64(len(res.Items))
		miss += res.Missing.Pairs
	}
	return count / float64(n), miss / float64(n)
}

// TestSweepDefaults is the experiment behind the default options (issue 16):
// it runs a grid of configurations on the four corpora at ε = 3, δ = e⁻¹⁰,
// three seeds each, and prints released keys and missing mass. It is slow and
// runs only when DPSQL_SWEEP is set:
//
//	DPSQL_SWEEP=1 go test -p 1 -run TestSweepDefaults -v -timeout 2h ./sqlext/setunion/
func TestSweepDefaults(t *testing.T) {
	if os.Getenv("DPSQL_SWEEP") == "" {
		t.Skip("set DPSQL_SWEEP=1 to run the defaults sweep (minutes of CPU per corpus)")
	}
	only := os.Getenv("DPSQL_SWEEP_CORPUS")
	for _, name := range corpusNames {
		if only != "" && !strings.Contains(only, name) {
			continue
		}
		b := groupedCorpus(t, name)
		for _, o := range sweepConfigs() {
			c, m := meanRelease(t, b, o, 3)
			fmt.Printf("%-22s %-40s %8.1f %.4f\n", name, describe(o), c, m)
		}
	}
}

func describe(o Options) string {
	s := fmt.Sprintf("%s d0=%d", o.Mechanism, o.MaxItems)
	if o.Mechanism == DPSIPS {
		s += fmt.Sprintf(" R=%d", o.Rounds)
	}
	return s
}

func sweepConfigs() []Options {
	var out []Options
	add := func(m Mechanism, d0, rounds int) {
		o := Defaults()
		o.Mechanism, o.Epsilon, o.Delta, o.MaxItems, o.Rounds = m, 3, issueDelta, d0, rounds
		out = append(out, o)
	}
	for _, d0 := range []int{100, 300, 1000, 3000, 20000} {
		add(WeightedGaussian, d0, 1)
		add(PolicyGaussianL2, d0, 1)
		for _, r := range []int{2, 3, 4, 6} {
			add(DPSIPS, d0, r)
		}
	}
	return out
}

// sweepCase is one configuration of the extended sweep: a name and a
// calibration built directly (dp_sips variants not reachable from Options).
type sweepCase struct {
	name string
	cal  Calibration
}

// sipsCal calibrates a dp_sips release whose Gaussian part gets the share
// gShare of δ (σ* at (ε, gShare·δ)) and the thresholds the rest.
func sipsCal(tb testing.TB, eps, delta, gShare float64, plan []RoundPlan) Calibration {
	sigma, err := noise.GaussianSigma(eps, gShare*delta, 1)
	if err != nil {
		tb.Fatal(err)
	}
	rounds := planRounds(sigma, (1-gShare)*delta, plan)
	last := rounds[len(rounds)-1]
	return Calibration{Mechanism: DPSIPS, Epsilon: eps, Delta: delta, MaxItems: last.MaxItems,
		Noise: Gaussian, Scale: sigma, Rho: last.Rho, Rounds: rounds}
}

func (b *Builder) withCalibration(cal Calibration) *Builder {
	c := *b
	c.opts = Options{Mechanism: cal.Mechanism, Epsilon: cal.Epsilon, Delta: cal.Delta, MaxItems: cal.MaxItems, Rounds: max(len(cal.Rounds), 1)}
	if cal.Auto != nil {
		c.opts.MaxItems, c.opts.Rounds = AutoMaxItems, DefaultRounds
	}
	c.cal = cal
	return &c
}

// TestSweepRounds explores dp_sips variants: the fraction ratio, the δ split
// between the Gaussian part and the thresholds, per-round Δ0 and a final
// policy round.
//
//	DPSQL_SWEEP=1 go test -p 1 -run TestSweepRounds -v -timeout 2h ./sqlext/setunion/
func TestSweepRounds(t *testing.T) {
	if os.Getenv("DPSQL_SWEEP") == "" {
		t.Skip("set DPSQL_SWEEP=1 to run the rounds sweep")
	}
	var cases []sweepCase
	geo := func(ratio float64, d0s []int, last Mechanism) []RoundPlan {
		plan := make([]RoundPlan, len(d0s))
		for r, d0 := range d0s {
			plan[r] = RoundPlan{Weight: math.Pow(ratio, float64(len(d0s)-1-r)), MaxItems: d0, Rule: WeightedGaussian}
		}
		if last != "" {
			plan[len(plan)-1].Rule, plan[len(plan)-1].Alpha = last, 3
		}
		return plan
	}
	add := func(name string, g float64, plan []RoundPlan) {
		cases = append(cases, sweepCase{name, sipsCal(t, 3, issueDelta, g, plan)})
	}
	if os.Getenv("DPSQL_SWEEP_MODE") == "fine" {
		for _, g := range []float64{0.3, 0.5, 0.7} {
			for _, ratio := range []float64{0.05, 0.1, 0.15, 0.2} {
				for _, d0 := range []int{500, 1000, 2000} {
					for _, r := range []int{3, 4, 5} {
						d0s := make([]int, r)
						for i := range d0s {
							d0s[i] = d0
						}
						add(fmt.Sprintf("g=%.2f ratio=%.2f d0=%d R=%d", g, ratio, d0, r), g, geo(ratio, d0s, ""))
					}
				}
			}
		}
	}
	for _, g := range []float64{0.5, 0.8, 0.95} {
		if os.Getenv("DPSQL_SWEEP_MODE") == "fine" {
			break
		}
		for _, ratio := range []float64{0.2, 0.3, 0.5, 1} {
			for _, d0 := range []int{300, 1000} {
				for _, r := range []int{2, 3, 4} {
					d0s := make([]int, r)
					for i := range d0s {
						d0s[i] = d0
					}
					add(fmt.Sprintf("g=%.2f ratio=%.1f d0=%d R=%d", g, ratio, d0, r), g, geo(ratio, d0s, ""))
				}
			}
		}
		for _, ratio := range []float64{0.3, 0.5} {
			add(fmt.Sprintf("g=%.2f ratio=%.1f d0=300,1000,1000", g, ratio), g, geo(ratio, []int{300, 1000, 1000}, ""))
			add(fmt.Sprintf("g=%.2f ratio=%.1f d0=1000,300,300", g, ratio), g, geo(ratio, []int{1000, 300, 300}, ""))
			add(fmt.Sprintf("g=%.2f ratio=%.1f d0=300x3 +policy", g, ratio), g, geo(ratio, []int{300, 300, 300}, PolicyGaussianL2))
			add(fmt.Sprintf("g=%.2f ratio=%.1f d0=1000x3 +policy", g, ratio), g, geo(ratio, []int{1000, 1000, 1000}, PolicyGaussianL2))
			add(fmt.Sprintf("g=%.2f ratio=%.1f d0=1000x2 +policy", g, ratio), g, geo(ratio, []int{1000, 1000}, PolicyGaussianL2))
		}
	}
	only := os.Getenv("DPSQL_SWEEP_CORPUS")
	for _, name := range corpusNames {
		if only != "" && !strings.Contains(only, name) {
			continue
		}
		b := groupedCorpus(t, name)
		for _, c := range cases {
			var count, miss float64
			for s := 1; s <= 3; s++ {
				res := b.withCalibration(c.cal).Release(securerand.NewSeeded(uint64(s)))
				count += float64(len(res.Items))
				miss += res.Missing.Pairs
			}
			fmt.Printf("%-22s %-44s %8.1f %.4f\n", name, c.name, count/3, miss/3)
		}
	}
}

// TestSweepAuto compares dp_sips with Δ0 chosen privately (a share fq of the
// Gaussian budget, target truncated share f) against fixed Δ0.
//
//	DPSQL_SWEEP=1 go test -p 1 -run TestSweepAuto -v ./sqlext/setunion/
func TestSweepAuto(t *testing.T) {
	if os.Getenv("DPSQL_SWEEP") == "" {
		t.Skip("set DPSQL_SWEEP=1 to run the private Δ0 sweep")
	}
	const eps, g = 3.0, 0.5
	sigma, _ := noise.GaussianSigma(eps, g*issueDelta, 1)
	only := os.Getenv("DPSQL_SWEEP_CORPUS")
	for _, name := range corpusNames {
		if only != "" && !strings.Contains(only, name) {
			continue
		}
		b := groupedCorpus(t, name)
		sizes := b.userSizes()
		for _, ratio := range []float64{0.1, 0.2} {
			for _, rounds := range []int{3, 4} {
				for _, fq := range []float64{0.02, 0.05, 0.1} {
					for _, f := range []float64{0.003, 0.01, 0.03} {
						sigmaT := sigma * math.Sqrt(MaxItemsTests/fq)
						var count, miss, d0s float64
						for s := 1; s <= 3; s++ {
							rng := securerand.NewSeeded(uint64(s))
							d0 := privateMaxItems(rng, sizes, f, sigmaT)
							plan := make([]RoundPlan, rounds)
							for r := range plan {
								plan[r] = RoundPlan{Weight: math.Pow(ratio, float64(rounds-1-r)), MaxItems: d0, Rule: WeightedGaussian}
							}
							rs := planRounds(sigma/math.Sqrt(1-fq), (1-g)*issueDelta, plan)
							cal := Calibration{Mechanism: DPSIPS, Epsilon: eps, Delta: issueDelta, MaxItems: d0, Noise: Gaussian, Scale: sigma, Rho: rs[len(rs)-1].Rho, Rounds: rs}
							res := b.withCalibration(cal).Release(rng)
							count += float64(len(res.Items))
							miss += res.Missing.Pairs
							d0s += float64(d0)
						}
						fmt.Printf("%-22s %-44s %8.1f %.4f\n", name, fmt.Sprintf("auto ratio=%.2f R=%d fq=%.2f f=%.3f d0~%.0f", ratio, rounds, fq, f, d0s/3), count/3, miss/3)
					}
				}
			}
		}
	}
}

// adaptiveCal is the candidate adaptive default: a share fq of the Gaussian
// budget chooses Δ0 privately (target truncated share f, capped at maxD0);
// a small Δ0 (≤ small) releases in one weighted-Gaussian round, a larger one
// in R dp_sips rounds with ratio 0.2.
func adaptiveCal(rng *rand.Rand, sizes []int, eps, delta, fq, f float64, maxD0, small, rounds int) Calibration {
	sigma, _ := noise.GaussianSigma(eps, delta/2, 1)
	sigmaT := sigma * math.Sqrt(MaxItemsTests/fq)
	d0 := min(privateMaxItems(rng, sizes, f, sigmaT), maxD0)
	if d0 <= small {
		rounds = 1
	}
	plan := make([]RoundPlan, rounds)
	for r := range plan {
		plan[r] = RoundPlan{Weight: math.Pow(0.2, float64(rounds-1-r)), MaxItems: d0, Rule: WeightedGaussian}
	}
	rs := planRounds(sigma/math.Sqrt(1-fq), delta/2, plan)
	return Calibration{Mechanism: DPSIPS, Epsilon: eps, Delta: delta, MaxItems: d0, Noise: Gaussian, Scale: sigma, Rho: rs[len(rs)-1].Rho, Rounds: rs}
}

// syntheticBuilder: users holding 1..maxPer distinct items drawn from a Zipf
// law over nItems items, the shape of a SQL column with few values per user.
func syntheticBuilder(tb testing.TB, users, maxPer, nItems int, seed uint64) *Builder {
	r := securerand.NewSeeded(seed)
	z := rand.NewZipf(r, 1.1, 1, uint64(nItems-1))
	b, _ := NewBuilder(Defaults())
	for u := 0; u < users; u++ {
		k := 1 + r.IntN(maxPer)
		for range k {
			b.Add(fmt.Sprintf("u%d", u), fmt.Sprintf("i%d", z.Uint64()))
		}
	}
	b.Group()
	return b
}

// TestSweepAdaptive compares today's default, fixed dp_sips and the adaptive
// candidate on the corpora (ε = 3, δ = e⁻¹⁰) and on synthetic few-items data
// (ε = 1, δ = 1e-6).
func TestSweepAdaptive(t *testing.T) {
	if os.Getenv("DPSQL_SWEEP") == "" {
		t.Skip("set DPSQL_SWEEP=1 to run the adaptive sweep")
	}
	type data struct {
		name       string
		b          *Builder
		eps, delta float64
	}
	var ds []data
	for _, per := range []int{1, 3, 10} {
		ds = append(ds, data{fmt.Sprintf("synthetic_%d_per_user", per), syntheticBuilder(t, 20000, per, 50000, 5), 1, 1e-6})
	}
	if os.Getenv("DPSQL_SWEEP_SYNTH") == "" {
		for _, name := range corpusNames {
			ds = append(ds, data{name, groupedCorpus(t, name), 3, issueDelta})
		}
	}
	for _, d := range ds {
		sizes := d.b.userSizes()
		run := func(label string, mk func(rng *rand.Rand) Calibration) {
			var count, miss float64
			for s := 1; s <= 3; s++ {
				rng := securerand.NewSeeded(uint64(s))
				res := d.b.withCalibration(mk(rng)).Release(rng)
				count += float64(len(res.Items))
				miss += res.Missing.Pairs
			}
			fmt.Printf("%-22s %-44s %8.1f %.4f\n", d.name, label, count/3, miss/3)
		}
		fixed := func(m Mechanism, d0, rounds int) func(*rand.Rand) Calibration {
			return func(*rand.Rand) Calibration {
				o := Defaults()
				o.Mechanism, o.Epsilon, o.Delta, o.MaxItems, o.Rounds = m, d.eps, d.delta, d0, rounds
				cal, _ := Calibrate(o)
				if m == DPSIPS {
					plan := make([]RoundPlan, rounds)
					for r := range plan {
						plan[r] = RoundPlan{Weight: math.Pow(0.2, float64(rounds-1-r)), MaxItems: d0, Rule: WeightedGaussian}
					}
					cal.Rounds = planRounds(cal.Scale, d.delta/2, plan)
				}
				return cal
			}
		}
		run("production Defaults()", func(*rand.Rand) Calibration {
			o := Defaults()
			o.Epsilon, o.Delta = d.eps, d.delta
			cal, _ := Calibrate(o)
			return cal
		})
		run("policy_gaussian_l2 d0=100", fixed(PolicyGaussianL2, 100, 1))
		run("weighted_gaussian d0=100", fixed(WeightedGaussian, 100, 1))
		run("dp_sips d0=500 R=3 r=0.2", fixed(DPSIPS, 500, 3))
		run("dp_sips d0=1000 R=3 r=0.2", fixed(DPSIPS, 1000, 3))
		for _, small := range []int{0, 16} {
			for _, f := range []float64{0.01, 0.03} {
				run(fmt.Sprintf("adaptive fq=0.02 f=%.2f small=%d", f, small), func(rng *rand.Rand) Calibration {
					return adaptiveCal(rng, sizes, d.eps, d.delta, 0.02, f, 1000, small, 3)
				})
			}
		}
	}
}
